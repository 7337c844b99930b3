/*
 * bench_pingpong: point-to-point latency and bandwidth on a no-wildcard
 * communicator (MPI_Comm_dup_with_info with mpi_assert_no_any_source=true,
 * mpi_assert_no_any_tag=true), 2 ranks.
 *
 * For each message size (powers of two from -m to -M, default 1 B .. 16 MiB):
 *   latency:   ping-pong with MPI_Send/MPI_Recv, `iters` round trips after
 *              `iters/10` warm-up round trips; half round-trip time in us,
 *              median over `-r` repeats (and pingpong MB/s = size / latency);
 *   bandwidth: streaming, osu_bw style: rank 0 MPI_Isends a window of W
 *              messages, rank 1 has W MPI_Irecvs (distinct buffers) posted,
 *              then returns a 0-byte ack; W = 64 for small messages, fewer
 *              for large ones (W * size <= 64 MiB, W >= 2); MB/s (10^6 B/s),
 *              median over the repeats;
 *   bidirectional: osu_bibw style, both ranks post W receives and W sends
 *              at once and wait for all; MB/s counts both directions.
 * The warm-up of each size checks the received contents; the last line
 * reports it (exit status 4 on errors).
 * Iteration counts shrink with the size so that a repeat moves about -b
 * bytes (default 64 MiB) each way; see the CSV for the exact counts.
 *
 * The binary is a plain MPI program; run it natively and with
 * LD_PRELOAD=libmpix.so (MPIX functions are looked up with dlsym).
 *
 * Usage: mpiexec -n 2 ./bench_pingpong [options]
 *   -m MIN   smallest size in bytes (default 1)
 *   -M MAX   largest size in bytes (default 16777216)
 *   -r R     repeats per size (default 5, median reported)
 *   -i N     most round trips per repeat (default 10000; small sizes use it)
 *   -b B     bytes per repeat and direction that set the iteration count of
 *            larger sizes (default 67108864)
 *   -w       control: plain MPI_Comm_dup, no assertions
 *   -x       use MPIX_Comm_dup_nowildcard when the running library has it
 *   -c       make a CUDA context current first (the process is a CUDA
 *            application, as a GPU code sending host messages is): libcuda
 *            loaded with dlopen, cuInit, GPU (rank % count)'s primary
 *            context current; the buffers stay host memory
 *   -s       after each size, where each rank's streaming time went, in ns
 *            per message: posting the window, its MPI_Waitall, the
 *            window's acknowledgement (the rank that waits less sets the
 *            rate)
 *   -o FILE  write CSV to FILE
 *   -l LABEL label in the CSV (default: native or mpix)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"

/* -c: what a CUDA application's host messages see (the memory-type query
 * of a library that checks for device buffers costs more with a context
 * current). The driver API by dlopen, so the benchmark needs no CUDA. */
static int cuda_context_current(int rank)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        return -1;
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
    int (*count)(int *) = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
    int (*get)(int *, int) = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
    int (*retain)(void **, int) = (int (*)(void **, int))dlsym(h, "cuDevicePrimaryCtxRetain");
    int (*set)(void *) = (int (*)(void *))dlsym(h, "cuCtxSetCurrent");
    int n = 0, dev = 0;
    void *ctx = NULL;
    if (!init || !count || !get || !retain || !set || init(0) || count(&n) || n < 1 ||
        get(&dev, rank % n) || retain(&ctx, dev) || set(ctx))
        return -1;
    return rank % n;
}

static void *xalloc(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, n ? n : 1))
        MPI_Abort(MPI_COMM_WORLD, 2);
    memset(p, 1, n); /* touch the pages outside the timed loops */
    return p;
}

enum { TAG_PING = 1, TAG_PONG = 2, TAG_DATA = 3, TAG_ACK = 4 };

