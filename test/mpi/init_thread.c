/* MPI_Init_thread through the library: the application gets the level the
 * MPI library provides, and MPI_Query_thread agrees. */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

int main(int argc, char **argv) {
  int required = MPI_THREAD_MULTIPLE;
  if (argc > 1) required = atoi(argv[1]);
  int provided = -1, queried = -2, flag = 0;
  MPI_Init_thread(&argc, &argv, required, &provided);
  MPI_Query_thread(&queried);
  MTEST_CHECK(provided == queried, "provided %d, MPI_Query_thread %d", provided, queried);
  MTEST_CHECK(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE, "provided %d", provided);
  MPI_Initialized(&flag);
  MTEST_CHECK(flag, "MPI_Initialized says no");
  return mtest_finalize();
}
