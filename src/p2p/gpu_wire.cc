#include "gpu_wire.h"

#include <cstring>

namespace mpix::p2p {

WireError decode_gpu_rts(const void *p, std::size_t n, std::uint64_t bytes, GpuRts *out) {
  if (n < sizeof(GpuRts)) return WireError::kTruncated;
  if (n > sizeof(GpuRts)) return WireError::kBadLength;
  GpuRts r;
  std::memcpy(&r, p, sizeof r);
  if ((r.flags & ~kRtsIpc) != 0) return WireError::kBadFlags;
  if (r.reserved != 0) return WireError::kBadField;
  if (r.device < 0) return WireError::kBadField;
  if ((r.flags & kRtsIpc) != 0 && (r.offset > r.size || bytes > r.size - r.offset)) return WireError::kBadSize;
  *out = r;
  return WireError::kOk;
}

WireError decode_gpu_reply(const void *p, std::size_t n, bool ipc_offered, GpuReply *out) {
  if (n < sizeof(GpuReply)) return WireError::kTruncated;
  if (n > sizeof(GpuReply)) return WireError::kBadLength;
  GpuReply r;
  std::memcpy(&r, p, sizeof r);
  if (r.reserved != 0) return WireError::kBadField;
  if (r.mode == kReplyDone) {
    if (!ipc_offered) return WireError::kBadKind;
    if (r.chunk != 0) return WireError::kBadField;
  } else if (r.mode == kReplyStage) {
    if (r.chunk < kMinChunk || r.chunk > kMaxChunk) return WireError::kBadSize;
  } else {
    return WireError::kBadKind;
  }
  *out = r;
  return WireError::kOk;
}

}  // namespace mpix::p2p
