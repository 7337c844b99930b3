/* What the host MPI benchmarks share: error checking, the statistics
 * they print, a seeded generator, and a description of the library that
 * ran them (mpix or the native MPI, looked up at run time so one binary
 * measures both). Include after <mpi.h>, with _GNU_SOURCE defined. */
#ifndef MPIX_BENCH_COMMON_H
#define MPIX_BENCH_COMMON_H

#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MPICH defines MPI_STATUSES_IGNORE as (MPI_Status *)1; GCC >= 11 then
 * warns about "accessing 20 bytes in a region of size 0". */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#define CHECK(call)                                                          \
    do {                                                                     \
        int rc_ = (call);                                                    \
        if (rc_ != MPI_SUCCESS) {                                            \
            char s_[MPI_MAX_ERROR_STRING];                                   \
            int l_ = 0;                                                      \
            MPI_Error_string(rc_, s_, &l_);                                  \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__,    \
                    #call, s_);                                              \
            MPI_Abort(MPI_COMM_WORLD, 1);                                    \
        }                                                                    \
    } while (0)

/* MPIX functions, looked up at run time. */
typedef int (*comm_fn)(MPI_Comm);
typedef int (*comm_flag_fn)(MPI_Comm, int *);
typedef int (*comm_dup_fn)(MPI_Comm, MPI_Comm *);
typedef int (*version_fn)(char *, int *);

static inline void mpix_describe(MPI_Comm comm, char *out, size_t len)
{
    version_fn ver = (version_fn)dlsym(RTLD_DEFAULT, "MPIX_Get_library_version");
    comm_flag_fn handled = (comm_flag_fn)dlsym(RTLD_DEFAULT, "MPIX_Comm_is_handled");
    if (!ver) {
        snprintf(out, len, "mpix: not loaded (native MPI)");
        return;
    }
    char v[1024] = "";
    int vl = 0;
    ver(v, &vl);
    char *nl = strchr(v, '\n');
    if (nl)
        *nl = '\0';
    const char *h = "unknown";
    int flag = 0;
    if (handled && handled(comm, &flag) == MPI_SUCCESS)
        h = flag ? "yes" : "no (passes through)";
    snprintf(out, len, "mpix: %.200s; benchmark communicator handled by mpix: %s", v, h);
}

static inline const char *default_label(void)
{
    return dlsym(RTLD_DEFAULT, "MPIX_Get_library_version") ? "mpix" : "native";
}

static inline uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The benchmark communicator: plain MPI_Comm_dup (the control), or a
 * duplicate without wildcards, by MPIX_Comm_dup_nowildcard when asked and
 * present, else by MPI-4's info assertions. *how says which. */
static inline MPI_Comm bench_comm(int plain, int use_mpix_dup, const char **how)
{
    MPI_Comm comm;
    comm_dup_fn mpix_dup = (comm_dup_fn)dlsym(RTLD_DEFAULT, "MPIX_Comm_dup_nowildcard");
    if (plain) {
        CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
        *how = "MPI_Comm_dup (no assertions: control)";
    } else if (use_mpix_dup && mpix_dup) {
        CHECK(mpix_dup(MPI_COMM_WORLD, &comm));
        *how = "MPIX_Comm_dup_nowildcard";
    } else {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpi_assert_no_any_source", "true");
        MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
        CHECK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm));
        MPI_Info_free(&info);
        *how = "MPI_Comm_dup_with_info(mpi_assert_no_any_source, mpi_assert_no_any_tag)";
    }
    return comm;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v. */
static inline double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif /* MPIX_BENCH_COMMON_H */