/* round trips; returns seconds on rank 0 */
static double pingpong(MPI_Comm comm, int rank, char *sbuf, char *rbuf, int size, long iters)
{
    CHECK(MPI_Barrier(comm));
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        if (rank == 0) {
            CHECK(MPI_Send(sbuf, size, MPI_BYTE, 1, TAG_PING, comm));
            CHECK(MPI_Recv(rbuf, size, MPI_BYTE, 1, TAG_PONG, comm, MPI_STATUS_IGNORE));
        } else {
            CHECK(MPI_Recv(rbuf, size, MPI_BYTE, 0, TAG_PING, comm, MPI_STATUS_IGNORE));
            CHECK(MPI_Send(sbuf, size, MPI_BYTE, 0, TAG_PONG, comm));
        }
    }
    return MPI_Wtime() - t0;
}

/* windows of w messages, each acknowledged; returns seconds on rank 0 */
/* -s: where each rank's streaming time goes, summed over the timed windows:
 * posting the window (MPI_Isend or MPI_Irecv calls), its MPI_Waitall, and
 * the window's acknowledgement. A rank whose Waitall is short keeps up;
 * the other one sets the rate. */
static int split_times;
static int with_cuda;
static double split_post, split_wait, split_ack;
static long split_msgs;

static double stream(MPI_Comm comm, int rank, char *sbuf, char *rbuf, int size, int w,
                     long loops, MPI_Request *reqs)
{
    CHECK(MPI_Barrier(comm));
    double t0 = MPI_Wtime();
    for (long l = 0; l < loops; l++) {
        double ta = split_times ? MPI_Wtime() : 0, tb = 0, tc = 0;
        if (rank == 0) {
            for (int k = 0; k < w; k++)
                CHECK(MPI_Isend(sbuf, size, MPI_BYTE, 1, TAG_DATA, comm, &reqs[k]));
            if (split_times) tb = MPI_Wtime();
            CHECK(MPI_Waitall(w, reqs, MPI_STATUSES_IGNORE));
            if (split_times) tc = MPI_Wtime();
            CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_ACK, comm, MPI_STATUS_IGNORE));
        } else {
            for (int k = 0; k < w; k++)
                CHECK(MPI_Irecv(rbuf + (size_t)k * size, size, MPI_BYTE, 0, TAG_DATA, comm,
                                &reqs[k]));
            if (split_times) tb = MPI_Wtime();
            CHECK(MPI_Waitall(w, reqs, MPI_STATUSES_IGNORE));
            if (split_times) tc = MPI_Wtime();
            CHECK(MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, comm));
        }
        if (split_times) {
            const double td = MPI_Wtime();
            split_post += tb - ta;
            split_wait += tc - tb;
            split_ack += td - tc;
            split_msgs += w;
        }
    }
    return MPI_Wtime() - t0;
}

/* both ranks: w receives and w sends at once; returns seconds on rank 0 */
static double bistream(MPI_Comm comm, int rank, char *sbuf, char *rbuf, int size, int w, long loops,
                       MPI_Request *reqs)
{
    const int peer = 1 - rank;
    CHECK(MPI_Barrier(comm));
    double t0 = MPI_Wtime();
    for (long l = 0; l < loops; l++) {
        for (int k = 0; k < w; k++)
            CHECK(MPI_Irecv(rbuf + (size_t)k * size, size, MPI_BYTE, peer, TAG_DATA, comm, &reqs[k]));
        for (int k = 0; k < w; k++)
            CHECK(MPI_Isend(sbuf, size, MPI_BYTE, peer, TAG_DATA, comm, &reqs[w + k]));
        CHECK(MPI_Waitall(2 * w, reqs, MPI_STATUSES_IGNORE));
    }
    return MPI_Wtime() - t0;
}

static void fill(char *buf, long n, long size)
{
    for (long i = 0; i < n; i++)
        buf[i] = (char)((i * 7 + size) & 0xff);
}

