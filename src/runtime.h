// Process-wide state of the library between MPI_Init and MPI_Finalize.
#ifndef MPIX_SRC_RUNTIME_H
#define MPIX_SRC_RUNTIME_H

#include <mpi.h>

#include <atomic>
#include <cstdint>

#include "config.h"

namespace mpix {

struct Runtime {
  Config config;
  int thread_provided = MPI_THREAD_SINGLE;  // what the application was told
  int thread_underlying = MPI_THREAD_SINGLE;  // what the MPI library gave mpix (>= thread_provided)
  int world_rank = 0;
  int world_size = 1;
};

// True between a successful MPI_Init* and MPI_Finalize.
bool runtime_active();

// Valid only while runtime_active().
const Runtime &runtime();

// Who ran the *_enqueue operations of GPU streams (MPIX_VERBOSE statistics,
// and tests asserting the path): kernels on the stream, or the progress
// thread.
struct StreamStats {
  std::atomic<std::uint64_t> gpu_run{0};
  std::atomic<std::uint64_t> host_driven{0};
  std::atomic<std::uint64_t> host_staged{0};  // of those: device data copied on the stream
};
StreamStats &stream_stats();

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
