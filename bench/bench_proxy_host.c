/*
 * bench_proxy_host: host cost of the proxy path of device send/recv as the
 * number of operations in flight grows, without a GPU.
 *
 * The proxy queue lives in host memory (MPIX_DEVICE_PROXY_HOSTMEM=1) and T
 * host threads per rank stand in for the GPU: each drives W virtual GPU
 * threads, and each virtual thread runs blocking MPIX_Send/MPIX_Recv, one
 * 8-byte operation in flight at a time on its own tag, posted with the
 * header code a kernel runs (mpixd_isend/mpixd_irecv/mpixd_test, retried
 * while the queue is full). mpix's progress thread starts the descriptors
 * through MPI and writes completions back (mpix/device_proxy.cc). 2 ranks.
 * Outstanding operations per rank: T * W, for T = 1, 8, 64 (-t) and 1 ..
 * 16384 (-m). Traffic patterns (-d):
 *   both    each virtual thread alternates sends and receives (rank 0
 *           starts with a send, rank 1 with a receive: one operation in
 *           flight is a ping-pong);
 *   one     rank 0 only sends, rank 1 only receives, as test_many in
 *           test/gpu/dev_p2p.cu; the queue (16384 entries, the GPU test's)
 *           may fill, and posts then wait for free slots;
 *   parked  as both, with 1024 in flight, beside P receives (P = 0 .. 16384
 *           in the outstanding column's place: outstanding = 1024 + P)
 *           that stay in flight through the whole sample on a second
 *           communicator, so operations in flight that do not move.
 * Every received payload is checked ((virtual thread, sequence) of the
 * matching send, so FIFO order per (source, tag) too).
 *
 * Reported per point: operations per second per rank (sends plus receives
 * completed by the slower rank over its time), microseconds per operation,
 * and host_us/op: CPU time per operation of everything but the worker
 * threads (mpix's progress thread and the MPI library under it; the
 * progress thread polls without pause, so at low counts this is mostly
 * polling). Median of -r samples. Ends with "# payload check: ok" (exit
 * status 4 otherwise).
 *
 * Unless set, the environment gets MPIX_DEVICE_PATH=proxy and
 * MPIX_DEVICE_PROXY_HOSTMEM=1 before the handles are made, and
 * MPIX_DEVICE_PROXY_QUEUE: 16384 with -d one, else 65536: with sends and
 * receives both ways a full queue on both ranks could deadlock (a receive
 * holds its slot until its message comes, and the send it waits for cannot
 * get one on the peer), so those points stop at a quarter of the queue.
 *
 * Usage: mpiexec -n 2 ./bench_proxy_host [options]
 *   -t LIST  worker thread counts, comma separated (default 1,8,64)
 *   -m MAX   largest outstanding (or parked) count (default 16384; points 1,
 *            4, 16, 64, 256, 1024, 2048, 4096, 8192, 16384 up to MAX;
 *            parked: 0, 64, 256, 1024, 4096, 8192, 16384)
 *   -O LIST  exactly these counts, comma separated
 *   -n OPS   operations per rank per sample, at least (default 40000; at
 *            least 4 * outstanding)
 *   -r R     samples per point (default 3, median reported)
 *   -d DIR   both (default), one or parked: the traffic pattern above
 *   -o FILE  write CSV to FILE
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "mpix_device.h"

enum { MAX_THREADS = 256, MAX_POINTS = 32 };

typedef struct {
  const MPIX_Device_comm *h;
  int rank, peer, tid;
  long window; /* virtual GPU threads driven by this thread */
  long ops;    /* operations per virtual thread */
  long errors;
  double cpu;  /* this thread's CPU seconds */
  pthread_barrier_t *start;
} Worker;

/* Waiting threads stand in for GPU threads, which cost the host nothing:
 * after a few yields they sleep, ever longer (1 us up to g_max_sleep_ns,
 * which grows with the thread count so that all of them together wake
 * about 10^5 times a second at most), so that the progress thread keeps
 * its core even with 64 threads per rank on 2 cores. A plain sched_yield
 * loop (what mpixd_backoff does on the host) turns the run into a contest
 * of yields: 64 threads then measured the scheduler. */
