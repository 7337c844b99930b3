/*
 * bench_matching_rate: message matching rate, after papers/000 ch. 4.3.2.
 *
 * Two ranks on a communicator created with the MPI-4 assertions
 * mpi_assert_no_any_source=true and mpi_assert_no_any_tag=true
 * (MPI_Comm_dup_with_info).  Rank 1 is the sender, rank 0 the receiver.
 *
 *   queue "unexpected" (the paper's benchmark): the sender sends N 8-byte
 *     messages with tags 0..N-1 and waits for them locally, then both ranks
 *     enter a barrier, so every message sits in the receiver's unexpected
 *     queue; the receiver then receives the N messages (MPI_Recv, or
 *     MPI_Irecv+MPI_Waitall with -i) in tag order
 *        best    = 0..N-1 (the match is always at the head of the queue),
 *        average = a random permutation (fixed seed, same in every run),
 *        worst   = N-1..0 (the match is always at the tail).
 *     Timed: first receive posted .. last receive completed.
 *   queue "posted": the receiver pre-posts the N receives in the given tag
 *     order, barrier, then the sender sends tags 0..N-1; arriving messages
 *     search the posted-receive queue.  Timed: posting the receives plus
 *     the time from leaving the barrier until MPI_Waitall returns (the
 *     barrier itself is not counted; the sender's injection and the
 *     transfer are, so this is a lower bound of the pure matching rate).
 *
 * Each (N, order, queue) is measured `-r` times (samples) after one warm-up
 * cycle; a sample sums the timed phase of ceil(T/N) cycles (T = `-t`,
 * 16384 by default) so that small N are not dominated by timer overhead.
 * Reported: median matches/s over the samples (messages / time).  The
 * warm-up cycle of each point checks that every receive got the payload of
 * its tag; the last line reports it (exit status 4 on errors).
 *
 * The binary is a plain MPI program.  Run it natively and with
 * LD_PRELOAD=libmpix.so; MPIX functions are looked up with dlsym, so the
 * same binary reports whether mpix is loaded and handles the communicator.
 *
 * Usage: mpiexec -n 2 ./bench_matching_rate [options]
 *   -n MAX    largest N (default 16384); N = MIN, 4*MIN, ... <= MAX
 *   -m MIN    smallest N (default 1)
 *   -r R      samples per point (default 5)
 *   -t T      messages per sample at least (default 16384)
 *   -T SEC    time budget per point (default 3): when the warm-up cycle
 *             predicts that R samples take longer, take fewer (at least 3);
 *             0 = always R.  The CSV column "samples" says how many.
 *   -O LIST   orders, comma separated: best,average,worst (default all)
 *   -q LIST   queues: unexpected,posted (default both)
 *   -i        unexpected queue: MPI_Irecv + MPI_Waitall instead of MPI_Recv
 *   -a        unexpected queue: after the barrier and before the timer, the
 *             receiver probes (MPI_Probe) for the last message sent, so the
 *             timed receives find every message in its queues, not still in
 *             the transport (one source's messages come in in order).
 *             Natively the barrier's progress already takes them in; mpix
 *             empties its shared-memory rings only inside its own calls, so
 *             without -a its timed phase also takes the messages in.
 *   -R        the receiver's receives (MPI_Irecv: implies -i) inside an
 *             unordered region: MPIX_Unordered_region_open before the first
 *             is posted, _close after MPI_Waitall (mpix only; with a deep
 *             unexpected queue its receives meet the queue as one batch,
 *             on the GPU from MPIX_GPU_MATCH_THRESHOLD entries)
 *   -s SEED   seed of the average-case permutation (default 12345)
 *   -w        control: plain MPI_Comm_dup, no assertions
 *   -x        create the communicator with MPIX_Comm_dup_nowildcard when
 *             the running library has it (else MPI_Comm_dup_with_info)
 *   -o FILE   write CSV to FILE
 *   -l LABEL  label written into the CSV (default: native or mpix)
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

enum { ORD_BEST, ORD_AVERAGE, ORD_WORST, NORD };
static const char *ord_name[NORD] = {"best", "average", "worst"};
enum { Q_UNEXPECTED, Q_POSTED, NQ };
static const char *q_name[NQ] = {"unexpected", "posted"};

static void make_order(int *tags, int n, int ord, uint64_t seed)
{
    for (int i = 0; i < n; i++)
        tags[i] = ord == ORD_WORST ? n - 1 - i : i;
    if (ord == ORD_AVERAGE) {
        uint64_t s = seed ^ ((uint64_t)n * 0x2545f4914f6cdd1dULL);
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(splitmix64(&s) % (uint64_t)(i + 1));
            int t = tags[i];
            tags[i] = tags[j];
            tags[j] = t;
        }
    }
}

static int parse_list(const char *arg, const char **names, int n, int *sel)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    for (int i = 0; i < n; i++)
        sel[i] = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int found = 0;
        for (int i = 0; i < n; i++)
            if (!strcmp(tok, names[i]))
                sel[i] = found = 1;
        if (!found)
            return -1;
    }
    return 0;
}

/* ---- one timed cycle ---- */
typedef struct {
    MPI_Comm comm;
    int rank;
    int n;
    const int *tags; /* receive order */
    char *rbuf;      /* n * 8 bytes */
    char *sbuf;      /* n * 8 bytes, message i carries tag i */
    MPI_Request *reqs;
    int use_irecv;
    int arrived_first; /* -a */
    int (*region_open)(MPI_Comm);  /* -R: MPIX_Unordered_region_open/close, else NULL */
    int (*region_close)(MPI_Comm);
    long *errors; /* payload check (warm-up cycles only) when not NULL */
} cycle_t;

