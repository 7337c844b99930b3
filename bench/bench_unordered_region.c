/*
 * bench_unordered_region: the unordered-region pattern of papers/000
 * ch. 7.2.3, Listing 7.1, on P ranks (4 in bench/run_p2p_benchmarks.sh).
 *
 * One cycle, on every rank of a no-wildcard communicator
 * (MPI_Comm_dup_with_info with mpi_assert_no_any_source=true and
 * mpi_assert_no_any_tag=true):
 *   [MPIX_Unordered_region_open(comm)]                      variant "region"
 *   for src in 0..P-1, src != me: for tag in 0..M-1: MPI_Irecv(src, tag)
 *   [MPIX_Unordered_region_close(comm)]                     variant "region"
 *   MPI_Barrier(comm)                 (all receives are posted; -B0: no barrier)
 *   for dest = me+1, me+2, ... (P-1 peers): for tag in send order: MPI_Isend
 *   MPI_Waitall(receives and sends)
 * Variant "ordered" is the same cycle without the region calls.  Each
 * (src, tag) is unique within a cycle, as in the listing.  M = messages per
 * source (-m .. -n, times 4).  Send order (-s): same (tags ascending, the
 * order the receives were posted in), reverse or random.
 *
 * Timed on every rank: the whole cycle, repeated ceil(T / ((P-1) M)) times
 * per sample (T = -t, default 4096 received messages per rank and sample);
 * the sample time is the maximum over ranks.  Reported: median over -r
 * samples of matches/s = P (P-1) M x cycles / time (all messages received in
 * the communicator per second).  Natively, or when the running mpix has no
 * MPIX_Unordered_region_open/close (or they fail on this communicator), the
 * region variant prints "n/a".
 *
 * The warm-up cycle of each point checks every payload (source and tag in
 * the message); the last line reports the result (exit status 4 on errors).
 *
 * Usage: mpiexec -n P ./bench_unordered_region [options]
 *   -n MAX   largest M (default 1024)       -m MIN  smallest M (default 1)
 *   -r R     samples (default 5)            -t T    messages per rank and sample
 *   -s ORDER same|reverse|random (default same)
 *   -V LIST  variants: ordered,region (default both)
 *   -b BYTES message size (default 8, at least 8)
 *   -B 0|1   barrier between posting and sending (default 1)
 *   -C       close the region after MPI_Waitall instead of after posting
 *   -y       yielding waits: MPI_Test + sched_yield() loops
 *            instead of MPI_Waitall/MPI_Barrier (for more ranks than cores:
 *            MPICH ch4 busy-polls and never yields the core)
 *   -w       control: plain MPI_Comm_dup, no assertions
 *   -x       use MPIX_Comm_dup_nowildcard when the running library has it
 *   -o FILE  CSV output               -l LABEL CSV label (default native|mpix)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

#include "bench_common.h"

enum { V_ORDERED, V_REGION, NV };
static const char *v_name[NV] = {"ordered", "region"};

static int yield_waits = 0;

static void wait_all(int n, MPI_Request *reqs)
{
    if (!yield_waits) {
        CHECK(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
        return;
    }
    /* one MPI_Test per poll (MPI_Testall would rescan all n requests) */
    for (int i = 0; i < n;) {
        int flag = 0;
        CHECK(MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE));
        if (flag)
            i++;
        else
            sched_yield();
    }
}

static void sync_barrier(MPI_Comm comm)
{
    if (!yield_waits) {
        CHECK(MPI_Barrier(comm));
        return;
    }
    MPI_Request r;
    CHECK(MPI_Ibarrier(comm, &r));
    wait_all(1, &r);
}

typedef struct {
    MPI_Comm comm;
    int rank, np, m, bytes, barrier, close_late, region;
    comm_fn open, close;
    const int *send_tags; /* m entries */
    char *rbuf, *sbuf;    /* (np-1) * m * bytes each */
    MPI_Request *reqs;    /* 2 * (np-1) * m */
} cycle_t;

static void run_cycle(const cycle_t *c)
{
    const int np = c->np, m = c->m, me = c->rank;
    int nr = 0;
    if (c->region)
        CHECK(c->open(c->comm));
    for (int src = 0; src < np; src++) {
        if (src == me)
            continue;
        for (int tag = 0; tag < m; tag++, nr++)
            CHECK(MPI_Irecv(c->rbuf + (size_t)nr * c->bytes, c->bytes, MPI_BYTE, src, tag,
                            c->comm, &c->reqs[nr]));
    }
    if (c->region && !c->close_late)
        CHECK(c->close(c->comm));
    if (c->barrier)
        sync_barrier(c->comm);
    int ns = 0;
    for (int d = 1; d < np; d++) {
        int dest = (me + d) % np;
        for (int j = 0; j < m; j++, ns++) {
            int tag = c->send_tags[j];
            char *p = c->sbuf + ((size_t)(d - 1) * m + tag) * c->bytes;
            CHECK(MPI_Isend(p, c->bytes, MPI_BYTE, dest, tag, c->comm, &c->reqs[nr + ns]));
        }
    }
    wait_all(nr + ns, c->reqs);
    if (c->region && c->close_late)
        CHECK(c->close(c->comm));
}