static long g_max_sleep_ns = 16000;
static int g_one_way = 0; /* -d one */
static int g_parked = 0;  /* -d parked */

static void backoff(unsigned *tries) {
  if (++*tries < 8) {
    sched_yield();
    return;
  }
  const unsigned shift = *tries - 8 < 20 ? *tries - 8 : 20;
  long ns = 1000L << shift;
  if (ns > g_max_sleep_ns) ns = g_max_sleep_ns;
  const struct timespec ts = {0, ns};
  nanosleep(&ts, NULL);
}

/* Collectives of the main thread wait without spinning: MPICH busy-polls
 * in blocking calls, and a rank that finished first would take a core from
 * the progress thread of the other (2 ranks on 2 cores). */
static void relaxed_wait(MPI_Request *req) {
  int done = 0;
  const struct timespec ts = {0, 50000};
  for (;;) {
    CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    nanosleep(&ts, NULL);
  }
}

static void relaxed_barrier(MPI_Comm comm) {
  MPI_Request req;
  CHECK(MPI_Ibarrier(comm, &req));
  relaxed_wait(&req);
}

static void relaxed_max(double *v, int n, MPI_Comm comm) {
  MPI_Request req;
  CHECK(MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, comm, &req));
  relaxed_wait(&req);
}

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double process_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sequence number j of a send on (rank, thread) carries this value. */
static uint64_t payload(int rank, int tid, long j) {
  return ((uint64_t)(unsigned)rank << 56) ^ ((uint64_t)(unsigned)tid << 40) ^ (uint64_t)j ^ 0x5a5a5a5aull;
}

/* Operation i of a thread: both ways, rank 0 sends on even i, rank 1 on
 * odd i; one way, rank 0 sends. The j-th send of one side meets the j-th
 * receive of the other, j = seq(i). */
static int is_send(int rank, long i) { return g_one_way ? rank == 0 : (int)((i + rank) % 2 == 0); }
static long seq(long i) { return g_one_way ? i : i / 2; }

/* A virtual GPU thread: one operation in flight at a time (MPIX_Send /
 * MPIX_Recv), on its own tag. */
typedef struct {
  MPIX_Device_request req;
  uint64_t val; /* send: payload; receive: landing buffer */
  long next;    /* operations of this virtual thread posted so far */
  int busy;     /* an operation is in flight */
} VThread;

/* Operation i of virtual thread v: posted now (1) or the queue is full (0). */
static int try_post(Worker *w, VThread *v, int tag, long i) {
  int rc;
  if (is_send(w->rank, i)) {
    v->val = payload(w->rank, tag, seq(i));
    rc = mpixd_isend(w->h, &v->val, sizeof v->val, w->peer, tag, &v->req);
  } else {
    v->val = 0;
    rc = mpixd_irecv(w->h, &v->val, sizeof v->val, w->peer, tag, &v->req);
  }
  if (rc == MPIX_DEVICE_AGAIN) return 0;
  if (rc != MPIX_DEVICE_SUCCESS) {
    ++w->errors;
    v->req.state = MPIXD_INACTIVE; /* mpixd_test then says ERR_REQUEST */
  }
  return 1;
}

/* Its operation i: completed and checked (1) or still running (0). */
static int try_finish(Worker *w, VThread *v, int tag, long i) {
  const int rc = mpixd_test(w->h, &v->req);
  if (rc == MPIX_DEVICE_PENDING) return 0;
  if (rc != MPIX_DEVICE_SUCCESS) ++w->errors;
  if (!is_send(w->rank, i) && (v->val != payload(w->peer, tag, seq(i)) || v->req.msg_bytes != sizeof v->val))
    ++w->errors;
  return 1;
}

/* Sweeps its virtual threads round and round: each finishes its operation
 * when complete (which releases its queue entry) and posts the next when
 * the queue has room, independently of the others, as GPU threads do. */
