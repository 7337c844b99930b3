#include "region_batch.h"

#include <algorithm>
#include <memory>

#include "device/match_gpu.h"

namespace mpix::p2p {
namespace {

struct State {
  match::BatchScratch cpu;
  device::GpuMatchScratch gpu;
  std::vector<match::BatchPair> pairs;
  std::vector<std::uint32_t> unmatched_arrivals, unmatched_receives;
  int gpu_usable = -1;  // unknown until the first large batch
};

std::size_t g_threshold = 1048576;
std::size_t g_batch_min = 16384;
RegionBatchStats g_stats;
// Made on first use, gone at MPI_Finalize: the GPU memory must go while the
// CUDA runtime is still up, not at static destruction.
std::unique_ptr<State> g_state;

}  // namespace

void region_batch_configure(std::size_t gpu_threshold, std::size_t batch_min) {
  g_threshold = gpu_threshold;
  g_batch_min = batch_min;
}

std::size_t region_batch_min() { return g_batch_min; }

RegionBatchView region_batch_match(const std::vector<match::BatchItem> &arrivals,
                                   const std::vector<match::BatchItem> &receives) {
  if (!g_state) g_state = std::make_unique<State>();
  State &s = *g_state;
  const auto n_a = static_cast<std::uint32_t>(arrivals.size());
  const auto n_r = static_cast<std::uint32_t>(receives.size());
  if (s.pairs.size() < std::min(n_a, n_r)) s.pairs.resize(std::min(n_a, n_r));
  if (s.unmatched_arrivals.size() < n_a) s.unmatched_arrivals.resize(n_a);
  if (s.unmatched_receives.size() < n_r) s.unmatched_receives.resize(n_r);
  const match::BatchOutput out{s.pairs.data(), s.unmatched_arrivals.data(), s.unmatched_receives.data()};
  match::BatchCounts c{};
  bool on_gpu = false;
  if (g_threshold > 0 && std::size_t{n_a} + n_r >= g_threshold) {
    if (s.gpu_usable < 0) s.gpu_usable = device::gpu_match_available() ? 1 : 0;
    if (s.gpu_usable == 1) {
      on_gpu = device::gpu_match_batch_fifo(arrivals.data(), n_a, receives.data(), n_r, out, &c, s.gpu) ==
               device::Status::kOk;
      // A GPU that failed once (out of memory, say) is not asked again.
      if (!on_gpu) {
        ++g_stats.gpu_errors;
        s.gpu_usable = 0;
      }
    }
  }
  if (!on_gpu) c = match::match_batch_fifo(arrivals.data(), n_a, receives.data(), n_r, out, s.cpu);
  ++g_stats.batches;
  if (on_gpu) {
    ++g_stats.gpu_batches;
    g_stats.pairs_gpu += c.pairs;
  } else {
    g_stats.pairs_cpu += c.pairs;
  }
  return RegionBatchView{s.pairs.data(), c.pairs, s.unmatched_arrivals.data(), c.unmatched_arrivals,
                         s.unmatched_receives.data(), c.unmatched_receives};
}

void region_batch_note_sequential(std::uint64_t entries) { g_stats.sequential += entries; }

void region_batch_note_direct(std::uint64_t entries) { g_stats.direct += entries; }

RegionBatchStats region_batch_stats() { return g_stats; }

void region_batch_release() { g_state.reset(); }

}  // namespace mpix::p2p
