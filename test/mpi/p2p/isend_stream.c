/* A sender that outruns its receiver with MPI_Isend + MPI_Test, each request
 * completing before the next send: 600000 small messages (more than MPICH's
 * request pool holds, 262144) from every rank but 0 to rank 0, which
 * receives them the same way and checks order and content. mpix completes
 * an eager send's request when it has copied the message, so each send's
 * underlying transfer outlives the user's request; unbounded, those
 * transfers exhausted MPI's requests (an assertion inside MPI_Isend). Env
 * MPIX_TEST_STREAM_N overrides the count. Fails unless mpix carries its
 * no-wildcard communicator (mtest_check_handled). */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

static void stream(MPI_Comm comm, const char *name, long n) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  long bad = 0;
  for (long i = 0; i < n; ++i) {
    for (int src = 1; src < size; ++src) {
      if (rank != 0 && rank != src) continue;
      long v[2] = {src, i};
      MPI_Request r;
      int flag = 0;
      if (rank == 0) MPI_Irecv(v, 2, MPI_LONG, src, (int)(i % 5), comm, &r);
      else MPI_Isend(v, 2, MPI_LONG, 0, (int)(i % 5), comm, &r);
      while (!flag) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
      if (rank == 0 && (v[0] != src || v[1] != i) && bad++ == 0)
        MTEST_CHECK(0, "%s: message %ld from %d carried (%ld, %ld)", name, i, src, v[0], v[1]);
    }
  }
  MTEST_CHECK(bad == 0, "%s: %ld messages wrong", name, bad);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const char *e = getenv("MPIX_TEST_STREAM_N");
  const long n = e && atol(e) > 0 ? atol(e) : 600000;
  MPI_Comm nw;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  mtest_check_handled(nw, "MPIX_Comm_dup_nowildcard");
  stream(nw, "no-wildcard communicator", n);
  MPI_Comm_free(&nw);
  stream(MPI_COMM_WORLD, "MPI_COMM_WORLD", n / 10);
  return mtest_finalize();
}