static void *work(void *arg) {
  Worker *w = arg;
  prctl(PR_SET_TIMERSLACK, 1000UL); /* 1 us: short sleeps stay short */
  VThread *vt = calloc((size_t)w->window, sizeof(VThread));
  pthread_barrier_wait(w->start);
  const double c0 = thread_cpu();
  long left = w->window * w->ops; /* operations of all virtual threads */
  unsigned tries = 0;
  while (left > 0) {
    int moved = 0;
    for (long k = 0; k < w->window; ++k) {
      VThread *v = &vt[k];
      const int tag = (int)(w->tid * w->window + k);
      if (v->busy && try_finish(w, v, tag, v->next - 1)) {
        v->busy = 0;
        --left;
        moved = 1;
      }
      if (!v->busy && v->next < w->ops && try_post(w, v, tag, v->next)) {
        v->busy = 1;
        ++v->next;
        moved = 1;
      }
    }
    if (!moved) {
      backoff(&tries);
      continue;
    }
    tries = 0;
    /* A sweep costs O(virtual threads) here and nothing on a GPU: pause
     * after one (50 ns per virtual thread, some 20x the sweep itself), so
     * a progress thread sharing the core does not wait for the stand-ins. */
    if (w->window >= 64) {
      const struct timespec ts = {0, 50L * w->window};
      nanosleep(&ts, NULL);
    }
  }
  w->cpu = thread_cpu() - c0;
  free(vt);
  return NULL;
}

/* -d parked: receives kept in flight through a whole sample beside the
 * measured traffic, on a second communicator (so on a queue of their own,
 * whose slots they then hold without blocking the measured traffic),
 * for a message nobody sends until the sample is over; then the peer's
 * host sends them with MPI_Isend. (Parked sends above the eager limit
 * would measure something else: their rendezvous requests wait in UCX's
 * unexpected queue at the receiver, which every MPI_ANY_SOURCE landing
 * receive mpix posts then searches.) */
enum { TAG_PARK = 30000 };

typedef struct {
  const MPIX_Device_comm *h;
  MPI_Comm comm;
  MPIX_Device_request *reqs;
  uint64_t *vals;
  MPI_Request *host;
} Parked;

static void park(Parked *p, int peer, long n) {
  unsigned tries = 0;
  for (long k = 0; k < n; ++k) {
    int rc;
    while ((rc = mpixd_irecv(p->h, &p->vals[k], sizeof p->vals[k], peer, TAG_PARK, &p->reqs[k])) ==
           MPIX_DEVICE_AGAIN)
      backoff(&tries);
    CHECK(rc == MPIX_DEVICE_SUCCESS ? MPI_SUCCESS : MPI_ERR_OTHER);
  }
}

static void unpark(Parked *p, int peer, long n, long *errors) {
  const uint64_t v = 42;
  for (long k = 0; k < n; ++k) CHECK(MPI_Isend(&v, 1, MPI_UINT64_T, peer, TAG_PARK, p->comm, &p->host[k]));
  const struct timespec ts = {0, 50000};
  for (int done = 0; !done;) {
    CHECK(MPI_Testall((int)n, p->host, &done, MPI_STATUSES_IGNORE));
    if (!done) nanosleep(&ts, NULL);
  }
  for (long k = 0; k < n; ++k) {
    int rc;
    while ((rc = mpixd_test(p->h, &p->reqs[k])) == MPIX_DEVICE_PENDING) nanosleep(&ts, NULL);
    if (rc != MPIX_DEVICE_SUCCESS || p->vals[k] != v) ++*errors;
  }
}

/* One sample: seconds of this rank (start barrier to the last completion);
 * *host_cpu: CPU seconds of the process minus those of the worker threads
 * (the progress thread and the MPI library under it; this thread only
 * joins); errors added to *errors. */
