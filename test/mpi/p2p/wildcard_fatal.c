/* Under MPI_ERRORS_ARE_FATAL (what a dup of MPI_COMM_WORLD inherits), a
 * wildcard receive on a no-wildcard communicator aborts the job with the
 * library's message: the testlist expects a non-zero exit and the text.
 * mpix only. */
#include "mpix.h"
#include "mtest.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm nw;
  int buf = 0;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  MPI_Recv(&buf, 1, MPI_INT, MPI_ANY_SOURCE, 0, nw, MPI_STATUS_IGNORE);
  printf("still alive after a fatal error\n");
  MPI_Finalize();
  return 0;
}