/* compare k received messages of `size` bytes with the pattern */
static long check(const char *buf, int k, long size)
{
    long bad = 0;
    for (int j = 0; j < k; j++)
        for (long i = 0; i < size; i++)
            if (buf[(size_t)j * size + i] != (char)((i * 7 + size) & 0xff)) {
                bad++;
                break;
            }
    return bad;
}

static long clampl(long v, long lo, long hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

int main(int argc, char **argv)
{
    long smin = 1, smax = 16L << 20, maxit = 10000, budget = 64L << 20;
    int reps = 5, plain = 0, use_mpix_dup = 0;
    const char *csv = NULL, *label = NULL;
    const long WBYTES = 64L << 20; /* receive window bytes */
    const int WMAX = 64;

    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    int opt, bad = 0;
    while ((opt = getopt(argc, argv, "m:M:r:i:b:wxcso:l:h")) != -1) {
        switch (opt) {
        case 'm': smin = atol(optarg); break;
        case 'M': smax = atol(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'i': maxit = atol(optarg); break;
        case 'b': budget = atol(optarg); break;
        case 'w': plain = 1; break;
        case 'x': use_mpix_dup = 1; break;
        case 's': split_times = 1; break;
        case 'c': with_cuda = 1; break;
        case 'o': csv = optarg; break;
        case 'l': label = optarg; break;
        default: bad = 1;
        }
    }
    if (bad || nranks != 2 || smin < 1 || smax < smin || smax > (1L << 30) || reps < 1 ||
        maxit < 1 || budget < 1) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: mpiexec -n 2 %s [-m MIN] [-M MAX] [-r R] [-i N] [-b B] [-w] [-x] [-c] [-s] "
                    "[-o CSV] [-l LABEL]\n",
                    argv[0]);
        MPI_Finalize();
        return 1;
    }
    if (!label)
        label = default_label();

    int gpu = -1;
    if (with_cuda && (gpu = cuda_context_current(rank)) < 0) {
        fprintf(stderr, "rank %d: -c: no CUDA context (libcuda.so.1 or a GPU missing)\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    const char *how;
    MPI_Comm comm = bench_comm(plain, use_mpix_dup, &how);
    char desc[512];
    mpix_describe(comm, desc, sizeof desc);

    size_t rbytes = 0;
    for (long s = smin; s <= smax; s *= 2) {
        size_t need = (size_t)s * (size_t)clampl(WBYTES / s, 2, WMAX);
        if (need > rbytes)
            rbytes = need;
    }
    char *sbuf = xalloc((size_t)smax);
    char *rbuf = xalloc(rbytes);
    MPI_Request reqs[2 * WMAX];
    double *lat = malloc(sizeof(double) * reps), *bw = malloc(sizeof(double) * reps);
    double *bibw = malloc(sizeof(double) * reps);

    long errors = 0; /* payload check of the warm-up round trips/windows */
    FILE *out = NULL;
    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int ll;
        MPI_Get_library_version(lib, &ll);
        char *nl = strchr(lib, '\n');
        if (nl)
            *nl = '\0';
        printf("# bench_pingpong: 2 ranks; latency = half round trip (MPI_Send/MPI_Recv), "
               "bandwidth = streaming window (MPI_Isend/MPI_Irecv); medians of %d repeats\n",
               reps);
        printf("# MPI: %s\n# %s\n# communicator: %s\n# MB/s = 10^6 bytes/s; MPI_Wtick = %g s\n",
               lib, desc, how, MPI_Wtick());
        if (with_cuda)
            printf("# a CUDA context current (GPU %d); buffers in host memory\n", gpu);
        printf("%10s  %8s  %12s  %12s  %4s  %12s  %12s\n", "bytes", "iters", "latency_us",
               "pingpong_MB/s", "win", "stream_MB/s", "bidir_MB/s");
        fflush(stdout);
        if (csv) {
            out = fopen(csv, "w");
            if (!out) {
                perror(csv);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            fprintf(out, "label,size_B,iters,lat_us_median,lat_us_min,lat_us_max,pp_MBps,"
                         "bw_window,bw_loops,bw_MBps_median,bw_MBps_max,bibw_MBps_median\n");
        }
    }

    for (long s = smin; s <= smax; s *= 2) {
        int size = (int)s;
        long iters = clampl(budget / s, 10, maxit);
        int w = (int)clampl(WBYTES / s, 2, WMAX);
        long loops = clampl(budget / (s * w), 5, maxit / w > 5 ? maxit / w : 5);

        fill(sbuf, s, s);
        memset(rbuf, 0, (size_t)s * w);
        pingpong(comm, rank, sbuf, rbuf, size, iters / 10 > 2 ? iters / 10 : 2); /* warm-up */
        errors += check(rbuf, 1, s);
        for (int r = 0; r < reps; r++)
            lat[r] = pingpong(comm, rank, sbuf, rbuf, size, iters) / (2.0 * iters) * 1e6;
        memset(rbuf, 0, (size_t)s * w);
        stream(comm, rank, sbuf, rbuf, size, w, 1, reqs); /* warm-up */
        if (rank == 1)
            errors += check(rbuf, w, s);
        split_post = split_wait = split_ack = 0;
        split_msgs = 0;
        for (int r = 0; r < reps; r++)
            bw[r] = (double)s * w * loops / stream(comm, rank, sbuf, rbuf, size, w, loops, reqs) /
                    1e6;
        if (split_times) {
            double mine[3] = {split_post, split_wait, split_ack}, theirs[3];
            const double per = split_msgs > 0 ? 1e9 / (double)split_msgs : 0;
            if (rank == 1)
                CHECK(MPI_Send(mine, 3, MPI_DOUBLE, 0, TAG_ACK, comm));
            else {
                CHECK(MPI_Recv(theirs, 3, MPI_DOUBLE, 1, TAG_ACK, comm, MPI_STATUS_IGNORE));
                printf("# stream split %ld B, ns per message: sender post %.1f wait %.1f ack %.1f | "
                       "receiver post %.1f wait %.1f ack %.1f\n",
                       s, mine[0] * per, mine[1] * per, mine[2] * per, theirs[0] * per,
                       theirs[1] * per, theirs[2] * per);
            }
        }
        memset(rbuf, 0, (size_t)s * w);
        bistream(comm, rank, sbuf, rbuf, size, w, 1, reqs); /* warm-up */
        errors += check(rbuf, w, s);
        for (int r = 0; r < reps; r++)
            bibw[r] = 2.0 * s * w * loops / bistream(comm, rank, sbuf, rbuf, size, w, loops, reqs) / 1e6;

        if (rank == 0) {
            double lmed = median(lat, reps), lmin = lat[0], lmax = lat[reps - 1];
            double bmed = median(bw, reps), bmax = bw[reps - 1], bimed = median(bibw, reps);
            double pp = (double)s / lmed; /* bytes/us = MB/s */
            printf("%10ld  %8ld  %12.3f  %12.1f  %4d  %12.1f  %12.1f\n", s, iters, lmed, pp, w, bmed, bimed);
            fflush(stdout);
            if (out)
                fprintf(out, "%s,%ld,%ld,%.6f,%.6f,%.6f,%.3f,%d,%ld,%.3f,%.3f,%.3f\n", label, s, iters,
                        lmed, lmin, lmax, pp, w, loops, bmed, bmax, bimed);
        }
    }
    long all_errors = 0;
    MPI_Allreduce(&errors, &all_errors, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all_errors)
            printf("# payload check: %ld messages received with wrong contents\n", all_errors);
        else
            printf("# payload check: ok\n");
    }
    if (out)
        fclose(out);

    free(lat);
    free(bw);
    free(bibw);
    free(sbuf);
    free(rbuf);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return all_errors ? 4 : 0;
}
