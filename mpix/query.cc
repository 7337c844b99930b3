// MPIX_Query_version, MPIX_Get_library_version, MPIX_Comm_is_handled.
#include <cstdio>
#include <cstring>

#include "device/gpu.h"
#include "mpix.h"
#include "progress/transport.h"
#include "src/comm_table.h"
#include "src/errors.h"
#include "src/p2p/comms.h"
#include "src/runtime_state.h"

int MPIX_Query_version(int *major, int *minor, int *patch) {
  if (major == nullptr || minor == nullptr || patch == nullptr)
    return mpix::raise_error(MPI_COMM_SELF, mpix::Err::kInvalidArg, __func__);
  *major = MPIX_VERSION_MAJOR;
  *minor = MPIX_VERSION_MINOR;
  *patch = MPIX_VERSION_PATCH;
  return MPI_SUCCESS;
}

int MPIX_Get_library_version(char *version, int *resultlen) {
  if (version == nullptr || resultlen == nullptr)
    return mpix::raise_error(MPI_COMM_SELF, mpix::Err::kInvalidArg, __func__);
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int mpi_len = 0;
  PMPI_Get_library_version(mpi, &mpi_len);
  // Only the first line: MPICH's string continues with its configure options.
  if (char *nl = std::strchr(mpi, '\n')) *nl = '\0';
  const int n = std::snprintf(version, MPIX_MAX_LIBRARY_VERSION_STRING, "mpix %s (cuda: %s, transports: %s) over %s",
                              MPIX_VERSION_STRING, mpix::device::compiled_with_cuda() ? "yes" : "no",
                              mpix::progress::transports_built(), mpi);
  *resultlen = n < MPIX_MAX_LIBRARY_VERSION_STRING ? n : MPIX_MAX_LIBRARY_VERSION_STRING - 1;
  return MPI_SUCCESS;
}

int MPIX_Comm_is_handled(MPI_Comm comm, int *flag) {
  if (!mpix::runtime_active()) return mpix::raise_error(comm, mpix::Err::kNotInitialized, __func__);
  if (comm == MPI_COMM_NULL) return mpix::raise_error(comm, mpix::Err::kInvalidComm, __func__);
  if (flag == nullptr) return mpix::raise_error(comm, mpix::Err::kInvalidArg, __func__);
  // A table entry may only record assertions (MPI_Comm_set_info on a
  // communicator mpix does not carry); handled means its traffic is ours.
  *flag = mpix::p2p::comm_is_handled(comm);
  return MPI_SUCCESS;
}
