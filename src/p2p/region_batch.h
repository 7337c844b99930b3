// Batch matching of an unordered region's receives and arrivals (engine.cc
// collects them while a region is open and a batch is forming, see
// P2PComm::region_collects, and matches them at each progress
// step): on the GPU (device/match_gpu.h) when the batch has at least
// MPIX_GPU_MATCH_THRESHOLD entries and a GPU is there, otherwise, or when the
// GPU fails, on the CPU (match/batch.h). Per-key FIFO in both cases:
// the k-th message of a key meets the k-th receive of that key, which is
// what the matcher would have done one by one, so a batch never changes
// which messages a region's receives get. Statistics for MPIX_VERBOSE.
// Called under the engine lock only.
#ifndef MPIX_SRC_P2P_REGION_BATCH_H
#define MPIX_SRC_P2P_REGION_BATCH_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "match/batch.h"

namespace mpix::p2p {

// Results, valid until the next call.
struct RegionBatchView {
  const match::BatchPair *pairs;
  std::uint32_t n_pairs;
  const std::uint32_t *unmatched_arrivals;  // in input order
  std::uint32_t n_unmatched_arrivals;
  const std::uint32_t *unmatched_receives;  // in input order
  std::uint32_t n_unmatched_receives;
};

struct RegionBatchStats {
  std::uint64_t batches = 0;
  std::uint64_t gpu_batches = 0;
  std::uint64_t pairs_cpu = 0;
  std::uint64_t pairs_gpu = 0;
  std::uint64_t sequential = 0;  // region entries matched one by one (see engine.cc)
  std::uint64_t direct = 0;      // region entries matched at once the ordered way (no batch forming)
  std::uint64_t gpu_errors = 0;  // GPU batches that fell back to the CPU
};

// gpu_threshold: fewest entries (arrivals + receives) sent to the GPU; 0:
// never. batch_min: entries (messages and receives) a communicator must hold
// waiting for a region's receive to start a batch (engine.h,
// P2PComm::region_collects).
void region_batch_configure(std::size_t gpu_threshold, std::size_t batch_min);
std::size_t region_batch_min();
RegionBatchView region_batch_match(const std::vector<match::BatchItem> &arrivals,
                                   const std::vector<match::BatchItem> &receives);
void region_batch_note_sequential(std::uint64_t entries);
void region_batch_note_direct(std::uint64_t entries);
RegionBatchStats region_batch_stats();
// Frees the scratch memory, host and GPU (MPI_Finalize).
void region_batch_release();

}  // namespace mpix::p2p

#endif
