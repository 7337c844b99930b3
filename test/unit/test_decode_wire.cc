// The envelope checks (progress/wire.h) and the UCX transport's header
// decoding (progress/ucx/ucx_wire.h): a valid encoding decodes to itself, every
// truncation is rejected, and each field out of range is rejected by the
// check that names it (each case sets exactly one field wrong, so removing
// that check turns the case into a pass and the test fails).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "progress/ucx/ucx_wire.h"
#include "progress/wire.h"

namespace {

using namespace mpix::progress;
using namespace mpix::progress::ucx;

constexpr int kTagUb = 32767;
const WireLimits kLimits{kTagUb, 112};

WireHeader eager(std::uint64_t bytes) { return WireHeader{7, kEager, bytes, 0, 0}; }
WireHeader rndv(WireKind kind) { return WireHeader{7, kind, 1 << 20, 5, 0}; }

TEST(WireHeader, ValidEnvelopesPass) {
  EXPECT_EQ(check_header(eager(10), 10, kLimits), WireError::kOk);
  EXPECT_EQ(check_header(eager(0), 0, kLimits), WireError::kOk);
  WireHeader sync = eager(3);
  sync.flags = kFlagSyncAck;
  EXPECT_EQ(check_header(sync, 3, kLimits), WireError::kOk);
  EXPECT_EQ(check_header(rndv(kRendezvous), 0, kLimits), WireError::kOk);
  EXPECT_EQ(check_header(rndv(kGpuRendezvousBare), 0, kLimits), WireError::kOk);
  EXPECT_EQ(check_header(rndv(kGpuRendezvous), 112, kLimits), WireError::kOk);
  WireHeader edge = rndv(kRendezvous);
  edge.tag = kTagUb;
  edge.data_tag = kTagUb - 1;
  EXPECT_EQ(check_header(edge, 0, kLimits), WireError::kOk);
}

TEST(WireHeader, UnknownKindsAreRejected) {
  for (std::uint32_t kind : {0u, kGpuReply + 1, 0xffffffffu}) {
    WireHeader h = rndv(kRendezvous);
    h.kind = kind;
    EXPECT_EQ(check_header(h, 0, kLimits), WireError::kBadKind) << kind;
  }
}

TEST(WireHeader, UnknownFlagsAndMisplacedAcksAreRejected) {
  WireHeader h = eager(1);
  h.flags = 4;  // no such flag
  EXPECT_EQ(check_header(h, 1, kLimits), WireError::kBadFlags);
  for (WireKind k : {kRendezvous, kGpuRendezvousBare}) {
    WireHeader r = rndv(k);
    r.flags = kFlagSyncAck;
    EXPECT_EQ(check_header(r, 0, kLimits), WireError::kBadFlags) << k;
  }
}

TEST(WireHeader, TagsOutsideTheRangeAreRejected) {
  for (int tag : {-1, -2147483647 - 1, kTagUb + 1}) {
    WireHeader h = eager(0);
    h.tag = tag;
    EXPECT_EQ(check_header(h, 0, kLimits), WireError::kBadTag) << tag;
  }
}

TEST(WireHeader, RendezvousDataTagsOutsideTheRangeAreRejected) {
  for (WireKind k : {kRendezvous, kGpuRendezvousBare})
    for (int dt : {-1, kTagUb}) {
      WireHeader h = rndv(k);
      h.data_tag = dt;
      EXPECT_EQ(check_header(h, 0, kLimits), WireError::kBadDataTag) << k << " " << dt;
    }
}

TEST(WireHeader, PayloadsThatDisagreeWithTheEnvelopeAreRejected) {
  EXPECT_EQ(check_header(eager(10), 9, kLimits), WireError::kBadSize);
  EXPECT_EQ(check_header(eager(10), 11, kLimits), WireError::kBadSize);
  EXPECT_EQ(check_header(eager(~0ull), 0, kLimits), WireError::kBadSize);
  EXPECT_EQ(check_header(rndv(kRendezvous), 1, kLimits), WireError::kBadSize);
  EXPECT_EQ(check_header(rndv(kGpuRendezvousBare), 112, kLimits), WireError::kBadSize);
  EXPECT_EQ(check_header(rndv(kGpuRendezvous), 111, kLimits), WireError::kTruncated);
  EXPECT_EQ(check_header(rndv(kGpuRendezvous), 0, kLimits), WireError::kTruncated);
  EXPECT_EQ(check_header(rndv(kGpuRendezvous), 113, kLimits), WireError::kBadSize);
}

// The bytes of a GPU rendezvous that waited too long (kGpuBuffered): exactly
// the message after the envelope, a valid data tag (it names the
// rendezvous), no flags.
// check_header decides its commonest case inline: every header, valid or
// not, must get check_header_full's verdict from it.
TEST(WireHeader, InlineCheckAgreesWithTheFullCheck) {
  std::uint64_t x = 88172645463325252ull;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  const int tags[] = {-1, 0, 1, kLimits.tag_ub - 1, kLimits.tag_ub, kLimits.tag_ub + 1, 1 << 30};
  const std::uint32_t flags[] = {0, kFlagSyncAck, kFlagGpuChunk, kFlagSyncAck | kFlagGpuChunk, 1u << 7};
  int valid = 0;
  for (int i = 0; i < 200000; ++i) {
    WireHeader h{};
    h.kind = static_cast<std::uint32_t>(next() % (kGpuReply + 3));
    h.tag = tags[next() % (sizeof tags / sizeof tags[0])];
    h.flags = flags[next() % (sizeof flags / sizeof flags[0])];
    h.bytes = next() % 130;
    h.data_tag = static_cast<int>(next() % 4) - 1;
    const std::size_t payload = next() % 2 == 0 ? static_cast<std::size_t>(h.bytes) : next() % 130;
    const WireError full = check_header_full(h, payload, kLimits);
    ASSERT_EQ(check_header(h, payload, kLimits), full)
        << "kind " << h.kind << " tag " << h.tag << " flags " << h.flags << " bytes " << h.bytes << " payload " << payload;
    valid += full == WireError::kOk;
  }
  EXPECT_GT(valid, 1000);  // the inline case itself was exercised
}

TEST(GpuBuffered, ValidEnvelopesPassAndBadOnesAreRejected) {
  const WireHeader ok{5, kGpuBuffered, 100, 17, 0};
  EXPECT_EQ(check_header(ok, 100, kLimits), WireError::kOk);
  EXPECT_EQ(check_header(ok, 99, kLimits), WireError::kBadSize);
  EXPECT_EQ(check_header(ok, 101, kLimits), WireError::kBadSize);
  WireHeader h = ok;
  h.flags = kFlagSyncAck;
  EXPECT_EQ(check_header(h, 100, kLimits), WireError::kBadFlags);
  for (int dt : {-1, kTagUb}) {
    h = ok;
    h.data_tag = dt;
    EXPECT_EQ(check_header(h, 100, kLimits), WireError::kBadDataTag) << dt;
  }
  h = ok;
  h.tag = -1;
  EXPECT_EQ(check_header(h, 100, kLimits), WireError::kBadTag);
}

// Single-copy envelopes (kSingleCopy): always acknowledged, data tag 0,
// exactly a SingleCopyRts after them.
WireHeader single(std::uint64_t bytes) { return WireHeader{7, kSingleCopy, bytes, 0, kFlagSyncAck}; }

TEST(SingleCopy, ValidEnvelopesPass) {
  EXPECT_EQ(check_header(single(1 << 20), sizeof(SingleCopyRts), kLimits), WireError::kOk);
}

TEST(SingleCopy, EachBadFieldIsRejected) {
  WireHeader h = single(100);
  h.flags = 0;  // the receiver's acknowledgement is the send's completion
  EXPECT_EQ(check_header(h, sizeof(SingleCopyRts), kLimits), WireError::kBadFlags);
  h = single(100);
  h.data_tag = 3;
  EXPECT_EQ(check_header(h, sizeof(SingleCopyRts), kLimits), WireError::kBadField);
  EXPECT_EQ(check_header(single(100), sizeof(SingleCopyRts) - 1, kLimits), WireError::kTruncated);
  EXPECT_EQ(check_header(single(100), 0, kLimits), WireError::kTruncated);
  EXPECT_EQ(check_header(single(100), sizeof(SingleCopyRts) + 1, kLimits), WireError::kBadSize);
}

TEST(SingleCopy, DescriptorsDecodeOrAreRejected) {
  const SingleCopyRts good{0x7f0000001000ull, 4096, 1234, 0};
  SingleCopyRts out{};
  ASSERT_EQ(decode_single_copy(&good, sizeof good, 4096, &out), WireError::kOk);
  EXPECT_EQ(std::memcmp(&out, &good, sizeof good), 0);
  for (std::size_t n = 0; n < sizeof good; ++n) {
    std::vector<char> cut(reinterpret_cast<const char *>(&good), reinterpret_cast<const char *>(&good) + n);
    EXPECT_EQ(decode_single_copy(cut.data(), n, 4096, &out), WireError::kTruncated) << n;
  }
  std::vector<char> longer(sizeof good + 1, 0);
  std::memcpy(longer.data(), &good, sizeof good);
  EXPECT_EQ(decode_single_copy(longer.data(), longer.size(), 4096, &out), WireError::kBadLength);
  SingleCopyRts bad = good;
  bad.offer = 7;  // a sender that offers to write a part: still a valid descriptor
  ASSERT_EQ(decode_single_copy(&bad, sizeof bad, 4096, &out), WireError::kOk);
  EXPECT_EQ(out.offer, 7u);
  bad = good;
  bad.pid = 0;
  EXPECT_EQ(decode_single_copy(&bad, sizeof bad, 4096, &out), WireError::kBadRank);
  bad = good;
  bad.pid = -5;
  EXPECT_EQ(decode_single_copy(&bad, sizeof bad, 4096, &out), WireError::kBadRank);
  EXPECT_EQ(decode_single_copy(&good, sizeof good, 4097, &out), WireError::kBadSize);  // sizes disagree
  bad = good;
  bad.addr = ~0ull - 100;  // the range wraps
  EXPECT_EQ(decode_single_copy(&bad, sizeof bad, 4096, &out), WireError::kBadSize);
}

TEST(SplitCopy, EnvelopesCarryExactlyTheirPayload) {
  const WireLimits kLimits{32767, 0};
  for (const std::uint32_t kind : {kSplitAsk, kSplitDone}) {
    const std::size_t want = kind == kSplitAsk ? sizeof(SplitAsk) : sizeof(SplitDone);
    WireHeader h{0, kind, want, 0, 0};
    EXPECT_EQ(check_header(h, want, kLimits), WireError::kOk);
    EXPECT_EQ(check_header(h, want - 1, kLimits), WireError::kTruncated);
    EXPECT_EQ(check_header(h, want + 1, kLimits), WireError::kBadSize);
    h.bytes = want + 8;  // the envelope's size disagrees with what came
    EXPECT_EQ(check_header(h, want, kLimits), WireError::kBadSize);
    h = WireHeader{5, kind, want, 0, 0};  // never matched: no tag
    EXPECT_EQ(check_header(h, want, kLimits), WireError::kBadField);
    h = WireHeader{0, kind, want, 9, 0};
    EXPECT_EQ(check_header(h, want, kLimits), WireError::kBadField);
    h = WireHeader{0, kind, want, 0, kFlagSyncAck};  // nobody acknowledges a control frame
    EXPECT_EQ(check_header(h, want, kLimits), WireError::kBadFlags);
  }
  EXPECT_EQ(check_header(WireHeader{0, kGpuReply + 1, 8, 0, 0}, 8, kLimits), WireError::kBadKind);
}

// The receiver's answer to a GPU rendezvous travels in band: exactly one
// GpuReply, no tag, a data tag naming the rendezvous, no flags.
TEST(GpuReply, EnvelopeCarriesExactlyOneReply) {
  const WireLimits kLimits{32767, 0};
  const std::size_t want = kGpuReplyBytes;
  WireHeader h{0, kGpuReply, want, 17, 0};
  EXPECT_EQ(check_header(h, want, kLimits), WireError::kOk);
  h.data_tag = 32766;
  EXPECT_EQ(check_header(h, want, kLimits), WireError::kOk);
  EXPECT_EQ(check_header(h, want - 1, kLimits), WireError::kTruncated);
  EXPECT_EQ(check_header(h, want + 1, kLimits), WireError::kBadSize);
  h.bytes = want + 8;
  EXPECT_EQ(check_header(h, want, kLimits), WireError::kBadSize);
  h = WireHeader{3, kGpuReply, want, 17, 0};  // never matched: no tag
  EXPECT_EQ(check_header(h, want, kLimits), WireError::kBadField);
  for (const int dt : {-1, 32767, -2147483647 - 1}) {
    h = WireHeader{0, kGpuReply, want, dt, 0};
    EXPECT_EQ(check_header(h, want, kLimits), WireError::kBadDataTag) << dt;
  }
  h = WireHeader{0, kGpuReply, want, 17, kFlagSyncAck};
  EXPECT_EQ(check_header(h, want, kLimits), WireError::kBadFlags);
}

// A staged GPU transfer's chunk: the transport's rendezvous, no tag (never
// matched), a data tag naming the transfer, no acknowledgement.
TEST(GpuChunk, OnlyAnUntaggedRendezvousCarriesTheFlag) {
  const WireLimits kLimits{32767, 112};
  WireHeader h{0, kRendezvous, 65536, 41, kFlagGpuChunk};
  EXPECT_EQ(check_header(h, 0, kLimits), WireError::kOk);
  EXPECT_EQ(check_header(h, 8, kLimits), WireError::kBadSize);  // nothing follows a rendezvous envelope
  h.tag = 7;
  EXPECT_EQ(check_header(h, 0, kLimits), WireError::kBadField);
  h = WireHeader{0, kRendezvous, 65536, 41, kFlagGpuChunk | kFlagSyncAck};
  EXPECT_EQ(check_header(h, 0, kLimits), WireError::kBadFlags);
  for (const std::uint32_t kind : {kEager, kGpuRendezvousBare, kGpuBuffered, kSingleCopy, kGpuReply}) {
    h = WireHeader{0, kind, 0, 41, kFlagGpuChunk};
    EXPECT_EQ(check_header(h, 0, kLimits), WireError::kBadFlags) << kind;
  }
  h = WireHeader{0, kRendezvous, 65536, 32767, kFlagGpuChunk};
  EXPECT_EQ(check_header(h, 0, kLimits), WireError::kBadDataTag);
  h = WireHeader{0, kRendezvous, 65536, 0, 4};  // an unknown flag
  EXPECT_EQ(check_header(h, 0, kLimits), WireError::kBadFlags);
}

TEST(SplitCopy, RequestsDecodeOrAreRejected) {
  const SplitAsk good{0x7f0000002000ull, 65536, 65536, 4321, 3, 9, 2};
  SplitAsk out{};
  ASSERT_EQ(decode_split_ask(&good, sizeof good, &out), WireError::kOk);
  EXPECT_EQ(std::memcmp(&out, &good, sizeof good), 0);
  for (std::size_t n = 0; n < sizeof good; ++n)
    EXPECT_EQ(decode_split_ask(&good, n, &out), WireError::kTruncated) << n;
  std::vector<char> longer(sizeof good + 1, 0);
  std::memcpy(longer.data(), &good, sizeof good);
  EXPECT_EQ(decode_split_ask(longer.data(), longer.size(), &out), WireError::kBadLength);
  SplitAsk bad = good;
  bad.offer = 0;  // nothing was offered under name 0
  EXPECT_EQ(decode_split_ask(&bad, sizeof bad, &out), WireError::kBadField);
  bad = good;
  bad.ask = 0;
  EXPECT_EQ(decode_split_ask(&bad, sizeof bad, &out), WireError::kBadField);
  bad = good;
  bad.pid = -1;
  EXPECT_EQ(decode_split_ask(&bad, sizeof bad, &out), WireError::kBadRank);
  bad = good;
  bad.bytes = 0;
  EXPECT_EQ(decode_split_ask(&bad, sizeof bad, &out), WireError::kBadSize);
  bad = good;
  bad.offset = ~0ull - 10;  // the part's range in the message wraps
  EXPECT_EQ(decode_split_ask(&bad, sizeof bad, &out), WireError::kBadSize);
  bad = good;
  bad.dst = ~0ull - 10;  // and in the receiver's memory
  EXPECT_EQ(decode_split_ask(&bad, sizeof bad, &out), WireError::kBadSize);
}

TEST(SplitCopy, AnswersDecodeOrAreRejected) {
  const SplitDone good{9, 0};
  SplitDone out{};
  ASSERT_EQ(decode_split_done(&good, sizeof good, &out), WireError::kOk);
  EXPECT_EQ(out.ask, 9u);
  const SplitDone failed{9, 14};  // EFAULT: still a valid answer
  EXPECT_EQ(decode_split_done(&failed, sizeof failed, &out), WireError::kOk);
  EXPECT_EQ(out.error, 14);
  for (std::size_t n = 0; n < sizeof good; ++n)
    EXPECT_EQ(decode_split_done(&good, n, &out), WireError::kTruncated) << n;
  const char longer[sizeof good + 1] = {};
  EXPECT_EQ(decode_split_done(longer, sizeof longer, &out), WireError::kBadLength);
  const SplitDone unnamed{0, 0};
  EXPECT_EQ(decode_split_done(&unnamed, sizeof unnamed, &out), WireError::kBadField);
  const SplitDone negative{9, -1};
  EXPECT_EQ(decode_split_done(&negative, sizeof negative, &out), WireError::kBadField);
}

std::vector<char> landing(const WireHeader &h, std::size_t payload) {
  std::vector<char> b(sizeof h + payload, 'x');
  std::memcpy(b.data(), &h, sizeof h);
  return b;
}

TEST(Landing, RoundTrips) {
  const WireHeader h = eager(5);
  const std::vector<char> b = landing(h, 5);
  WireHeader out{};
  std::size_t payload = 99;
  ASSERT_EQ(decode_landing(b.data(), b.size(), &out, &payload), WireError::kOk);
  EXPECT_EQ(std::memcmp(&out, &h, sizeof h), 0);
  EXPECT_EQ(payload, 5u);
  EXPECT_EQ(check_header(out, payload, kLimits), WireError::kOk);
}

TEST(Landing, EveryTruncationIsRejected) {
  const std::vector<char> b = landing(eager(0), 0);
  for (std::size_t n = 0; n < sizeof(WireHeader); ++n) {
    WireHeader out{};
    std::size_t payload = 0;
    // Through a copy of exactly n bytes: a decoder that read further would
    // read past it (the ASan build of this test reports that).
    std::vector<char> cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_EQ(decode_landing(cut.data(), n, &out, &payload), WireError::kTruncated) << n;
  }
}

Envelope envelope() {
  Envelope e{};
  e.link = 3;
  e.source = 1;
  e.world = 2;
  e.seq = 9;
  e.credit = 100;
  e.h = eager(4);
  return e;
}

WireError decode(const Envelope &e, std::size_t n, int world_size, Envelope *out) {
  std::vector<char> b(sizeof e + 8, 0);
  std::memcpy(b.data(), &e, sizeof e);
  std::vector<char> cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
  return decode_envelope(cut.data(), n, world_size, out);
}

TEST(UcxEnvelope, RoundTrips) {
  Envelope e = envelope();
  e.h.flags = kFlagSyncAck;
  e.cookie = 77;
  Envelope out{};
  ASSERT_EQ(decode(e, sizeof e, 4, &out), WireError::kOk);
  EXPECT_EQ(std::memcmp(&out, &e, sizeof e), 0);
  EXPECT_EQ(check_link_arrival(out, 2, false, 4), WireError::kOk);
}

TEST(UcxEnvelope, EveryTruncationAndExtensionIsRejected) {
  Envelope out{};
  for (std::size_t n = 0; n < sizeof(Envelope); ++n) EXPECT_EQ(decode(envelope(), n, 4, &out), WireError::kTruncated) << n;
  EXPECT_EQ(decode(envelope(), sizeof(Envelope) + 1, 4, &out), WireError::kBadLength);
}

TEST(UcxEnvelope, RanksOutOfRangeAreRejected) {
  Envelope out{};
  for (int world : {-1, 4, 1000}) {
    Envelope e = envelope();
    e.world = world;
    EXPECT_EQ(decode(e, sizeof e, 4, &out), WireError::kBadRank) << world;
  }
  Envelope e = envelope();
  e.source = -1;
  EXPECT_EQ(decode(e, sizeof e, 4, &out), WireError::kBadRank);
}

TEST(UcxEnvelope, StrayFieldsAreRejected) {
  Envelope out{};
  Envelope e = envelope();
  e.reserved = 1;
  EXPECT_EQ(decode(e, sizeof e, 4, &out), WireError::kBadField);
  e = envelope();
  e.cookie = 5;  // without kFlagSyncAck
  EXPECT_EQ(decode(e, sizeof e, 4, &out), WireError::kBadField);
}

TEST(UcxEnvelope, LinkArrivalsAreChecked) {
  Envelope e = envelope();
  e.source = 2;
  EXPECT_EQ(check_link_arrival(e, 2, false, 4), WireError::kBadRank);
  e.source = -1;
  EXPECT_EQ(check_link_arrival(e, 2, false, 4), WireError::kBadRank);
  e = envelope();
  EXPECT_EQ(check_link_arrival(e, 2, true, 4), WireError::kBadKind);  // eager kind, rendezvous data
  e.h = rndv(kRendezvous);
  EXPECT_EQ(check_link_arrival(e, 2, false, 0), WireError::kBadKind);  // rendezvous kind, eager data
  EXPECT_EQ(check_link_arrival(e, 2, true, e.h.bytes), WireError::kOk);
  EXPECT_EQ(check_link_arrival(e, 2, true, e.h.bytes - 1), WireError::kBadSize);
  EXPECT_EQ(check_link_arrival(e, 2, true, e.h.bytes + 1), WireError::kBadSize);
}

WireError decode(const Control &c, std::size_t n, Control *out) {
  std::vector<char> b(sizeof c + 8, 0);
  std::memcpy(b.data(), &c, sizeof c);
  std::vector<char> cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
  return decode_control(cut.data(), n, 4, out);
}

TEST(UcxControl, RoundTrips) {
  for (const Control c : {Control{kCredit, 3, 4096, 0, 0}, Control{kSyncAck, 0, 0, 0, 12}}) {
    Control out{};
    ASSERT_EQ(decode(c, sizeof c, &out), WireError::kOk);
    EXPECT_EQ(std::memcmp(&out, &c, sizeof c), 0);
  }
}

TEST(UcxControl, EveryTruncationAndExtensionIsRejected) {
  Control out{};
  const Control c{kCredit, 3, 4096, 0, 0};
  for (std::size_t n = 0; n < sizeof c; ++n) EXPECT_EQ(decode(c, n, &out), WireError::kTruncated) << n;
  EXPECT_EQ(decode(c, sizeof c + 1, &out), WireError::kBadLength);
}

TEST(UcxControl, BadFieldsAreRejected) {
  Control out{};
  EXPECT_EQ(decode(Control{0, 3, 1, 0, 0}, sizeof(Control), &out), WireError::kBadKind);
  EXPECT_EQ(decode(Control{3, 3, 0, 0, 1}, sizeof(Control), &out), WireError::kBadKind);
  EXPECT_EQ(decode(Control{kCredit, 4, 1, 0, 0}, sizeof(Control), &out), WireError::kBadRank);
  EXPECT_EQ(decode(Control{kCredit, -1, 1, 0, 0}, sizeof(Control), &out), WireError::kBadRank);
  EXPECT_EQ(decode(Control{kCredit, 3, 1, 1, 0}, sizeof(Control), &out), WireError::kBadField);
  EXPECT_EQ(decode(Control{kCredit, 3, 1, 0, 9}, sizeof(Control), &out), WireError::kBadField);
  EXPECT_EQ(decode(Control{kSyncAck, 3, 1, 0, 9}, sizeof(Control), &out), WireError::kBadField);
  EXPECT_EQ(decode(Control{kSyncAck, 3, 0, 0, 0}, sizeof(Control), &out), WireError::kBadField);
}

TEST(WireError, EveryErrorHasItsOwnText) {
  std::vector<std::string> seen;
  for (int e = 0; e <= static_cast<int>(WireError::kBadField); ++e) {
    const std::string s = wire_error_string(static_cast<WireError>(e));
    EXPECT_NE(s, "unknown error") << e;
    for (const auto &t : seen) EXPECT_NE(s, t) << e;
    seen.push_back(s);
  }
}

}  // namespace
