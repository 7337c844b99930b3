// Batch matching on the GPU: match_batch_fifo and match_batch_unordered of
// match/batch.h with the same types and the same contract (maximal,
// equal keys, nothing matched twice, unmatched indexes in input order;
// fifo: the i-th arrival of a key pairs with the i-th receive of that key).
// Host-only interface: match_gpu.cu implements it with CUDA, and
// match_gpu_none.cc answers Status::kNoCuda in builds without it, so that
// callers fall back to the CPU functions.
//
// Algorithm (papers/000 ch. 6.3.2, with the thesis' "preprocessing" of equal
// keys done by a sort): every key of the batch goes into an open-addressing
// table (linear probing, one CAS per new key), which names each distinct key
// by its slot; a stable radix sort on the slot number (only as many bits as
// the table has) puts each key's arrivals, then its receives, side by side
// in input order, and the k-th arrival of a segment pairs with the k-th
// receive. Equal keys cost nothing extra (no atomics on hot slots), so
// multiplicity only changes the number of segments. Unmatched entries are
// compacted by a prefix sum, which keeps their order.
//
// The two variants differ only in which receive of a segment the k-th
// arrival takes: the k-th (fifo) or the k-th from the end (unordered, so
// callers cannot come to rely on an order, as with the CPU version).
#ifndef MPIX_DEVICE_MATCH_GPU_H
#define MPIX_DEVICE_MATCH_GPU_H

#include <cstddef>
#include <cstdint>
#include <memory>

#include "match/batch.h"
#include "status.h"

namespace mpix::device {

// Device memory of the GPU matcher (table, sort buffers, staging copies of
// host batches), grown to the largest batch seen and reused: no cudaMalloc
// per batch once warm. One per thread; it lives on the device that was
// current when it first grew.
class GpuMatchScratch {
 public:
  GpuMatchScratch();
  ~GpuMatchScratch();
  GpuMatchScratch(const GpuMatchScratch &) = delete;
  GpuMatchScratch &operator=(const GpuMatchScratch &) = delete;
  std::size_t bytes() const;  // device memory held
  void release();             // gives it back
  struct Impl;
  Impl *impl() { return impl_.get(); }

 private:
  std::unique_ptr<Impl> impl_;
};

// Whether this process can match on a GPU (built with CUDA and one visible).
bool gpu_match_available();

// Largest batch side the GPU matcher takes (n_arrivals + n_receives must
// stay below it: item numbers are 32 bits with one value reserved).
inline constexpr std::uint32_t kGpuMatchMaxItems = 0xfffffff0u;

// Host arrays in and out (out as for the CPU functions). Return kOk and
// fill *counts, or a failure (kCudaError, status_string() names it; kNoCuda
// in a build without CUDA), in which case the caller matches on the CPU.
Status gpu_match_batch_fifo(const match::BatchItem *arrivals, std::uint32_t n_arrivals,
                            const match::BatchItem *receives, std::uint32_t n_receives, const match::BatchOutput &out,
                            match::BatchCounts *counts, GpuMatchScratch &scratch);
Status gpu_match_batch_unordered(const match::BatchItem *arrivals, std::uint32_t n_arrivals,
                                 const match::BatchItem *receives, std::uint32_t n_receives,
                                 const match::BatchOutput &out, match::BatchCounts *counts, GpuMatchScratch &scratch);

// Device-resident variants: arrivals, receives and the three arrays of out
// are device memory; the work is queued on `stream` (a cudaStream_t, nullptr
// for the legacy default stream) and the call returns once *counts (host
// memory) is known, i.e. when the stream has run it. No host copies of the
// batch: what a benchmark times here is the matching alone.
Status gpu_match_batch_fifo_device(const match::BatchItem *arrivals, std::uint32_t n_arrivals,
                                   const match::BatchItem *receives, std::uint32_t n_receives,
                                   const match::BatchOutput &out, match::BatchCounts *counts, GpuMatchScratch &scratch,
                                   void *stream);
Status gpu_match_batch_unordered_device(const match::BatchItem *arrivals, std::uint32_t n_arrivals,
                                        const match::BatchItem *receives, std::uint32_t n_receives,
                                        const match::BatchOutput &out, match::BatchCounts *counts,
                                        GpuMatchScratch &scratch, void *stream);

}  // namespace mpix::device

#endif
