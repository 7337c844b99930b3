/* MPIX calls that need MPI, made before MPI_Init or after MPI_Finalize,
 * return an MPI_ERR_OTHER-class error and explain themselves on stderr
 * instead of crashing; queries that need no MPI work at any time. */
#include "mpix.h"
#include "mtest.h"

int main(int argc, char **argv) {
  int flag = 0, major = 0, minor = 0, patch = 0;
  int rc = MPIX_Comm_is_handled(MPI_COMM_WORLD, &flag);
  MTEST_CHECK(rc == MPI_ERR_OTHER, "before init: rc %d", rc);
  MTEST_CHECK(MPIX_Query_version(&major, &minor, &patch) == MPI_SUCCESS && major == MPIX_VERSION_MAJOR,
              "version query before init");

  MPI_Init(&argc, &argv);
  MTEST_CHECK(mtest_class(rc) == MPI_ERR_OTHER, "class %d", mtest_class(rc));
  int errors = mtest_errors, total = 0, rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();

  rc = MPIX_Comm_is_handled(MPI_COMM_WORLD, &flag);
  if (rc != MPI_ERR_OTHER) total++;
  if (rank == 0) printf(total == 0 ? " No Errors\n" : " Found %d errors\n", total);
  return total != 0;
}
