/* MPI_Comm_free of MPI_COMM_WORLD or MPI_COMM_SELF is erroneous: with
 * MPI_ERRORS_RETURN the MPI library returns an error and the communicator
 * stays as it was. mpix must leave them as they were
 * too: still handled, with messages sent before the call received after it
 * (mpi4py's test_exceptions does this; mpix used to take the communicator
 * out of its table first, so that its later traffic bypassed the engine
 * while messages already sent through the engine were left there).
 * Run with MPIX_INTERCEPT=all: fails unless mpix carries both
 * communicators. (MPI_Comm_disconnect of them is erroneous too, but MPICH
 * 4.0.2 does not detect it and later fails an assertion in MPI_Finalize.) */
#include "mpix.h"
#include "mtest.h"

static int handled(MPI_Comm comm) {
  int flag = 0;
  MPIX_Comm_is_handled(comm, &flag);
  return flag;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mtest_check_handled(MPI_COMM_WORLD, "MPI_COMM_WORLD");
  mtest_check_handled(MPI_COMM_SELF, "MPI_COMM_SELF");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

  /* Messages on their way through the engine while the erroneous calls run:
   * to the next rank on MPI_COMM_WORLD, to itself on MPI_COMM_SELF. */
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int out_w = 1000 + rank, out_s = 2000 + rank, in_w = -1, in_s = -1;
  MPI_Request reqs[2];
  MPI_Isend(&out_w, 1, MPI_INT, next, 7, MPI_COMM_WORLD, &reqs[0]);
  MPI_Isend(&out_s, 1, MPI_INT, 0, 8, MPI_COMM_SELF, &reqs[1]);

  struct {
    const char *what;
    MPI_Comm comm;
  } calls[] = {{"MPI_Comm_free(MPI_COMM_WORLD)", MPI_COMM_WORLD}, {"MPI_Comm_free(MPI_COMM_SELF)", MPI_COMM_SELF}};
  for (int i = 0; i < 2; i++) {
    MPI_Comm c = calls[i].comm;
    const int rc = MPI_Comm_free(&c);
    MTEST_CHECK(rc != MPI_SUCCESS, "%s succeeded", calls[i].what);
    MTEST_CHECK(c == calls[i].comm, "%s changed the handle", calls[i].what);
    MTEST_CHECK(handled(calls[i].comm), "after %s, the communicator is no longer handled by mpix", calls[i].what);
  }

  /* Receive only where both are still handled everywhere: otherwise the
   * receive would bypass the engine that holds the message, and hang. */
  int ok = handled(MPI_COMM_WORLD) && handled(MPI_COMM_SELF), all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all_ok) {
    MPI_Status st;
    MPI_Recv(&in_w, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st);
    MTEST_CHECK(in_w == 1000 + prev && st.MPI_SOURCE == prev, "MPI_COMM_WORLD: got %d from %d, expected %d from %d",
                in_w, st.MPI_SOURCE, 1000 + prev, prev);
    MPI_Recv(&in_s, 1, MPI_INT, 0, 8, MPI_COMM_SELF, &st);
    MTEST_CHECK(in_s == 2000 + rank, "MPI_COMM_SELF: got %d, expected %d", in_s, 2000 + rank);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    /* And traffic after the calls. */
    int v = rank, w = -1;
    MPI_Sendrecv(&v, 1, MPI_INT, next, 9, &w, 1, MPI_INT, prev, 9, MPI_COMM_WORLD, &st);
    MTEST_CHECK(w == prev, "MPI_Sendrecv after the calls: got %d, expected %d", w, prev);
  } else {
    MTEST_CHECK(0, "the messages sent before the calls are skipped (a receive would hang)");
    MPI_Abort(MPI_COMM_WORLD, 1); /* the sends cannot complete */
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  return mtest_finalize();
}
