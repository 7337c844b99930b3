// MPI_Init, MPI_Init_thread and MPI_Finalize: where the library attaches to
// and detaches from the MPI library underneath.
//
// Thread levels: the liveness thread (MPI's progress rule on mpix's
// communicators) and the progress thread of GPU streams call MPI
// concurrently with the application, so they need MPI_THREAD_MULTIPLE from
// the MPI library. By default (MPIX_PROGRESS_THREAD=auto, or 1) mpix asks
// for it at every MPI_Init, paying MPICH's locks on every call for a
// program that keeps its progress guarantees; the application is still told
// the level it asked for (MPI_Query_thread agrees). With
// MPIX_PROGRESS_THREAD=0 mpix asks only for what the application asks: GPU
// streams then work only if that was MPI_THREAD_MULTIPLE (else
// MPIX_ERR_NO_THREAD), and no liveness thread runs (src/mpi/runtime.cc).
#include <mpi.h>

#include <algorithm>

#include "runtime.h"
#include "src/visibility.h"

namespace {

int start_after_pmpi_init(int rc, int app_level) {
  if (rc != MPI_SUCCESS) return rc;
  int underlying = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&underlying);
  return mpix::runtime_start(std::min(app_level, underlying), underlying);
}

}  // namespace

MPIX_INTERCEPT int MPI_Init(int *argc, char ***argv) {
  if (!mpix::runtime_wants_thread_multiple()) {
    const int rc = PMPI_Init(argc, argv);
    int level = MPI_THREAD_SINGLE;
    if (rc == MPI_SUCCESS) PMPI_Query_thread(&level);
    return start_after_pmpi_init(rc, level);
  }
  // MPI_Init gives the MPI library's default level, MPI_THREAD_SINGLE.
  int underlying = MPI_THREAD_SINGLE;
  return start_after_pmpi_init(PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &underlying), MPI_THREAD_SINGLE);
}

MPIX_INTERCEPT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  if (!mpix::runtime_wants_thread_multiple()) {
    const int rc = PMPI_Init_thread(argc, argv, required, provided);
    return start_after_pmpi_init(rc, rc == MPI_SUCCESS ? *provided : MPI_THREAD_SINGLE);
  }
  int underlying = MPI_THREAD_SINGLE;
  const int rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &underlying);
  // What the library would have given for `required`: at most what it has.
  if (rc == MPI_SUCCESS) *provided = std::min(required, underlying);
  return start_after_pmpi_init(rc, rc == MPI_SUCCESS ? *provided : MPI_THREAD_SINGLE);
}

MPIX_INTERCEPT int MPI_Query_thread(int *provided) {
  if (provided == nullptr || !mpix::runtime_active()) return PMPI_Query_thread(provided);
  *provided = mpix::runtime().thread_provided;
  return MPI_SUCCESS;
}

MPIX_INTERCEPT int MPI_Finalize(void) {
  mpix::runtime_stop();
  return PMPI_Finalize();
}
