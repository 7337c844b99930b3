/* A program that uses mpix the way an outside project would: through the
 * installed header and library, found by pkg-config or CMake. The device
 * header is included too (as a host program may, for MPIX_Device_comm):
 * it compiles only if every header of include/mpix_device was installed. */
#include <mpix.h>
#include <mpix_device.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int major = 0, minor = 0, patch = 0, flag = 1, rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int ok = MPIX_Query_version(&major, &minor, &patch) == MPI_SUCCESS && major == MPIX_VERSION_MAJOR &&
           minor == MPIX_VERSION_MINOR && MPIX_Comm_is_handled(MPI_COMM_WORLD, &flag) == MPI_SUCCESS;
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rank == 0) printf(all ? " No Errors\n" : " Found errors\n");
  MPI_Finalize();
  return !all;
}