static double sample(const MPIX_Device_comm *h, MPI_Comm comm, int rank, int threads, long window, long ops,
                     Parked *parked, long nparked, double *host_cpu, long *errors) {
  g_max_sleep_ns = 10000L * threads < 16000 ? 16000 : 10000L * threads > 1000000 ? 1000000 : 10000L * threads;
  pthread_t tid[MAX_THREADS];
  Worker w[MAX_THREADS];
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
  for (int t = 0; t < threads; ++t) {
    w[t] = (Worker){h, rank, 1 - rank, t, window, ops, 0, 0.0, &start};
    pthread_create(&tid[t], NULL, work, &w[t]);
  }
  if (nparked > 0) park(parked, 1 - rank, nparked);
  relaxed_barrier(comm);
  const double t0 = MPI_Wtime(), c0 = process_cpu();
  pthread_barrier_wait(&start);
  double workers = 0;
  for (int t = 0; t < threads; ++t) {
    pthread_join(tid[t], NULL);
    *errors += w[t].errors;
    workers += w[t].cpu;
  }
  const double t1 = MPI_Wtime();
  *host_cpu = process_cpu() - c0 - workers;
  if (nparked > 0) unpark(parked, 1 - rank, nparked, errors);
  pthread_barrier_destroy(&start);
  return t1 - t0;
}

