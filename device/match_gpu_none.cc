// The GPU matcher of a build without CUDA: every call answers kNoCuda, so
// callers match on the CPU (match/batch.h).
#include "match_gpu.h"

namespace mpix::device {

struct GpuMatchScratch::Impl {};

GpuMatchScratch::GpuMatchScratch() = default;
GpuMatchScratch::~GpuMatchScratch() = default;
std::size_t GpuMatchScratch::bytes() const { return 0; }
void GpuMatchScratch::release() {}

bool gpu_match_available() { return false; }

Status gpu_match_batch_fifo(const match::BatchItem *, std::uint32_t, const match::BatchItem *, std::uint32_t,
                            const match::BatchOutput &, match::BatchCounts *, GpuMatchScratch &) {
  return Status::kNoCuda;
}
Status gpu_match_batch_unordered(const match::BatchItem *, std::uint32_t, const match::BatchItem *, std::uint32_t,
                                 const match::BatchOutput &, match::BatchCounts *, GpuMatchScratch &) {
  return Status::kNoCuda;
}
Status gpu_match_batch_fifo_device(const match::BatchItem *, std::uint32_t, const match::BatchItem *, std::uint32_t,
                                   const match::BatchOutput &, match::BatchCounts *, GpuMatchScratch &, void *) {
  return Status::kNoCuda;
}
Status gpu_match_batch_unordered_device(const match::BatchItem *, std::uint32_t, const match::BatchItem *,
                                        std::uint32_t, const match::BatchOutput &, match::BatchCounts *,
                                        GpuMatchScratch &, void *) {
  return Status::kNoCuda;
}

}  // namespace mpix::device
