/* A program that ends without MPI_Finalize: after traffic on a handled
 * communicator (so mpix's threads and transport are running), every rank
 * calls exit(0) -- or, with MPIX_TEST_ABORT=N, rank 0 calls
 * MPI_Abort(MPI_COMM_WORLD, N). The process must end with the program's
 * status, not be aborted by the C++ runtime over a thread left running
 * ("terminate called without an active exception"): the testlist rejects
 * that text and checks the exit. A receive that nothing matches is left
 * posted, so the liveness thread keeps polling the communicator while exit()
 * destroys the library's statics (it once polled a freed registry). */
#include <stdio.h>
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm c;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &c);
  mtest_check_handled(c, "MPIX_Comm_dup_nowildcard");
  int out = rank, in = -1;
  MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, 0, &in, 1, MPI_INT, (rank + size - 1) % size, 0, c,
               MPI_STATUS_IGNORE);
  MTEST_CHECK(in == (rank + size - 1) % size, "got %d", in);
  int total = 0;
  MPI_Allreduce(&mtest_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const char *abort_code = getenv("MPIX_TEST_ABORT");
  if (rank == 0) {
    mtest_printf(total == 0 ? " No Errors\n" : " Found %d errors\n", total);
    fflush(stdout);
  }
  /* Without it a rank may exit before rank 0 has printed, and mpiexec, seeing
   * a process end without MPI_Finalize, takes rank 0 down before it prints
   * (seen once in CI at 3 ranks). */
  MPI_Barrier(MPI_COMM_WORLD);
  int never = 0;
  MPI_Request pending;
  MPI_Irecv(&never, 1, MPI_INT, (rank + 1) % size, 999, c, &pending);
  if (abort_code != NULL && rank == 0) MPI_Abort(MPI_COMM_WORLD, atoi(abort_code));
  if (abort_code != NULL) {
    /* The other ranks wait to be taken down by the abort. */
    for (;;) MPI_Barrier(c);
  }
  exit(total != 0);
}