int main(int argc, char **argv) {
  int threads[MAX_POINTS] = {1, 8, 64}, nthreads = 3, reps = 3;
  long max_out = 16384, min_ops = 40000;
  const char *csv = NULL;
  int opt;
  long only[MAX_POINTS];
  int nonly = 0;
  while ((opt = getopt(argc, argv, "t:m:n:r:o:O:d:")) != -1) {
    switch (opt) {
      case 't': {
        nthreads = 0;
        for (char *s = strtok(optarg, ","); s && nthreads < MAX_POINTS; s = strtok(NULL, ","))
          threads[nthreads++] = atoi(s);
        break;
      }
      case 'm': max_out = atol(optarg); break;
      case 'O': {
        for (char *s = strtok(optarg, ","); s && nonly < MAX_POINTS; s = strtok(NULL, ",")) only[nonly++] = atol(s);
        break;
      }
      case 'n': min_ops = atol(optarg); break;
      case 'r': reps = atoi(optarg); break;
      case 'o': csv = optarg; break;
      case 'd':
        g_one_way = strcmp(optarg, "one") == 0;
        g_parked = strcmp(optarg, "parked") == 0;
        break;
      default:
        fprintf(stderr, "usage: %s [-t 1,8,64] [-m 16384 | -O 1,8192] [-n 40000] [-r 3] [-d both|one|parked] [-o out.csv]\n",
                argv[0]);
        return 2;
    }
  }
  setenv("MPIX_DEVICE_PATH", "proxy", 0);
  setenv("MPIX_DEVICE_PROXY_HOSTMEM", "1", 0);
  setenv("MPIX_DEVICE_PROXY_QUEUE", g_one_way ? "16384" : "65536", 0);

  int provided = 0, rank = 0, size = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2 || provided != MPI_THREAD_MULTIPLE) {
    if (rank == 0) fprintf(stderr, "bench_proxy_host: needs 2 ranks and MPI_THREAD_MULTIPLE\n");
    MPI_Finalize();
    return 2;
  }
  MPI_Comm comm;
  CHECK(MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &comm));
  MPIX_Device_comm h;
  CHECK(MPIX_Comm_device_handle(comm, &h));
  if (h.path != MPIXD_PATH_PROXY) {
    if (rank == 0) fprintf(stderr, "bench_proxy_host: the proxy path was not chosen\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  /* -d parked: the parked operations live on a communicator of their own,
   * so its queue holds them and nothing else. */
  Parked parked = {0};
  if (g_parked) {
    static MPIX_Device_comm hp;
    CHECK(MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &parked.comm));
    CHECK(MPIX_Comm_device_handle(parked.comm, &hp));
    parked.h = &hp;
    parked.reqs = calloc((size_t)max_out + 1, sizeof *parked.reqs);
    parked.vals = calloc((size_t)max_out + 1, sizeof *parked.vals);
    parked.host = calloc((size_t)max_out + 1, sizeof *parked.host);
  }
  static const long kOuts[] = {1, 4, 16, 64, 256, 1024, 2048, 4096, 8192, 16384};
  static const long kParked[] = {0, 64, 256, 1024, 4096, 8192, 16384};
  const long *points = g_parked ? kParked : kOuts;
  const size_t npoints = g_parked ? sizeof kParked / sizeof kParked[0] : sizeof kOuts / sizeof kOuts[0];
  long outs[MAX_POINTS];
  int nouts = 0;
  for (size_t k = 0; k < npoints; ++k)
    if (points[k] <= max_out) outs[nouts++] = points[k];
  if (nonly > 0) {
    memcpy(outs, only, sizeof only[0] * (size_t)nonly);
    nouts = nonly;
  }

  FILE *out = NULL;
  if (rank == 0) {
    printf("# bench_proxy_host: 2 ranks, 8-byte device-API %s through the proxy queue (%u entries, "
           "host memory), W in flight per thread%s\n",
           g_one_way ? "sends from rank 0 to rank 1" : "sends and receives both ways", h.pq_slots,
           g_parked ? "; outstanding = 1024 of them + receives parked on a second queue" : "");
    printf("# %8s %12s %8s %14s %10s %12s\n", "threads", "outstanding", "window", "ops/s/rank", "us/op",
           "host_us/op");
    if (csv) {
      out = fopen(csv, "w");
      if (out) fprintf(out, "direction,threads,outstanding,window,ops,ops_per_s_per_rank,us_per_op,host_cpu_us_per_op\n");
    }
  }
  long errors = 0;
  for (int ti = 0; ti < nthreads; ++ti) {
    const int t = threads[ti];
    if (t < 1 || t > MAX_THREADS) continue;
    for (int oi = 0; oi < nouts; ++oi) {
      const long np = g_parked ? outs[oi] : 0; /* parked */
      const long fg = g_parked ? 1024 : outs[oi]; /* in flight in the measured traffic */
      const long o = np + fg;
      if (fg < t || fg % t != 0 || (g_one_way ? fg : 4 * fg) > (long)h.pq_slots) continue;
      if (np > (long)h.pq_slots) continue;
      const long window = fg / t;
      long total = min_ops > 4 * fg ? min_ops : 4 * fg;
      const long ops = (total + fg - 1) / fg; /* per virtual thread */
      total = ops * fg;
      /* warm-up: a short run at this point */
      double cpu = 0;
      sample(&h, comm, rank, t, window, 2, &parked, np, &cpu, &errors);
      double secs[16], cpus[16];
      const int r = reps < 1 ? 1 : reps > 16 ? 16 : reps;
      for (int k = 0; k < r; ++k) {
        double v[2];
        v[0] = sample(&h, comm, rank, t, window, ops, &parked, np, &v[1], &errors);
        relaxed_max(v, 2, comm);
        secs[k] = v[0];
        cpus[k] = v[1];
      }
      qsort(secs, (size_t)r, sizeof secs[0], cmp_double);
      qsort(cpus, (size_t)r, sizeof cpus[0], cmp_double);
      const double rate = (double)total / secs[r / 2];
      const double host_us = 1e6 * cpus[r / 2] / (double)total;
      if (rank == 0) {
        printf("  %8d %12ld %8ld %14.0f %10.2f %12.2f\n", t, o, window, rate, 1e6 / rate, host_us);
        fflush(stdout);
        if (out)
          fprintf(out, "%s,%d,%ld,%ld,%ld,%.0f,%.3f,%.3f\n", g_parked ? "parked" : g_one_way ? "one" : "both", t, o,
                  window, total, rate, 1e6 / rate, host_us);
      }
    }
  }
  CHECK(MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_LONG, MPI_SUM, comm));
  if (rank == 0) {
    printf("# payload check: %s", errors == 0 ? "ok\n" : "FAILED");
    if (errors) printf(" (%ld errors)\n", errors);
    if (out) fclose(out);
  }
  if (g_parked) {
    MPI_Comm_free(&parked.comm);
    free(parked.reqs);
    free(parked.vals);
    free(parked.host);
  }
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return errors == 0 ? 0 : 4;
}