static void check_payload(const cycle_t *c, const char *buf, int tag)
{
    int32_t v;
    memcpy(&v, buf, sizeof v);
    if (c->errors && v != tag)
        ++*c->errors;
}

/* Returns the timed seconds on the receiver (rank 0), 0 on the sender. */
static double run_cycle(cycle_t *c, int queue)
{
    const int MSG = 8;
    double t = 0.0;
    if (queue == Q_UNEXPECTED) {
        if (c->rank == 1) {
            for (int i = 0; i < c->n; i++)
                CHECK(MPI_Isend(c->sbuf + (size_t)i * MSG, MSG, MPI_BYTE, 0, i, c->comm,
                                &c->reqs[i]));
            CHECK(MPI_Waitall(c->n, c->reqs, MPI_STATUSES_IGNORE));
            CHECK(MPI_Barrier(c->comm));
        } else {
            CHECK(MPI_Barrier(c->comm));
            if (c->arrived_first)
                CHECK(MPI_Probe(1, c->n - 1, c->comm, MPI_STATUS_IGNORE));
            double t0 = MPI_Wtime();
            if (c->use_irecv) {
                if (c->region_open)
                    CHECK(c->region_open(c->comm));
                for (int i = 0; i < c->n; i++)
                    CHECK(MPI_Irecv(c->rbuf + (size_t)i * MSG, MSG, MPI_BYTE, 1, c->tags[i],
                                    c->comm, &c->reqs[i]));
                CHECK(MPI_Waitall(c->n, c->reqs, MPI_STATUSES_IGNORE));
                if (c->region_close)
                    CHECK(c->region_close(c->comm));
                t = MPI_Wtime() - t0;
                for (int i = 0; i < c->n; i++)
                    check_payload(c, c->rbuf + (size_t)i * MSG, c->tags[i]);
            } else if (!c->errors) {
                for (int i = 0; i < c->n; i++)
                    CHECK(MPI_Recv(c->rbuf, MSG, MPI_BYTE, 1, c->tags[i], c->comm,
                                   MPI_STATUS_IGNORE));
                t = MPI_Wtime() - t0;
            } else {
                for (int i = 0; i < c->n; i++) {
                    CHECK(MPI_Recv(c->rbuf, MSG, MPI_BYTE, 1, c->tags[i], c->comm,
                                   MPI_STATUS_IGNORE));
                    check_payload(c, c->rbuf, c->tags[i]);
                }
                t = MPI_Wtime() - t0;
            }
        }
    } else {
        if (c->rank == 1) {
            CHECK(MPI_Barrier(c->comm));
            for (int i = 0; i < c->n; i++)
                CHECK(MPI_Isend(c->sbuf + (size_t)i * MSG, MSG, MPI_BYTE, 0, i, c->comm,
                                &c->reqs[i]));
            CHECK(MPI_Waitall(c->n, c->reqs, MPI_STATUSES_IGNORE));
        } else {
            double t0 = MPI_Wtime();
            if (c->region_open)
                CHECK(c->region_open(c->comm));
            for (int i = 0; i < c->n; i++)
                CHECK(MPI_Irecv(c->rbuf + (size_t)i * MSG, MSG, MPI_BYTE, 1, c->tags[i], c->comm,
                                &c->reqs[i]));
            double t1 = MPI_Wtime();
            CHECK(MPI_Barrier(c->comm));
            double t2 = MPI_Wtime();
            CHECK(MPI_Waitall(c->n, c->reqs, MPI_STATUSES_IGNORE));
            if (c->region_close)
                CHECK(c->region_close(c->comm));
            t = (t1 - t0) + (MPI_Wtime() - t2);
            for (int i = 0; i < c->n; i++)
                check_payload(c, c->rbuf + (size_t)i * MSG, c->tags[i]);
        }
    }
    /* keep cycles apart: the next cycle's messages must not reach the
     * receiver while it still matches this cycle's */
    CHECK(MPI_Barrier(c->comm));
    return t;
}

