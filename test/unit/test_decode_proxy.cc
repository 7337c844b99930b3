// The device proxy's descriptor decoding (mpix/proxy_desc.h): descriptors
// written as mpixd_proxy_post writes them decode to what it meant, every
// truncation is rejected, and each field out of range is rejected by the
// check that names it, with the status mpixd_check would have given.
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <vector>

#include "mpix/proxy_desc.h"

namespace {

using namespace mpix::devproxy;

const ProxyLimits kLimits{64, 256, 4, 32767};
constexpr std::uint32_t kTicket = 70;

mpixd_pdesc desc(std::uint32_t op, std::uint64_t bytes, std::uint64_t buf) {
  mpixd_pdesc d{};
  d.seq = kTicket + 1;
  d.op = op;
  d.peer = 3;
  d.tag = 11;
  d.bytes = bytes;
  d.buf = buf;
  return d;
}

int decode(const mpixd_pdesc &d, std::size_t n, ProxyOp *out) {
  std::vector<unsigned char> b(sizeof d + 8, 0);
  std::memcpy(b.data(), &d, sizeof d);
  std::vector<unsigned char> cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
  return decode_proxy_desc(cut.data(), n, kTicket, kLimits, out);
}

TEST(ProxySubmission, NamesItsSlot) {
  std::uint32_t slot = 0;
  bool valid = false;
  EXPECT_FALSE(decode_submission(std::uint64_t{kTicket} << 32 | 5, kTicket, 64, &slot, &valid));  // older ticket
  ASSERT_TRUE(decode_submission(std::uint64_t{kTicket + 1} << 32 | 5, kTicket, 64, &slot, &valid));
  EXPECT_TRUE(valid);
  EXPECT_EQ(slot, 5u);
  ASSERT_TRUE(decode_submission(std::uint64_t{kTicket + 1} << 32 | 64, kTicket, 64, &slot, &valid));
  EXPECT_FALSE(valid);
  ASSERT_TRUE(decode_submission(std::uint64_t{kTicket + 1} << 32 | 0xffffffffu, kTicket, 64, &slot, &valid));
  EXPECT_FALSE(valid);
}

TEST(ProxyDesc, DecodesWhereTheDataIs) {
  ProxyOp o;
  ASSERT_EQ(decode(desc(MPIXD_OP_SEND, MPIXD_INLINE, 0), sizeof(mpixd_pdesc), &o), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(o.data, ProxyData::kInline);
  EXPECT_EQ(o.op, static_cast<std::uint32_t>(MPIXD_OP_SEND));
  EXPECT_EQ(o.peer, 3);
  EXPECT_EQ(o.tag, 11);
  EXPECT_EQ(o.count, static_cast<int>(MPIXD_INLINE));
  ASSERT_EQ(decode(desc(MPIXD_OP_RECV, 256, 0), sizeof(mpixd_pdesc), &o), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(o.data, ProxyData::kBounce);
  EXPECT_EQ(o.op, static_cast<std::uint32_t>(MPIXD_OP_RECV));
  ASSERT_EQ(decode(desc(MPIXD_OP_RECV, 257, 0x1000), sizeof(mpixd_pdesc), &o), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(o.data, ProxyData::kUser);
  EXPECT_EQ(o.buf, 0x1000u);
  EXPECT_EQ(o.count, 257);
  ASSERT_EQ(decode(desc(MPIXD_OP_SEND, INT_MAX, 0x1000), sizeof(mpixd_pdesc), &o), MPIX_DEVICE_SUCCESS);
}

TEST(ProxyDesc, EveryTruncationIsRejected) {
  ProxyOp o;
  for (std::size_t n = 0; n < sizeof(mpixd_pdesc); ++n)
    EXPECT_EQ(decode(desc(MPIXD_OP_SEND, 4, 0), n, &o), MPIX_DEVICE_ERR_ARG) << n;
}

TEST(ProxyDesc, StaleDescriptorsAreRejected) {
  ProxyOp o;
  mpixd_pdesc d = desc(MPIXD_OP_SEND, 4, 0);
  d.seq = kTicket;  // the slot's previous descriptor
  EXPECT_EQ(decode(d, sizeof d, &o), MPIX_DEVICE_ERR_ARG);
}

TEST(ProxyDesc, UnknownOperationsAreRejected) {
  ProxyOp o;
  for (std::uint32_t op : {0u, 3u, 0xffffffffu})
    EXPECT_EQ(decode(desc(op, 4, 0), sizeof(mpixd_pdesc), &o), MPIX_DEVICE_ERR_ARG) << op;
}

TEST(ProxyDesc, RanksAndTagsOutOfRangeAreRejected) {
  ProxyOp o;
  for (int peer : {-1, 4, INT_MAX}) {
    mpixd_pdesc d = desc(MPIXD_OP_RECV, 4, 0);
    d.peer = peer;
    EXPECT_EQ(decode(d, sizeof d, &o), MPIX_DEVICE_ERR_RANK) << peer;
  }
  for (int tag : {-1, 32768}) {
    mpixd_pdesc d = desc(MPIXD_OP_RECV, 4, 0);
    d.tag = tag;
    EXPECT_EQ(decode(d, sizeof d, &o), MPIX_DEVICE_ERR_TAG) << tag;
  }
}

TEST(ProxyDesc, SizesThatDisagreeWithWhereTheDataIsAreRejected) {
  ProxyOp o;
  // Larger than MPI's int count.
  EXPECT_EQ(decode(desc(MPIXD_OP_SEND, std::uint64_t{INT_MAX} + 1, 0x1000), sizeof(mpixd_pdesc), &o),
            MPIX_DEVICE_ERR_ARG);
  // Bigger than the bounce buffer with no buffer named: the host would
  // receive past the slot's bounce buffer.
  EXPECT_EQ(decode(desc(MPIXD_OP_RECV, 257, 0), sizeof(mpixd_pdesc), &o), MPIX_DEVICE_ERR_ARG);
  // A buffer named for data that travels in the descriptor or the bounce
  // buffer: the device reads it from there, not from the buffer.
  EXPECT_EQ(decode(desc(MPIXD_OP_RECV, MPIXD_INLINE, 0x1000), sizeof(mpixd_pdesc), &o), MPIX_DEVICE_ERR_ARG);
  EXPECT_EQ(decode(desc(MPIXD_OP_RECV, 256, 0x1000), sizeof(mpixd_pdesc), &o), MPIX_DEVICE_ERR_ARG);
}

TEST(ProxyDesc, AQueueWithoutBounceBuffersNamesBuffersAboveTheInlineSize) {
  ProxyLimits l = kLimits;
  l.inline_bytes = 0;
  ProxyOp o;
  mpixd_pdesc d = desc(MPIXD_OP_SEND, MPIXD_INLINE + 1, 0);
  EXPECT_EQ(decode_proxy_desc(&d, sizeof d, kTicket, l, &o), MPIX_DEVICE_ERR_ARG);
  d.buf = 0x1000;
  EXPECT_EQ(decode_proxy_desc(&d, sizeof d, kTicket, l, &o), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(o.data, ProxyData::kUser);
}

}  // namespace
