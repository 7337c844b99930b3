// The GPU rendezvous's descriptor and reply decoding (src/p2p/gpu_wire.h):
// a valid encoding decodes to itself, every truncation is rejected, and
// each field out of range is rejected by the check that names it.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "src/p2p/gpu_wire.h"

namespace {

using namespace mpix::p2p;

GpuRts ipc_rts() {
  GpuRts r{};
  r.host = 0x1234;
  r.pid = 42;
  r.device = 1;
  r.base = 0x7f0000000000;
  r.size = 1 << 20;
  r.offset = 4096;
  r.flags = kRtsIpc;
  for (std::size_t i = 0; i < sizeof r.handle; ++i) r.handle[i] = static_cast<unsigned char>(i);
  return r;
}

// Decodes the first n bytes of r (padded with zeros beyond sizeof r) from a
// buffer of exactly n bytes, so that reading further is an ASan error.
WireError decode(const GpuRts &r, std::size_t n, std::uint64_t bytes, GpuRts *out) {
  std::vector<unsigned char> b(sizeof r + 8, 0);
  std::memcpy(b.data(), &r, sizeof r);
  std::vector<unsigned char> cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
  return decode_gpu_rts(cut.data(), n, bytes, out);
}

TEST(GpuRts, RoundTrips) {
  const GpuRts r = ipc_rts();
  GpuRts out{};
  ASSERT_EQ(decode(r, sizeof r, r.size - r.offset, &out), WireError::kOk);
  EXPECT_EQ(std::memcmp(&out, &r, sizeof r), 0);
  // Staged (no handle): address fields are not used, so not checked.
  GpuRts staged{};
  staged.device = 0;
  ASSERT_EQ(decode(staged, sizeof staged, 1ull << 40, &out), WireError::kOk);
}

TEST(GpuRts, EveryTruncationAndExtensionIsRejected) {
  GpuRts out{};
  for (std::size_t n = 0; n < sizeof(GpuRts); ++n) EXPECT_EQ(decode(ipc_rts(), n, 1, &out), WireError::kTruncated) << n;
  EXPECT_EQ(decode(ipc_rts(), sizeof(GpuRts) + 1, 1, &out), WireError::kBadLength);
}

TEST(GpuRts, BadFieldsAreRejected) {
  GpuRts out{};
  GpuRts r = ipc_rts();
  r.flags = 2;
  EXPECT_EQ(decode(r, sizeof r, 1, &out), WireError::kBadFlags);
  r = ipc_rts();
  r.reserved = 1;
  EXPECT_EQ(decode(r, sizeof r, 1, &out), WireError::kBadField);
  r = ipc_rts();
  r.device = -1;
  EXPECT_EQ(decode(r, sizeof r, 1, &out), WireError::kBadField);
}

TEST(GpuRts, DataOutsideTheAllocationIsRejected) {
  GpuRts out{};
  GpuRts r = ipc_rts();
  // One byte more than the allocation holds after the offset.
  EXPECT_EQ(decode(r, sizeof r, r.size - r.offset + 1, &out), WireError::kBadSize);
  r.offset = r.size + 1;
  EXPECT_EQ(decode(r, sizeof r, 0, &out), WireError::kBadSize);
  // offset + bytes wraps around: must not pass as small.
  r = ipc_rts();
  EXPECT_EQ(decode(r, sizeof r, ~0ull - r.offset + 2, &out), WireError::kBadSize);
  r.offset = r.size;
  EXPECT_EQ(decode(r, sizeof r, 0, &out), WireError::kOk);
}

WireError decode(const GpuReply &r, std::size_t n, bool ipc, GpuReply *out) {
  std::vector<unsigned char> b(sizeof r + 8, 0);
  std::memcpy(b.data(), &r, sizeof r);
  std::vector<unsigned char> cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
  return decode_gpu_reply(cut.data(), n, ipc, out);
}

TEST(GpuReply, RoundTrips) {
  for (const GpuReply r : {GpuReply{kReplyDone, 0, 0}, GpuReply{kReplyStage, 0, 4 << 20}}) {
    GpuReply out{};
    ASSERT_EQ(decode(r, sizeof r, true, &out), WireError::kOk);
    EXPECT_EQ(std::memcmp(&out, &r, sizeof r), 0);
  }
  GpuReply out{};
  EXPECT_EQ(decode(GpuReply{kReplyStage, 0, kMinChunk}, sizeof(GpuReply), false, &out), WireError::kOk);
  EXPECT_EQ(decode(GpuReply{kReplyStage, 0, kMaxChunk}, sizeof(GpuReply), false, &out), WireError::kOk);
}

TEST(GpuReply, EveryTruncationAndExtensionIsRejected) {
  GpuReply out{};
  const GpuReply r{kReplyStage, 0, 1 << 20};
  for (std::size_t n = 0; n < sizeof r; ++n) EXPECT_EQ(decode(r, n, true, &out), WireError::kTruncated) << n;
  EXPECT_EQ(decode(r, sizeof r + 1, true, &out), WireError::kBadLength);
}

TEST(GpuReply, BadFieldsAreRejected) {
  GpuReply out{};
  const std::size_t n = sizeof(GpuReply);
  EXPECT_EQ(decode(GpuReply{0, 0, 4096}, n, true, &out), WireError::kBadKind);
  EXPECT_EQ(decode(GpuReply{3, 0, 4096}, n, true, &out), WireError::kBadKind);
  // "Done" to a sender that offered no handle: no data would ever move.
  EXPECT_EQ(decode(GpuReply{kReplyDone, 0, 0}, n, false, &out), WireError::kBadKind);
  EXPECT_EQ(decode(GpuReply{kReplyDone, 0, 4096}, n, true, &out), WireError::kBadField);
  EXPECT_EQ(decode(GpuReply{kReplyStage, 1, 4096}, n, true, &out), WireError::kBadField);
  EXPECT_EQ(decode(GpuReply{kReplyStage, 0, 0}, n, true, &out), WireError::kBadSize);
  EXPECT_EQ(decode(GpuReply{kReplyStage, 0, kMinChunk - 1}, n, true, &out), WireError::kBadSize);
  EXPECT_EQ(decode(GpuReply{kReplyStage, 0, kMaxChunk + 1}, n, true, &out), WireError::kBadSize);
}

}  // namespace
