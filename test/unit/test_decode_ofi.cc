// The libfabric transport's frame decoding (progress/ofi/ofi_wire.h): a valid
// encoding decodes to itself, every truncation is rejected, and each field
// out of range is rejected by the check that names it (each case sets
// exactly one field wrong, so removing that check turns the case into a
// pass and the test fails).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "progress/ofi/ofi_wire.h"

namespace {

using namespace mpix::progress;
using namespace mpix::progress::ofi;

constexpr int kWorld = 4;

Envelope message(std::uint64_t bytes) {
  Envelope e{};
  e.frame = kFrameMessage;
  e.link = 3;
  e.source = 1;
  e.world = 2;
  e.seq = 9;
  e.credit = 100;
  e.h = WireHeader{7, kEager, bytes, 0, 0};
  return e;
}

Envelope rendezvous() {
  Envelope e = message(0);
  e.frame = kFrameRendezvous;
  e.h = WireHeader{7, kRendezvous, 1 << 20, 5, 0};
  e.cookie = 11;
  e.addr = 0x7f0000001000;
  e.key = 42;
  return e;
}

// bytes in a buffer of exactly their size (an over-read is an ASan error).
WireError decode(const std::vector<char> &bytes, Frame *out, int world_size = kWorld) {
  const std::vector<char> exact(bytes);
  return decode_frame(exact.data(), exact.size(), world_size, out);
}

std::vector<char> frame(const Envelope &e, std::size_t payload = 0) {
  std::vector<char> b(sizeof e + payload, 'p');
  std::memcpy(b.data(), &e, sizeof e);
  return b;
}

std::vector<char> frame(const Control &c) {
  std::vector<char> b(sizeof c);
  std::memcpy(b.data(), &c, sizeof c);
  return b;
}

std::vector<char> cut(std::vector<char> b, std::size_t n) {
  b.resize(n);
  return b;
}

TEST(OfiFrame, MessagesRoundTrip) {
  Envelope e = message(5);
  Frame f;
  const std::vector<char> b = frame(e, 5);
  ASSERT_EQ(decode_frame(b.data(), b.size(), kWorld, &f), WireError::kOk);
  EXPECT_EQ(f.kind, static_cast<std::uint32_t>(kFrameMessage));
  EXPECT_EQ(std::memcmp(&f.e, &e, sizeof e), 0);
  // The payload is the bytes after the envelope, where they are.
  EXPECT_EQ(f.payload, b.data() + sizeof e);
  EXPECT_EQ(f.payload_bytes, 5u);
  EXPECT_EQ(check_link_arrival(f.e, 2), WireError::kOk);
  EXPECT_EQ(check_header(f.e.h, f.payload_bytes, WireLimits{32767, 112}), WireError::kOk);
  // An acknowledged send carries its cookie.
  e.h.flags = kFlagSyncAck;
  e.cookie = 77;
  ASSERT_EQ(decode(frame(e, 5), &f), WireError::kOk);
  EXPECT_EQ(f.e.cookie, 77u);
}

TEST(OfiFrame, RendezvousRoundTrips) {
  const Envelope e = rendezvous();
  Frame f;
  ASSERT_EQ(decode(frame(e), &f), WireError::kOk);
  EXPECT_EQ(f.kind, static_cast<std::uint32_t>(kFrameRendezvous));
  EXPECT_EQ(std::memcmp(&f.e, &e, sizeof e), 0);
  EXPECT_EQ(f.payload, nullptr);
  EXPECT_EQ(f.payload_bytes, 0u);
  EXPECT_EQ(check_link_arrival(f.e, 2), WireError::kOk);
}

TEST(OfiFrame, ControlsRoundTrip) {
  for (const Control c : {Control{kFrameCredit, 3, 4096, 0, 0}, Control{kFrameSyncAck, 0, 0, 0, 12},
                          Control{kFrameRendezvousDone, 1, 0, 0, 5}}) {
    Frame f;
    ASSERT_EQ(decode(frame(c), &f), WireError::kOk) << c.frame;
    EXPECT_EQ(f.kind, c.frame);
    EXPECT_EQ(std::memcmp(&f.c, &c, sizeof c), 0);
  }
}

TEST(OfiFrame, EveryTruncationIsRejected) {
  Frame f;
  for (const std::vector<char> &b : {frame(message(0)), frame(rendezvous()), frame(Control{kFrameCredit, 3, 1, 0, 0})})
    for (std::size_t n = 0; n < b.size(); ++n) EXPECT_EQ(decode(cut(b, n), &f), WireError::kTruncated) << n;
}

TEST(OfiFrame, NothingFollowsARendezvousOrControl) {
  Frame f;
  std::vector<char> b = frame(rendezvous());
  b.push_back(0);
  EXPECT_EQ(decode(b, &f), WireError::kBadLength);
  b = frame(Control{kFrameSyncAck, 0, 0, 0, 12});
  b.push_back(0);
  EXPECT_EQ(decode(b, &f), WireError::kBadLength);
}

TEST(OfiFrame, UnknownKindsAreRejected) {
  Frame f;
  for (std::uint32_t kind : {0u, 6u, 0xffffffffu}) {
    Envelope e = message(0);
    e.frame = kind;
    EXPECT_EQ(decode(frame(e), &f), WireError::kBadKind) << kind;
  }
}

TEST(OfiFrame, RanksOutOfRangeAreRejected) {
  Frame f;
  for (int world : {-1, kWorld, 1000}) {
    Envelope e = message(0);
    e.world = world;
    EXPECT_EQ(decode(frame(e), &f), WireError::kBadRank) << world;
    Envelope r = rendezvous();
    r.world = world;
    EXPECT_EQ(decode(frame(r), &f), WireError::kBadRank) << world;
    EXPECT_EQ(decode(frame(Control{kFrameCredit, world, 1, 0, 0}), &f), WireError::kBadRank) << world;
  }
  Envelope e = message(0);
  e.source = -1;
  EXPECT_EQ(decode(frame(e), &f), WireError::kBadRank);
}

TEST(OfiFrame, StrayFieldsAreRejected) {
  Frame f;
  Envelope e = message(0);
  e.cookie = 5;  // without kFlagSyncAck
  EXPECT_EQ(decode(frame(e), &f), WireError::kBadField);
  e = message(0);
  e.addr = 1;  // only rendezvous frames name remote memory
  EXPECT_EQ(decode(frame(e), &f), WireError::kBadField);
  e = message(0);
  e.key = 1;
  EXPECT_EQ(decode(frame(e), &f), WireError::kBadField);
  e = rendezvous();
  e.cookie = 0;  // its done could not name it
  EXPECT_EQ(decode(frame(e), &f), WireError::kBadField);
  EXPECT_EQ(decode(frame(Control{kFrameCredit, 3, 1, 1, 0}), &f), WireError::kBadField);
  EXPECT_EQ(decode(frame(Control{kFrameCredit, 3, 1, 0, 9}), &f), WireError::kBadField);
  for (std::uint32_t kind : {kFrameSyncAck, kFrameRendezvousDone}) {
    EXPECT_EQ(decode(frame(Control{kind, 3, 1, 0, 9}), &f), WireError::kBadField) << kind;
    EXPECT_EQ(decode(frame(Control{kind, 3, 0, 0, 0}), &f), WireError::kBadField) << kind;
  }
}

TEST(OfiFrame, LinkArrivalsAreChecked) {
  Envelope e = message(0);
  e.source = 2;
  EXPECT_EQ(check_link_arrival(e, 2), WireError::kBadRank);
  e.source = -1;
  EXPECT_EQ(check_link_arrival(e, 2), WireError::kBadRank);
  // A rendezvous envelope in a message frame (no data to read), and an
  // eager one in a rendezvous frame (data nobody would read).
  e = message(0);
  e.h.kind = kRendezvous;
  EXPECT_EQ(check_link_arrival(e, 2), WireError::kBadKind);
  e = rendezvous();
  e.h.kind = kEager;
  EXPECT_EQ(check_link_arrival(e, 2), WireError::kBadKind);
}

TEST(OfiFrame, DecodingLeavesTheOutputAloneOnError) {
  Frame f;
  f.kind = 99;
  Envelope e = message(0);
  e.world = -1;
  EXPECT_NE(decode(frame(e), &f), WireError::kOk);
  EXPECT_EQ(f.kind, 99u);
}

}  // namespace
