// mpix's own MPI_T performance variables: what each one counts and how to
// read it. The control variables are the MPIX_* settings themselves
// (src/config.h); src/mpi/mpit.cc puts both beside the MPI library's variables.
#ifndef MPIX_SRC_MPI_MPIT_VARS_H
#define MPIX_SRC_MPI_MPIT_VARS_H

#include <cstdint>

namespace mpix::mpit {

// Every value the performance variables show, read at one instant.
struct Sample {
  std::uint64_t matches, unexpected_now, posted_now, unexpected_max, unexpected_inline;
  std::uint64_t eager_sent, rendezvous_sent, arrivals, sync_acks, credit_stalls, shm_ring;
  std::uint64_t region_batches, region_gpu_batches, region_pairs_cpu, region_pairs_gpu, region_sequential,
      region_direct;
  std::uint64_t gpu_eager, gpu_ipc, gpu_staged, gpu_host_rendezvous, gpu_pageable, gpu_native_staged, gpu_kernel_copies;
  std::uint64_t single_copy_reads, single_copy_writes, single_copy_bytes, single_copy_failures, peer_exits;
  std::uint64_t stream_gpu_run, stream_host_driven, stream_pulled;
  std::uint64_t malformed;
  std::uint64_t lock_fast_takes, lock_revocations;
  std::uint64_t lane_messages, lane_marks;
};

struct Pvar {
  const char *name;
  int var_class;  // MPI_T_PVAR_CLASS_COUNTER, _LEVEL or _HIGHWATERMARK
  const char *desc;
  std::uint64_t Sample::*field;
};

// The table; count in *n.
const Pvar *pvars(int *n);

// Takes the engine lock (never held while user code runs, so any thread
// may call this, before MPI_Init and after MPI_Finalize too).
Sample sample_now();

// "counter", "level", "highwatermark".
const char *class_name(int var_class);

}  // namespace mpix::mpit

#endif
