/* The thread level the application sees is the one it asked for, also when
 * mpix runs the MPI library at MPI_THREAD_MULTIPLE underneath
 * (MPIX_PROGRESS_THREAD=1): MPI_Init_thread's provided and MPI_Query_thread
 * agree. MPIX_TEST_REQUIRED picks the level asked for (default SINGLE);
 * MPIX_TEST_PLAIN_INIT=1 uses MPI_Init (level MPI_THREAD_SINGLE). */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

int main(int argc, char **argv) {
  const char *req = getenv("MPIX_TEST_REQUIRED");
  const char *plain = getenv("MPIX_TEST_PLAIN_INIT");
  int required = req ? atoi(req) : MPI_THREAD_SINGLE;
  int provided = -1, queried = -2;
  if (plain && atoi(plain)) {
    required = MPI_THREAD_SINGLE;
    MPI_Init(&argc, &argv);
    provided = MPI_THREAD_SINGLE;
  } else {
    MPI_Init_thread(&argc, &argv, required, &provided);
  }
  MPI_Query_thread(&queried);
  MTEST_CHECK(provided == required, "asked for %d, provided %d", required, provided);
  MTEST_CHECK(queried == provided, "provided %d, MPI_Query_thread %d", provided, queried);
  return mtest_finalize();
}
