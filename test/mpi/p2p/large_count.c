/* The large-count (_c) point-to-point calls on handled communicators, each
 * against the int call on the peer: a _c call that bypassed mpix's engine
 * would talk to the MPI library directly while its peer talks to the
 * engine, and they would never match (MPI_Isendrecv_c and
 * MPI_Isendrecv_replace_c did, which mpi4py's Comm.Isendrecv and
 * Isendrecv_replace call; found by check-mpi4py). Waits have a deadline, so
 * such a bypass fails the test instead of hanging it. On
 * MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD) and, where MPIX_INTERCEPT=all
 * makes it handled, on MPI_COMM_WORLD with wildcard receives as well. Pairs
 * (0,1), (2,3), ...; an odd last rank only takes part in the collectives. */
#include <stdlib.h>
#include <time.h>

#include "mpix.h"
#include "mtest.h"

#ifdef MPIX_HAVE_MPI_LARGE_COUNT /* configure's check: Open MPI 4.1 has no _c calls */
enum { N = 50 };
static int rank, partner, even;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* MPI_Wait with a deadline: a request that the engine and the MPI library
 * each expect from the other never completes. */
static void wait_or_abort(MPI_Request *req, MPI_Status *st, const char *what) {
  const double end = now() + 30;
  int done = 0;
  while (!done) {
    MPI_Test(req, &done, st);
    if (!done && now() > end) {
      MTEST_CHECK(0, "%s did not complete in 30 s (its peer went through the other path?)", what);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
}

static void fill(int *b, int salt) {
  for (int i = 0; i < N; i++) b[i] = rank * 10000 + salt * 100 + i;
}

static void expect(const char *what, const int *b, int salt, const MPI_Status *st, int tag) {
  int bad = -1;
  for (int i = 0; i < N && bad < 0; i++)
    if (b[i] != partner * 10000 + salt * 100 + i) bad = i;
  MPI_Count count = -1;
  MPI_Get_count_c(st, MPI_INT, &count);
  MTEST_CHECK(bad < 0 && st->MPI_SOURCE == partner && st->MPI_TAG == tag && count == N,
              "%s: element %d wrong, source %d tag %d count %lld (expected %d %d %d)", what, bad, st->MPI_SOURCE,
              st->MPI_TAG, (long long)count, partner, tag, N);
}

/* The int side of a case: receive salt/tag from the partner, send ours. */
static void int_side(MPI_Comm comm, int salt, int tag, const char *what) {
  int out[N], in[N];
  MPI_Request r;
  MPI_Status st;
  fill(out, salt);
  MPI_Irecv(in, N, MPI_INT, partner, tag, comm, &r);
  MPI_Send(out, N, MPI_INT, partner, tag, comm);
  wait_or_abort(&r, &st, what);
  expect(what, in, salt, &st, tag);
}

static void run(MPI_Comm comm, int wild, const char *name) {
  const int src = wild ? MPI_ANY_SOURCE : partner;
  int out[N], in[N];
  MPI_Request r, rs[2];
  MPI_Status st;
  char what[128];
  for (int round = 0; round < 2; round++) {
    /* Each round one rank of the pair uses the _c calls, the other the int
     * calls; then the roles swap. */
    const int large = (round == 0) == even;
    int salt = 10 * round;
#define CASE(desc)                                                                       \
  snprintf(what, sizeof what, "%s: %s (%s side)", name, desc, large ? "_c" : "int"); \
  salt++;                                                                                \
  if (!large) {                                                                          \
    int_side(comm, salt, salt, what);                                                    \
  } else

#ifdef MPIX_HAVE_MPI_ISENDRECV
    CASE("MPI_Isendrecv_c") {
      fill(out, salt);
      MPI_Isendrecv_c(out, N, MPI_INT, partner, salt, in, N, MPI_INT, src, salt, comm, &r);
      wait_or_abort(&r, &st, what);
      expect(what, in, salt, &st, salt);
    }
    CASE("MPI_Isendrecv_replace_c") {
      fill(in, salt);
      MPI_Isendrecv_replace_c(in, N, MPI_INT, partner, salt, src, salt, comm, &r);
      wait_or_abort(&r, &st, what);
      expect(what, in, salt, &st, salt);
    }
#endif
    CASE("MPI_Sendrecv_c") {
      fill(out, salt);
      MPI_Sendrecv_c(out, N, MPI_INT, partner, salt, in, N, MPI_INT, src, salt, comm, &st);
      expect(what, in, salt, &st, salt);
    }
    CASE("MPI_Sendrecv_replace_c") {
      fill(in, salt);
      MPI_Sendrecv_replace_c(in, N, MPI_INT, partner, salt, src, salt, comm, &st);
      expect(what, in, salt, &st, salt);
    }
    CASE("MPI_Irecv_c + MPI_Send_c") {
      fill(out, salt);
      MPI_Irecv_c(in, N, MPI_INT, src, salt, comm, &r);
      MPI_Send_c(out, N, MPI_INT, partner, salt, comm);
      wait_or_abort(&r, &st, what);
      expect(what, in, salt, &st, salt);
    }
    CASE("MPI_Isend_c + MPI_Recv_c") {
      fill(out, salt);
      MPI_Isend_c(out, N, MPI_INT, partner, salt, comm, &r);
      MPI_Recv_c(in, N, MPI_INT, src, salt, comm, &st);
      expect(what, in, salt, &st, salt);
      wait_or_abort(&r, MPI_STATUS_IGNORE, what);
    }
    CASE("MPI_Issend_c + MPI_Irecv_c") {
      fill(out, salt);
      MPI_Irecv_c(in, N, MPI_INT, src, salt, comm, &rs[0]);
      MPI_Issend_c(out, N, MPI_INT, partner, salt, comm, &rs[1]);
      wait_or_abort(&rs[1], MPI_STATUS_IGNORE, what);
      wait_or_abort(&rs[0], &st, what);
      expect(what, in, salt, &st, salt);
    }
    CASE("MPI_Recv_init_c + MPI_Send_init_c") {
      fill(out, salt);
      MPI_Recv_init_c(in, N, MPI_INT, src, salt, comm, &rs[0]);
      MPI_Send_init_c(out, N, MPI_INT, partner, salt, comm, &rs[1]);
      MPI_Startall(2, rs);
      wait_or_abort(&rs[1], MPI_STATUS_IGNORE, what);
      wait_or_abort(&rs[0], &st, what);
      expect(what, in, salt, &st, salt);
      MPI_Request_free(&rs[0]);
      MPI_Request_free(&rs[1]);
    }
    CASE("MPI_Mprobe + MPI_Mrecv_c") {
      MPI_Message msg;
      fill(out, salt);
      MPI_Isend(out, N, MPI_INT, partner, salt, comm, &r);
      MPI_Mprobe(src, salt, comm, &msg, &st);
      MPI_Mrecv_c(in, N, MPI_INT, &msg, &st);
      expect(what, in, salt, &st, salt);
      wait_or_abort(&r, MPI_STATUS_IGNORE, what);
    }
    CASE("MPI_Mprobe + MPI_Imrecv_c") {
      MPI_Message msg;
      fill(out, salt);
      MPI_Isend(out, N, MPI_INT, partner, salt, comm, &rs[1]);
      MPI_Mprobe(src, salt, comm, &msg, &st);
      MPI_Imrecv_c(in, N, MPI_INT, &msg, &rs[0]);
      wait_or_abort(&rs[0], &st, what);
      expect(what, in, salt, &st, salt);
      wait_or_abort(&rs[1], MPI_STATUS_IGNORE, what);
    }
#undef CASE
  }
}
#endif /* MPIX_HAVE_MPI_LARGE_COUNT */

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
#ifndef MPIX_HAVE_MPI_LARGE_COUNT
  mtest_not_checked("the large-count (_c) calls, all of this test (MPI-4, not in this MPI library)");
  return mtest_finalize();
#else
#ifndef MPIX_HAVE_MPI_ISENDRECV
  mtest_not_checked("MPI_Isendrecv_c, MPI_Isendrecv_replace_c (MPI_Isendrecv is not in this MPI library)");
#endif
  int size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  partner = (rank ^ 1) < size ? (rank ^ 1) : MPI_PROC_NULL;
  even = rank % 2 == 0;

  MPI_Comm nw;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  mtest_check_handled(nw, "MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD)");
  if (partner != MPI_PROC_NULL) run(nw, 0, "no-wildcard communicator");
  MPI_Comm_free(&nw);

  int world = 0;
  MPIX_Comm_is_handled(MPI_COMM_WORLD, &world);
  const char *intercept = getenv("MPIX_INTERCEPT");
  if (intercept && strcmp(intercept, "all") == 0) mtest_check_handled(MPI_COMM_WORLD, "MPI_COMM_WORLD");
  if (world && partner != MPI_PROC_NULL) run(MPI_COMM_WORLD, 1, "MPI_COMM_WORLD (MPIX_INTERCEPT=all)");
  return mtest_finalize();
#endif
}