int main(int argc, char **argv)
{
    int mmax = 1024, mmin = 1, reps = 5, target = 4096, bytes = 8, barrier = 1, close_late = 0,
        plain = 0, use_mpix_dup = 0;
    int v_sel[NV] = {1, 1};
    const char *order = "same", *csv = NULL, *label = NULL;

    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    int opt, bad = 0;
    while ((opt = getopt(argc, argv, "n:m:r:t:s:V:b:B:Cywxo:l:h")) != -1) {
        switch (opt) {
        case 'n': mmax = atoi(optarg); break;
        case 'm': mmin = atoi(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 't': target = atoi(optarg); break;
        case 's': order = optarg; break;
        case 'V': {
            char buf[128];
            snprintf(buf, sizeof buf, "%s", optarg);
            v_sel[0] = v_sel[1] = 0;
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                if (!strcmp(tok, "ordered")) v_sel[V_ORDERED] = 1;
                else if (!strcmp(tok, "region")) v_sel[V_REGION] = 1;
                else bad = 1;
            }
            break;
        }
        case 'b': bytes = atoi(optarg); break;
        case 'B': barrier = atoi(optarg); break;
        case 'C': close_late = 1; break;
        case 'y': yield_waits = 1; break;
        case 'w': plain = 1; break;
        case 'x': use_mpix_dup = 1; break;
        case 'o': csv = optarg; break;
        case 'l': label = optarg; break;
        default: bad = 1;
        }
    }
    if (strcmp(order, "same") && strcmp(order, "reverse") && strcmp(order, "random"))
        bad = 1;
    if (bad || np < 2 || mmin < 1 || mmax < mmin || reps < 1 || target < 1 || bytes < 8) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: mpiexec -n P %s [-n MAX] [-m MIN] [-r R] [-t T] "
                    "[-s same|reverse|random] [-V ordered,region] [-b BYTES] [-B 0|1] [-C] [-y] "
                    "[-w] [-x] [-o CSV] [-l LABEL]\n",
                    argv[0]);
        MPI_Finalize();
        return 1;
    }
    if (!label)
        label = default_label();

    const char *how;
    MPI_Comm comm = bench_comm(plain, use_mpix_dup, &how);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    char desc[512];
    mpix_describe(comm, desc, sizeof desc);

    /* is the region API there, and does it accept this communicator? */
    comm_fn ropen = (comm_fn)dlsym(RTLD_DEFAULT, "MPIX_Unordered_region_open");
    comm_fn rclose = (comm_fn)dlsym(RTLD_DEFAULT, "MPIX_Unordered_region_close");
    char region_status[MPI_MAX_ERROR_STRING + 64] = "";
    int region_ok = 0;
    if (!ropen || !rclose) {
        snprintf(region_status, sizeof region_status,
                 "n/a (MPIX_Unordered_region_open/close not in the running libraries)");
    } else {
        int rc = ropen(comm);
        if (rc == MPI_SUCCESS)
            rc = rclose(comm);
        int ok = rc == MPI_SUCCESS, all_ok = 0;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        region_ok = all_ok;
        if (all_ok) {
            snprintf(region_status, sizeof region_status, "available");
        } else {
            char s[MPI_MAX_ERROR_STRING] = "another rank failed";
            int l = 0;
            if (rc != MPI_SUCCESS)
                MPI_Error_string(rc, s, &l);
            snprintf(region_status, sizeof region_status, "n/a (region open/close failed: %s)",
                     s);
        }
    }

    size_t nmsg = (size_t)(np - 1) * mmax;
    char *rbuf = calloc(nmsg, bytes), *sbuf = calloc(nmsg, bytes);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * nmsg);
    int *send_tags = malloc(sizeof(int) * mmax);
    double *samples = malloc(sizeof(double) * reps);
    if (!rbuf || !sbuf || !reqs || !send_tags || !samples)
        MPI_Abort(MPI_COMM_WORLD, 2);

    FILE *out = NULL;
    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int ll;
        MPI_Get_library_version(lib, &ll);
        char *nl = strchr(lib, '\n');
        if (nl)
            *nl = '\0';
        printf("# bench_unordered_region (papers/000 Listing 7.1): %d ranks, %d-byte messages, "
               "send order %s, %s between posting and sending, region closed %s\n",
               np, bytes, order, barrier ? "barrier" : "no barrier",
               close_late ? "after MPI_Waitall" : "after posting");
        printf("# MPI: %s\n# %s\n# communicator: %s\n# unordered region: %s\n", lib, desc, how,
               region_status);
        printf("# waits: %s\n", yield_waits ? "MPI_Test + sched_yield() loops (-y)"
                                            : "MPI_Waitall/MPI_Barrier");
        printf("# samples: %d (median), >= %d received messages per rank and sample; "
               "matches/s = messages received by all ranks / slowest rank's time\n",
               reps, target);
        printf("%8s  %-8s  %14s\n", "M", "variant", "matches/s");
        fflush(stdout);
        if (csv) {
            out = fopen(csv, "w");
            if (!out) {
                perror(csv);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            fprintf(out, "label,ranks,msgs_per_source,variant,send_order,samples,"
                         "msgs_per_sample,time_median_s,time_min_s,time_max_s,matches_per_s\n");
        }
    }

    long check_errors = 0;
    for (long lm = mmin; lm <= mmax; lm *= 4) {
        int m = (int)lm;
        for (int j = 0; j < m; j++)
            send_tags[j] = !strcmp(order, "reverse") ? m - 1 - j : j;
        if (!strcmp(order, "random")) {
            uint64_t s = 777 ^ (uint64_t)m;
            for (int j = m - 1; j > 0; j--) {
                int k = (int)(splitmix64(&s) % (uint64_t)(j + 1));
                int t = send_tags[j];
                send_tags[j] = send_tags[k];
                send_tags[k] = t;
            }
        }
        /* payload: (my rank, tag) per message; slot by (peer index, tag) */
        for (int d = 1; d < np; d++)
            for (int tag = 0; tag < m; tag++) {
                int32_t *p = (int32_t *)(sbuf + ((size_t)(d - 1) * m + tag) * bytes);
                p[0] = rank;
                p[1] = tag;
            }
        long inner = (target + (long)(np - 1) * m - 1) / ((long)(np - 1) * m);
        double msgs = (double)np * (np - 1) * m * inner;

        for (int v = 0; v < NV; v++) {
            if (!v_sel[v])
                continue;
            if (v == V_REGION && !region_ok) {
                if (rank == 0) {
                    printf("%8d  %-8s  %14s\n", m, v_name[v], "n/a");
                    if (out)
                        fprintf(out, "%s,%d,%d,%s,%s,%d,%.0f,,,,n/a\n", label, np, m, v_name[v],
                                order, reps, msgs);
                }
                continue;
            }
            cycle_t c = {comm,      rank,   np,    m,     bytes,     barrier, close_late,
                         v == V_REGION, ropen, rclose, send_tags, rbuf,    sbuf,       reqs};
            memset(rbuf, 0xff, (size_t)(np - 1) * m * bytes);
            run_cycle(&c); /* warm-up, checked */
            for (int src = 0, i = 0; src < np; src++) {
                if (src == rank)
                    continue;
                for (int tag = 0; tag < m; tag++, i++) {
                    const int32_t *p = (const int32_t *)(rbuf + (size_t)i * bytes);
                    if (p[0] != src || p[1] != tag)
                        check_errors++;
                }
            }
            for (int r = 0; r < reps; r++) {
                sync_barrier(comm);
                double t0 = MPI_Wtime();
                for (long k = 0; k < inner; k++)
                    run_cycle(&c);
                double t = MPI_Wtime() - t0, tmax = 0.0;
                MPI_Request rr;
                CHECK(MPI_Ireduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, comm, &rr));
                wait_all(1, &rr);
                samples[r] = tmax;
            }
            if (rank == 0) {
                double med = median(samples, reps);
                printf("%8d  %-8s  %14.4e\n", m, v_name[v], msgs / med);
                fflush(stdout);
                if (out)
                    fprintf(out, "%s,%d,%d,%s,%s,%d,%.0f,%.9e,%.9e,%.9e,%.6e\n", label, np, m,
                            v_name[v], order, reps, msgs, med, samples[0], samples[reps - 1],
                            msgs / med);
            }
        }
    }
    long all_errors = 0;
    MPI_Allreduce(&check_errors, &all_errors, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all_errors)
            printf("# payload check: %ld messages received with wrong (source, tag) payload\n",
                   all_errors);
        else
            printf("# payload check: ok\n");
    }
    if (out)
        fclose(out);
    free(samples);
    free(send_tags);
    free(reqs);
    free(sbuf);
    free(rbuf);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return all_errors ? 4 : 0;
}
