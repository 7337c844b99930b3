/* MPI_THREAD_MULTIPLE: four threads per rank send and receive at the same
 * time, two on one MPIX_Comm_dup_nowildcard communicator (distinct tags),
 * one on a dup_with_info communicator and one on MPI_COMM_WORLD (native
 * unless MPIX_INTERCEPT=all). Each thread runs Isend/Irecv+Waitall (sizes
 * from 0 B to past the eager limit), Sendrecv, Probe+Recv, Issend+Recv and
 * Testall polling, and checks every message. Pairs (0,1), (2,3), ...; an
 * odd last rank talks to MPI_PROC_NULL. A fifth thread opens and closes
 * unordered regions on the first communicator and sets and reads its info
 * hints meanwhile. Skipped where the MPI library does
 * not provide MPI_THREAD_MULTIPLE. Fails unless mpix carries its
 * no-wildcard communicator (mtest_check_handled). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mpix.h"
#include "mtest.h"

#define NTHREADS 4
#define ITERS 400

static int rank, size, partner;
static MPI_Comm comms[NTHREADS];
static const char *names[NTHREADS] = {"nowildcard (thread 0)", "nowildcard (thread 1)", "dup_with_info",
                                      "MPI_COMM_WORLD"};
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;
static int thread_errors[NTHREADS];

static int elems(int it) {
  static const int n[] = {0, 1, 17, 300, 5000, 20000}; /* ints */
  return n[it % 6];
}
static int value(int who, int t, int it, int i) { return who * 1000000 + t * 100000 + (it % 50) * 1000 + i % 1000; }

static int check_buf(const int *buf, int n, int t, int it, const MPI_Status *st, int tag) {
  if (partner == MPI_PROC_NULL) return 0;
  int count = -1, bad = 0;
  MPI_Get_count(st, MPI_INT, &count);
  if (st->MPI_SOURCE != partner || st->MPI_TAG != tag || count != n) bad = 1;
  for (int i = 0; i < n && !bad; i++)
    if (buf[i] != value(partner, t, it, i)) bad = 1;
  return bad;
}

static void *worker(void *arg) {
  const int t = (int)(long)arg;
  MPI_Comm comm = comms[t];
  int *out = malloc(20000 * sizeof(int)), *in = malloc(20000 * sizeof(int));
  int errs = 0;
  for (int it = 0; it < ITERS; it++) {
    const int n = elems(it + t);
    const int tag = 10 + t; /* distinct per thread, also on a shared communicator */
    MPI_Request reqs[2];
    MPI_Status sts[2];
    for (int i = 0; i < n; i++) out[i] = value(rank, t, it, i);
    switch (it % 4) {
      case 0:
        MPI_Irecv(in, n, MPI_INT, partner, tag, comm, &reqs[0]);
        MPI_Isend(out, n, MPI_INT, partner, tag, comm, &reqs[1]);
        MPI_Waitall(2, reqs, sts);
        errs += check_buf(in, n, t, it, &sts[0], tag);
        break;
      case 1:
        MPI_Sendrecv(out, n, MPI_INT, partner, tag, in, n, MPI_INT, partner, tag, comm, &sts[0]);
        errs += check_buf(in, n, t, it, &sts[0], tag);
        break;
      case 2: {
        MPI_Isend(out, n, MPI_INT, partner, tag, comm, &reqs[1]);
        MPI_Probe(partner, tag, comm, &sts[0]);
        int count = -1;
        MPI_Get_count(&sts[0], MPI_INT, &count);
        if (partner != MPI_PROC_NULL && count != n) errs++;
        MPI_Recv(in, n, MPI_INT, partner, tag, comm, &sts[0]);
        errs += check_buf(in, n, t, it, &sts[0], tag);
        MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
        break;
      }
      default: {
        int flag = 0;
        MPI_Issend(out, n, MPI_INT, partner, tag, comm, &reqs[1]);
        MPI_Irecv(in, n, MPI_INT, partner, tag, comm, &reqs[0]);
        while (!flag) MPI_Testall(2, reqs, &flag, sts);
        errs += check_buf(in, n, t, it, &sts[0], tag);
        break;
      }
    }
  }
  pthread_mutex_lock(&err_lock);
  thread_errors[t] = errs;
  pthread_mutex_unlock(&err_lock);
  free(out);
  free(in);
  return NULL;
}

/* Meanwhile a fifth thread opens and closes an unordered region on the
 * first communicator and asserts its hints again (MPI_Comm_set_info),
 * reading them back: every receive and probe of the workers checks both,
 * so under TSan this catches reads of them without the lock. */
static void *info_churn(void *arg) {
  (void)arg;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  int errs = 0;
  for (int it = 0; it < ITERS; it++) {
    /* Messages of one (source, tag) here are one at a time, so matching
     * out of order inside the region changes nothing the workers check. */
    if (MPIX_Unordered_region_open(comms[0]) != MPI_SUCCESS) errs++;
    MPI_Comm_set_info(comms[0], info);
    MPI_Info used;
    char value[MPI_MAX_INFO_VAL + 1] = "";
    int flag = 0;
    MPI_Comm_get_info(comms[0], &used);
    MPI_Info_get(used, "mpi_assert_no_any_source", MPI_MAX_INFO_VAL, value, &flag);
    if (!flag || strcmp(value, "true") != 0) errs++;
    MPI_Info_free(&used);
    if (MPIX_Unordered_region_close(comms[0]) != MPI_SUCCESS) errs++;
  }
  MPI_Info_free(&info);
  return (void *)(long)errs;
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) mtest_printf("skipped: MPI_THREAD_MULTIPLE not provided\n");
    MPI_Finalize();
    return 0;
  }
  partner = (rank ^ 1) < size ? (rank ^ 1) : MPI_PROC_NULL;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_source", "true");
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &comms[0]);
  comms[1] = comms[0];
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comms[2]);
  MPI_Info_free(&info);
  comms[3] = MPI_COMM_WORLD;

  pthread_t th[NTHREADS], churn;
  for (long t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, worker, (void *)t);
  pthread_create(&churn, NULL, info_churn, NULL);
  for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
  void *churn_errors = NULL;
  pthread_join(churn, &churn_errors);
  MTEST_CHECK(churn_errors == NULL, "region/info thread: %ld failures", (long)churn_errors);
  mtest_check_handled(comms[0], "MPIX_Comm_dup_nowildcard");
  for (int t = 0; t < NTHREADS; t++)
    MTEST_CHECK(thread_errors[t] == 0, "%d wrong messages on %s", thread_errors[t], names[t]);

  MPI_Comm_free(&comms[0]);
  MPI_Comm_free(&comms[2]);
  return mtest_finalize();
}
