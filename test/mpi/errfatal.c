/* Under MPI_ERRORS_ARE_FATAL (the default on MPI_COMM_WORLD), an error in an
 * MPIX call aborts the job with the library's message: the testlist expects
 * a non-zero exit and the text. */
#include "mpix.h"
#include "mtest.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPIX_Comm_is_handled(MPI_COMM_WORLD, NULL);
  printf("still alive after a fatal error\n");
  MPI_Finalize();
  return 0;
}
