// MPI_Init, MPI_Init_thread and MPI_Finalize: where the library attaches to
// and detaches from the MPI library underneath.
#include <mpi.h>

#include "runtime.h"
#include "visibility.h"

namespace {

int start_after_pmpi_init(int rc) {
  if (rc != MPI_SUCCESS) return rc;
  int provided = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&provided);
  return mpix::runtime_start(provided);
}

}  // namespace

MPIX_INTERCEPT int MPI_Init(int *argc, char ***argv) { return start_after_pmpi_init(PMPI_Init(argc, argv)); }

MPIX_INTERCEPT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  return start_after_pmpi_init(PMPI_Init_thread(argc, argv, required, provided));
}

MPIX_INTERCEPT int MPI_Finalize(void) {
  mpix::runtime_stop();
  return PMPI_Finalize();
}
