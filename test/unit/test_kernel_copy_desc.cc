// The resident copy kernel's descriptor (device/kernel_copy_desc.h): what
// the kernel relies on to never take a half-written descriptor or a stale
// one, and the inline payload's packing.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "device/kernel_copy_desc.h"

namespace kc = mpix::device::kcopy;

TEST(KernelCopyDesc, LapTagsAreNeverZeroAndDifferBetweenUsesOfASlot) {
  for (std::uint64_t seq = 1; seq < 200000; ++seq) {
    ASSERT_NE(kc::lap_tag(seq), 0u) << seq;
    ASSERT_NE(kc::lap_tag(seq), kc::lap_tag(seq + kc::kSlots)) << seq;  // the slot's next use
    ASSERT_LT(kc::lap_tag(seq), 256u);
  }
  // Zeroed memory (the ring as allocated) is no descriptor.
  for (std::uint64_t seq = 1; seq < 1000; ++seq) EXPECT_FALSE(kc::word_current(0, seq));
}

TEST(KernelCopyDesc, FieldsRoundTrip) {
  std::uint64_t w[8];
  const std::uint64_t src = 0x7f12345678f0ull, dst = 0x7fedcba98760ull;
  kc::encode(77, src, dst, 8192, nullptr, w);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(kc::word_current(w[i], 77)) << i;
  EXPECT_EQ(w[0] & kc::kValueMask, src);
  EXPECT_EQ(w[1] & kc::kValueMask, dst);
  EXPECT_EQ(static_cast<std::uint32_t>(w[2]), 8192u);
  EXPECT_EQ(w[2] & kc::kInlineFlag, 0u);
}

TEST(KernelCopyDesc, InlinePayloadsOfEverySizeRoundTrip) {
  for (std::size_t n = 0; n <= kc::kInlineBytes; ++n) {
    std::vector<unsigned char> bytes(kc::kInlineBytes);  // never empty: data() is the inline marker
    for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>(0xff - i * 7);
    std::uint64_t w[8];
    kc::encode(5, 0, 0x1000, n, bytes.data(), w);
    EXPECT_NE(w[2] & kc::kInlineFlag, 0u);
    std::uint64_t stripped[8];
    for (int i = 0; i < 8; ++i) {
      ASSERT_TRUE(kc::word_current(w[i], 5));
      stripped[i] = w[i] & kc::kValueMask;
    }
    for (std::uint32_t i = 0; i < n; ++i) ASSERT_EQ(kc::inline_byte(stripped, i), bytes[i]) << n << " " << i;
  }
}

// A line read while the host rewrote the slot for its next use: any mix of
// old and new words has a word whose tag is not the new lap's (and not all
// the old lap's), so the reader waits for the next read.
TEST(KernelCopyDesc, MixedLinesAreNeverTaken) {
  const std::uint64_t old_seq = 3, new_seq = 3 + kc::kSlots;
  std::uint64_t a[8], b[8];
  kc::encode(old_seq, 0x1000, 0x2000, 10, nullptr, a);
  kc::encode(new_seq, 0x3000, 0x4000, 20, nullptr, b);
  for (unsigned mask = 1; mask < 255; ++mask) {  // neither all old nor all new
    bool all_new = true;
    for (int i = 0; i < 8; ++i) all_new = all_new && kc::word_current((mask >> i & 1) ? b[i] : a[i], new_seq);
    EXPECT_FALSE(all_new) << mask;
  }
}
