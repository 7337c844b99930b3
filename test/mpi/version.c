/* The library answers version queries consistently with its header and
 * attaches to MPI_Init without changing what the application sees. */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int major = -1, minor = -1, patch = -1;
  MTEST_CHECK(MPIX_Query_version(&major, &minor, &patch) == MPI_SUCCESS, "query failed");
  MTEST_CHECK(major == MPIX_VERSION_MAJOR && minor == MPIX_VERSION_MINOR && patch == MPIX_VERSION_PATCH,
              "library %d.%d.%d, header %d.%d.%d", major, minor, patch, MPIX_VERSION_MAJOR,
              MPIX_VERSION_MINOR, MPIX_VERSION_PATCH);

  char lib[MPIX_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MTEST_CHECK(MPIX_Get_library_version(lib, &len) == MPI_SUCCESS, "get_library_version failed");
  MTEST_CHECK(len == (int)strlen(lib), "length %d for \"%s\"", len, lib);
  MTEST_CHECK(strncmp(lib, "mpix " MPIX_VERSION_STRING, strlen("mpix " MPIX_VERSION_STRING)) == 0,
              "unexpected version string \"%s\"", lib);
  char mpi_lib[MPI_MAX_LIBRARY_VERSION_STRING];
  MPI_Get_library_version(mpi_lib, &len);
  MTEST_CHECK(strstr(lib, " over ") != NULL, "no underlying MPI in \"%s\"", lib);

  /* Nothing is handled by the engine unless asked for. */
  int flag = -1;
  MTEST_CHECK(MPIX_Comm_is_handled(MPI_COMM_WORLD, &flag) == MPI_SUCCESS && flag == 0, "world handled=%d",
              flag);
  MTEST_CHECK(MPIX_Comm_is_handled(MPI_COMM_SELF, &flag) == MPI_SUCCESS && flag == 0, "self handled=%d", flag);
  return mtest_finalize();
}