int main(int argc, char **argv)
{
    int nmax = 16384, nmin = 1, reps = 5, target = 16384, use_irecv = 0, plain = 0,
        use_mpix_dup = 0, arrived_first = 0, in_region = 0;
    uint64_t seed = 12345;
    double budget = 3.0;
    int ord_sel[NORD] = {1, 1, 1}, q_sel[NQ] = {1, 1};
    const char *csv = NULL, *label = NULL;

    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int opt, bad = 0;
    while ((opt = getopt(argc, argv, "n:m:r:t:T:O:q:iaRs:wxo:l:h")) != -1) {
        switch (opt) {
        case 'n': nmax = atoi(optarg); break;
        case 'm': nmin = atoi(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 't': target = atoi(optarg); break;
        case 'T': budget = atof(optarg); break;
        case 'O': bad |= parse_list(optarg, ord_name, NORD, ord_sel); break;
        case 'q': bad |= parse_list(optarg, q_name, NQ, q_sel); break;
        case 'i': use_irecv = 1; break;
        case 'a': arrived_first = 1; break;
        case 'R': in_region = 1; use_irecv = 1; break;
        case 's': seed = strtoull(optarg, NULL, 0); break;
        case 'w': plain = 1; break;
        case 'x': use_mpix_dup = 1; break;
        case 'o': csv = optarg; break;
        case 'l': label = optarg; break;
        default: bad = 1;
        }
    }
    if (bad || size != 2 || nmin < 1 || nmax < nmin || reps < 1 || target < 1) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: mpiexec -n 2 %s [-n MAX] [-m MIN] [-r R] [-t T] "
                    "[-T SEC] [-O best,average,worst] [-q unexpected,posted] [-i] [-a] [-R] [-s SEED] "
                    "[-w] [-x] [-o CSV] [-l LABEL]\n",
                    argv[0]);
        MPI_Finalize();
        return 1;
    }
    if (!label)
        label = default_label();
    int (*region_open)(MPI_Comm) = NULL, (*region_close)(MPI_Comm) = NULL;
    if (in_region) {
        region_open = (int (*)(MPI_Comm))dlsym(RTLD_DEFAULT, "MPIX_Unordered_region_open");
        region_close = (int (*)(MPI_Comm))dlsym(RTLD_DEFAULT, "MPIX_Unordered_region_close");
        if (!region_open || !region_close) {
            if (rank == 0)
                fprintf(stderr, "bench_matching_rate: -R needs libmpix (MPIX_Unordered_region_open)\n");
            MPI_Finalize();
            return 3;
        }
    }

    /* the benchmark communicator */
    const char *how;
    MPI_Comm comm = bench_comm(plain, use_mpix_dup, &how);

    char desc[512];
    mpix_describe(comm, desc, sizeof desc);

    int *tags = malloc(sizeof(int) * nmax);
    char *rbuf = calloc((size_t)nmax, 8);
    char *sbuf = calloc((size_t)nmax, 8);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * nmax);
    if (!tags || !rbuf || !sbuf || !reqs)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int i = 0; i < nmax; i++) {
        int32_t v = i;
        memcpy(sbuf + (size_t)i * 8, &v, sizeof v);
    }
    long errors = 0;
    double *samples = malloc(sizeof(double) * reps);

    FILE *out = NULL;
    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int ll;
        MPI_Get_library_version(lib, &ll);
        char *nl = strchr(lib, '\n');
        if (nl)
            *nl = '\0';
        printf("# bench_matching_rate (papers/000 ch. 4.3.2): 2 ranks, 8-byte messages\n");
        printf("# MPI: %s\n# %s\n# communicator: %s\n", lib, desc, how);
        printf("# unexpected queue receives: %s%s%s; samples per point: %d (median; at least 3 "
               "where %d would take over %g s), >= %d messages per sample; MPI_Wtick = %g s\n",
               use_irecv ? "MPI_Irecv+MPI_Waitall" : "MPI_Recv",
               in_region ? " inside an unordered region (-R; posted queue too)" : "",
               arrived_first ? ", every message probed in before the timer (-a)" : "", reps, reps,
               budget, target, MPI_Wtick());
        printf("%8s  %-8s  %-10s  %14s\n", "N", "order", "queue", "matches/s");
        fflush(stdout);
        if (csv) {
            out = fopen(csv, "w");
            if (!out) {
                perror(csv);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            fprintf(out, "label,N,order,queue,samples,msgs_per_sample,time_median_s,"
                         "time_min_s,time_max_s,matches_per_s,matches_per_s_best_sample\n");
        }
    }

    for (long ln = nmin; ln <= nmax; ln *= 4) {
        int n = (int)ln;
        int inner = (target + n - 1) / n;
        for (int q = 0; q < NQ; q++) {
            if (!q_sel[q])
                continue;
            for (int o = 0; o < NORD; o++) {
                if (!ord_sel[o])
                    continue;
                make_order(tags, n, o, seed);
                cycle_t c = {comm,      rank,        n,           tags,        rbuf,         sbuf,
                             reqs,      use_irecv,   arrived_first, region_open, region_close, &errors};
                double tw = run_cycle(&c, q); /* warm-up, payloads checked */
                c.errors = NULL;
                /* fewer samples (at least 3) where a point would exceed the budget */
                int nrep = reps;
                if (rank == 0 && budget > 0 && tw * inner * reps > budget) {
                    nrep = (int)(budget / (tw * inner));
                    if (nrep < 3)
                        nrep = 3;
                    if (nrep > reps)
                        nrep = reps;
                }
                CHECK(MPI_Bcast(&nrep, 1, MPI_INT, 0, comm));
                for (int r = 0; r < nrep; r++) {
                    double t = 0.0;
                    for (int k = 0; k < inner; k++)
                        t += run_cycle(&c, q);
                    samples[r] = t;
                }
                if (rank == 0) {
                    double msgs = (double)n * inner;
                    double mn = samples[0], mx = samples[0];
                    for (int r = 1; r < nrep; r++) {
                        if (samples[r] < mn) mn = samples[r];
                        if (samples[r] > mx) mx = samples[r];
                    }
                    double med = median(samples, nrep);
                    printf("%8d  %-8s  %-10s  %14.4e\n", n, ord_name[o], q_name[q], msgs / med);
                    fflush(stdout);
                    if (out)
                        fprintf(out, "%s,%d,%s,%s,%d,%.0f,%.9e,%.9e,%.9e,%.6e,%.6e\n", label, n,
                                ord_name[o], q_name[q], nrep, msgs, med, mn, mx, msgs / med,
                                msgs / mn);
                }
            }
        }
    }
    if (rank == 0) {
        if (errors)
            printf("# payload check: %ld messages received with the wrong tag's payload\n",
                   errors);
        else
            printf("# payload check: ok\n");
    }
    MPI_Bcast(&errors, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (out)
        fclose(out);

    free(sbuf);
    free(samples);
    free(reqs);
    free(rbuf);
    free(tags);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return errors ? 4 : 0;
}
