/*
 * bench_threads: small-message matching throughput with several threads per
 * rank (issue 27's threads benchmark), MPI_THREAD_MULTIPLE.
 *
 * Two ranks: rank 0's T threads send, rank 1's T threads receive. Thread t
 * owns tags t*W .. t*W+W-1 (W = window, 64 by default): in each iteration
 * it posts W nonblocking operations on its own tags and waits for all of
 * them, so threads never match each other's messages and a library that
 * matches per (source, tag) can run them side by side. Measured per mode:
 *   ordered  a communicator asserting mpi_assert_no_any_source and
 *            mpi_assert_no_any_tag (MPI_Comm_dup_with_info: native MPICH
 *            accepts and ignores it; mpix matches it by hash);
 *   region   the same inside MPIX_Unordered_region_open/close (only when
 *            libmpix is loaded: MPIX functions are looked up with dlsym);
 *   world    MPI_COMM_WORLD (mpix passes it through unless
 *            MPIX_INTERCEPT=all).
 * Reported: messages/s received by rank 1 (all threads), median of R
 * samples of I iterations each, the modes' samples taken in turn; every
 * payload checked in the first sample. A region is opened and closed around
 * each of its samples.
 *
 * Usage: mpiexec -n 2 ./bench_threads [-t LIST] [-w W] [-i I] [-r R]
 *          [-m LIST] [-l LABEL] [-o CSV]
 *   -t LIST  thread counts, comma separated (default 1,2,4,8)
 *   -m LIST  modes (default ordered,region,world)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

typedef int (*region_fn)(MPI_Comm);

static int rank, window = 64, iters = 2000, samples = 5;
static int errors;
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
  MPI_Comm comm;
  int thread;
  int check;
} job_t;

static uint64_t payload(int tag, int iter) { return (uint64_t)tag * 1000003u + (uint64_t)iter; }

static void *run(void *arg) {
  const job_t *j = arg;
  uint64_t *buf = malloc(sizeof *buf * (size_t)window);
  MPI_Request *q = malloc(sizeof *q * (size_t)window);
  const int base = j->thread * window;
  for (int it = 0; it < iters; it++) {
    for (int w = 0; w < window; w++) {
      if (rank == 0) {
        buf[w] = payload(base + w, it);
        MPI_Isend(&buf[w], 1, MPI_UINT64_T, 1, base + w, j->comm, &q[w]);
      } else {
        MPI_Irecv(&buf[w], 1, MPI_UINT64_T, 0, base + w, j->comm, &q[w]);
      }
    }
    MPI_Waitall(window, q, MPI_STATUSES_IGNORE);
    if (rank == 1 && j->check)
      for (int w = 0; w < window; w++)
        if (buf[w] != payload(base + w, it)) {
          pthread_mutex_lock(&err_lock);
          if (errors++ < 5)
            fprintf(stderr, "thread %d iteration %d tag %d: got %llu\n", j->thread, it, base + w,
                    (unsigned long long)buf[w]);
          pthread_mutex_unlock(&err_lock);
        }
  }
  free(buf);
  free(q);
  return NULL;
}

static double one_sample(MPI_Comm comm, int threads, int check) {
  pthread_t tid[64];
  job_t jobs[64];
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (int t = 0; t < threads; t++) {
    jobs[t] = (job_t){comm, t, check};
    pthread_create(&tid[t], NULL, run, &jobs[t]);
  }
  for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
  MPI_Barrier(comm);
  return MPI_Wtime() - t0;
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *tlist = "1,2,4,8", *modes = "ordered,region,world", *label = "run", *csv = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-t") && i + 1 < argc) tlist = argv[++i];
    else if (!strcmp(argv[i], "-w") && i + 1 < argc) window = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-i") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-r") && i + 1 < argc) samples = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-m") && i + 1 < argc) modes = argv[++i];
    else if (!strcmp(argv[i], "-l") && i + 1 < argc) label = argv[++i];
    else if (!strcmp(argv[i], "-o") && i + 1 < argc) csv = argv[++i];
  }
  if (size != 2 || provided < MPI_THREAD_MULTIPLE || window < 1 || samples < 1 || samples > 64) {
    if (rank == 0) fprintf(stderr, "bench_threads: needs 2 ranks and MPI_THREAD_MULTIPLE (provided %d)\n", provided);
    MPI_Finalize();
    return 2;
  }
  region_fn open_region = (region_fn)dlsym(RTLD_DEFAULT, "MPIX_Unordered_region_open");
  region_fn close_region = (region_fn)dlsym(RTLD_DEFAULT, "MPIX_Unordered_region_close");
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_source", "true");
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPI_Comm asserted;
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &asserted);
  MPI_Info_free(&info);
  char who[1400];
  mpix_describe(asserted, who, sizeof who);
  if (rank == 1) printf("# %s\n", who);
  FILE *out = NULL;
  if (rank == 1 && csv) {
    out = fopen(csv, "w");
    if (out) fprintf(out, "label,mode,threads,window,iters,msgs_per_s,msgs_per_s_min,msgs_per_s_max\n");
  }
  if (rank == 1) printf("%-8s %7s %14s %14s %14s\n", "mode", "threads", "msgs/s median", "min", "max");
  /* The modes' samples alternate (ordered, region, world, ordered, ...), so
   * that a drift of the machine during a run shifts every mode alike. */
  enum { MAXM = 3 };
  const char *mode_name[MAXM];
  int nmodes = 0;
  char *mlist = strdup(modes);
  for (char *m = strtok(mlist, ","); m && nmodes < MAXM; m = strtok(NULL, ",")) {
    if (!strcmp(m, "region") && (!open_region || !close_region)) {
      if (rank == 1) printf("%-8s (no MPIX_Unordered_region_open: libmpix not loaded)\n", m);
      continue;
    }
    mode_name[nmodes++] = m;
  }
  char *tl = strdup(tlist), *save = NULL;
  for (char *ts = strtok_r(tl, ",", &save); ts; ts = strtok_r(NULL, ",", &save)) {
    const int threads = atoi(ts);
    if (threads < 1 || threads > 64 || (long)threads * window > 32767) continue;
    double rate[MAXM][64];
    for (int s = 0; s < samples; s++)
      for (int k = 0; k < nmodes; k++) {
        const int region = !strcmp(mode_name[k], "region");
        MPI_Comm comm = !strcmp(mode_name[k], "world") ? MPI_COMM_WORLD : asserted;
        if (region) open_region(comm);
        const double secs = one_sample(comm, threads, s == 0);
        if (region) close_region(comm);
        rate[k][s] = (double)threads * window * iters / secs;
      }
    for (int k = 0; k < nmodes; k++) {
      const double med = median(rate[k], samples); /* sorts: rate[k][0] is the minimum */
      if (rank == 1) {
        printf("%-8s %7d %14.0f %14.0f %14.0f\n", mode_name[k], threads, med, rate[k][0], rate[k][samples - 1]);
        if (out)
          fprintf(out, "%s,%s,%d,%d,%d,%.0f,%.0f,%.0f\n", label, mode_name[k], threads, window, iters, med,
                  rate[k][0], rate[k][samples - 1]);
        /* Each row at once: a run cut by a time limit keeps what it measured. */
        fflush(stdout);
        if (out) fflush(out);
      }
    }
  }
  free(tl);
  free(mlist);
  if (out) fclose(out);
  MPI_Comm_free(&asserted);
  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 1) printf("# payload check: %s\n", total ? "FAILED" : "ok");
  MPI_Finalize();
  return total ? 4 : 0;
}
