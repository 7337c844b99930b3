// Process-wide state of the library between MPI_Init and MPI_Finalize: what
// every layer reads (the settings in force, the thread levels, the ranks).
// Only the start and stop of the library (src/mpi/runtime.cc, above the
// engine) writes it; it lives down here so that src/errors.cc and the
// layers above read it without depending on what starts the engine.
#ifndef MPIX_SRC_RUNTIME_STATE_H
#define MPIX_SRC_RUNTIME_STATE_H

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
  std::atomic<std::uint64_t> pulled{0};       // GPU-run sends the receiver pulled (one copy)
};
StreamStats &stream_stats();

// For runtime_start and runtime_stop (src/mpi/runtime.cc) only.
Runtime &runtime_mutable();
void runtime_set_active(bool active);

}  // namespace mpix

#endif
