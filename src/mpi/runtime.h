// Start and stop of the library: MPI_Init* and MPI_Finalize (init.cc) start
// and stop the engine, the transports and the threads here. The state they
// set, which every layer reads, is src/runtime_state.h.
#ifndef MPIX_SRC_MPI_RUNTIME_H
#define MPIX_SRC_MPI_RUNTIME_H

#include "src/runtime_state.h"

namespace mpix {

// Called by the MPI_Init/MPI_Init_thread/MPI_Finalize hooks after PMPI_Init*
// and before PMPI_Finalize; return MPI error codes.
int runtime_start(int thread_provided, int thread_underlying);

// Whether MPI_Init* should ask the MPI library for MPI_THREAD_MULTIPLE (for
// the progress thread) whatever the application asks: MPIX_PROGRESS_THREAD=1,
// or "auto" in a CUDA build with a GPU visible. Callable before MPI_Init.
bool runtime_wants_thread_multiple();
int runtime_stop();

}  // namespace mpix

#endif
