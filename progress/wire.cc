#include "wire.h"

#include <atomic>
#include <cstdio>
#include <cstring>

namespace mpix::progress {
namespace {
std::atomic<std::uint64_t> g_malformed{0};
}  // namespace

const char *wire_error_string(WireError e) {
  switch (e) {
    case WireError::kOk: return "no error";
    case WireError::kTruncated: return "truncated";
    case WireError::kBadLength: return "wrong length";
    case WireError::kBadKind: return "unknown or misplaced kind";
    case WireError::kBadFlags: return "invalid flags";
    case WireError::kBadTag: return "tag out of range";
    case WireError::kBadDataTag: return "data tag out of range";
    case WireError::kBadSize: return "sizes disagree";
    case WireError::kBadRank: return "rank out of range";
    case WireError::kBadField: return "reserved field not zero";
  }
  return "unknown error";
}

WireError check_header_full(const WireHeader &h, std::size_t payload_bytes, const WireLimits &limits) {
  if (h.kind < kEager || h.kind > kGpuReply) return WireError::kBadKind;
  if ((h.flags & ~(kFlagSyncAck | kFlagGpuChunk)) != 0) return WireError::kBadFlags;
  if ((h.flags & kFlagGpuChunk) != 0) {
    if (h.kind != kRendezvous || (h.flags & kFlagSyncAck) != 0) return WireError::kBadFlags;
    if (h.tag != 0) return WireError::kBadField;
  }
  // Eager messages are acknowledged at the match, single-copy ones after
  // the read (always); the others complete through their own handshake.
  const bool acked = (h.flags & kFlagSyncAck) != 0;
  if (h.kind == kSingleCopy ? !acked : acked && h.kind != kEager) return WireError::kBadFlags;
  if (h.tag < 0 || h.tag > limits.tag_ub) return WireError::kBadTag;
  if (h.kind == kSplitAsk || h.kind == kSplitDone) {
    if (h.tag != 0 || h.data_tag != 0) return WireError::kBadField;
    const std::size_t want = h.kind == kSplitAsk ? sizeof(SplitAsk) : sizeof(SplitDone);
    if (payload_bytes != want || h.bytes != want) return payload_bytes < want ? WireError::kTruncated : WireError::kBadSize;
    return WireError::kOk;
  }
  if (h.kind == kGpuReply) {
    if (h.tag != 0) return WireError::kBadField;
    if (h.data_tag < 0 || h.data_tag >= limits.tag_ub) return WireError::kBadDataTag;
    if (payload_bytes != kGpuReplyBytes || h.bytes != kGpuReplyBytes)
      return payload_bytes < kGpuReplyBytes ? WireError::kTruncated : WireError::kBadSize;
    return WireError::kOk;
  }
  if (h.kind == kEager) return payload_bytes == h.bytes ? WireError::kOk : WireError::kBadSize;
  if (h.kind == kGpuBuffered) {
    if (h.data_tag < 0 || h.data_tag >= limits.tag_ub) return WireError::kBadDataTag;
    return payload_bytes == h.bytes ? WireError::kOk : WireError::kBadSize;
  }
  if (h.kind == kSingleCopy) {
    if (h.data_tag != 0) return WireError::kBadField;
    if (payload_bytes != sizeof(SingleCopyRts))
      return payload_bytes < sizeof(SingleCopyRts) ? WireError::kTruncated : WireError::kBadSize;
    return WireError::kOk;
  }
  // The data tag names the receive the payload goes to (and the GPU
  // rendezvous its reply answers): a valid tag.
  if (h.data_tag < 0 || h.data_tag >= limits.tag_ub) return WireError::kBadDataTag;
  const std::size_t want = h.kind == kGpuRendezvous ? limits.descriptor_bytes : 0;
  if (payload_bytes != want) return payload_bytes < want ? WireError::kTruncated : WireError::kBadSize;
  return WireError::kOk;
}

WireError decode_single_copy(const void *payload, std::size_t n, std::uint64_t bytes, SingleCopyRts *out) {
  if (n < sizeof(SingleCopyRts)) return WireError::kTruncated;
  if (n > sizeof(SingleCopyRts)) return WireError::kBadLength;
  SingleCopyRts d;
  std::memcpy(&d, payload, sizeof d);
  if (d.pid <= 0) return WireError::kBadRank;
  if (d.bytes != bytes || d.addr + d.bytes < d.addr) return WireError::kBadSize;
  *out = d;
  return WireError::kOk;
}

WireError decode_split_ask(const void *payload, std::size_t n, SplitAsk *out) {
  if (n < sizeof(SplitAsk)) return WireError::kTruncated;
  if (n > sizeof(SplitAsk)) return WireError::kBadLength;
  SplitAsk a;
  std::memcpy(&a, payload, sizeof a);
  if (a.offer == 0 || a.ask == 0) return WireError::kBadField;
  if (a.pid <= 0) return WireError::kBadRank;
  if (a.bytes == 0 || a.offset + a.bytes < a.offset || a.dst + a.bytes < a.dst) return WireError::kBadSize;
  *out = a;
  return WireError::kOk;
}

WireError decode_split_done(const void *payload, std::size_t n, SplitDone *out) {
  if (n < sizeof(SplitDone)) return WireError::kTruncated;
  if (n > sizeof(SplitDone)) return WireError::kBadLength;
  SplitDone d;
  std::memcpy(&d, payload, sizeof d);
  if (d.ask == 0 || d.error < 0) return WireError::kBadField;
  *out = d;
  return WireError::kOk;
}

WireError decode_landing(const void *buf, std::size_t got, WireHeader *h, std::size_t *payload_bytes) {
  if (got < sizeof(WireHeader)) return WireError::kTruncated;
  std::memcpy(h, buf, sizeof *h);
  *payload_bytes = got - sizeof(WireHeader);
  return WireError::kOk;
}

void report_malformed(const char *where, int source, WireError e) {
  g_malformed.fetch_add(1, std::memory_order_relaxed);
  std::fprintf(stderr, "[mpix] %s: dropped a malformed message from rank %d: %s\n", where, source,
               wire_error_string(e));
}

std::uint64_t malformed_messages() { return g_malformed.load(std::memory_order_relaxed); }

}  // namespace mpix::progress
