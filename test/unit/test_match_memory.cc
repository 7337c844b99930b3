// Memory of the matcher is bounded under steady traffic and given back when
// the depth falls, with and without an explicit trim().
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "match/matcher.h"

namespace mpix::match {
namespace {

const Mode kAllModes[] = {Mode::kOrdered, Mode::kOrderedWildcard, Mode::kUnordered};

class Memory : public testing::TestWithParam<Mode> {};

std::string mode_label(const testing::TestParamInfo<Mode>& info) {
  switch (info.param) {
    case Mode::kOrdered: return "Ordered";
    case Mode::kOrderedWildcard: return "OrderedWildcard";
    case Mode::kUnordered: return "Unordered";
  }
  return "Unknown";
}

constexpr int kDeep = 200000;

void fill_and_drain(Matcher& m) {
  for (int i = 0; i < kDeep; ++i) ASSERT_FALSE(m.arrive({i % 7, i}, i).matched());
  for (int i = 0; i < kDeep; ++i) ASSERT_TRUE(m.post({i % 7, i}, i).matched());
}

TEST_P(Memory, TrimAfterDrainGivesBackAlmostEverything) {
  Matcher m(GetParam());
  const std::size_t fresh = m.stats().bytes;
  for (int i = 0; i < kDeep; ++i) m.arrive({i % 7, i}, i);
  const std::size_t peak = m.stats().bytes;
  EXPECT_GT(peak, fresh + kDeep * 32u) << "entries and buckets are counted";
  for (int i = 0; i < kDeep; ++i) ASSERT_TRUE(m.post({i % 7, i}, i).matched());
  m.trim();
  const std::size_t after = m.stats().bytes;
  EXPECT_LT(after, fresh + 128 * 1024) << "peak was " << peak;
  // Still fully usable after trimming.
  EXPECT_FALSE(m.post({1, 1}, 1).matched());
  EXPECT_TRUE(m.arrive({1, 1}, 2).matched());
}

TEST_P(Memory, MaintenanceGivesBackWithoutTrim) {
  Matcher m(GetParam());
  fill_and_drain(m);
  const std::size_t peak = m.stats().bytes;
  // Light traffic afterwards: once a maintenance window has passed without
  // the old peak, the memory follows the new, small peak.
  for (int i = 0; i < 4000000 && m.stats().bytes > peak / 20; ++i) {
    m.post({1, i % 16}, i);
    m.arrive({1, i % 16}, i);
  }
  EXPECT_LT(m.stats().bytes, peak / 20) << "peak was " << peak;
}

TEST_P(Memory, SteadyTrafficWithEverNewTagsStaysBounded) {
  // Depth ~1000 with tags that never repeat: keys come and go forever.
  Matcher m(GetParam());
  std::mt19937_64 rng(7);
  std::vector<Key> waiting;
  int next_tag = 0;
  std::size_t warm = 0;
  std::size_t worst = 0;
  for (int i = 0; i < 1500000; ++i) {
    if (waiting.size() < 1000 || rng() % 2 == 0) {
      const Key k{static_cast<std::int32_t>(rng() % 8), next_tag++};
      m.arrive(k, i);
      waiting.push_back(k);
    } else {
      const std::size_t j = rng() % waiting.size();
      ASSERT_TRUE(m.post(waiting[j], i).matched());
      waiting[j] = waiting.back();
      waiting.pop_back();
    }
    if (i == 300000) warm = m.stats().bytes;
    if (i > 300000) worst = std::max(worst, m.stats().bytes);
  }
  EXPECT_LE(worst, 2 * warm) << "memory grew under steady traffic";
  EXPECT_LT(worst, 1u << 20) << "far more than ~1000 entries need";
}

TEST_P(Memory, PostCancelChurnBehindAnOldReceiveStaysBounded) {
  Matcher m(GetParam());
  m.post({3, 3}, 0);  // never matched: sits at the head of the key's FIFO
  std::size_t worst = 0;
  for (int i = 1; i < 1000000; ++i) {
    const PostResult p = m.post({3, 3}, i);
    ASSERT_EQ(p.status, Status::kQueued);
    ASSERT_TRUE(m.cancel(p.handle));
    worst = std::max(worst, m.stats().bytes);
  }
  EXPECT_LT(worst, 256u * 1024);
  EXPECT_EQ(m.stats().posted_depth, 1u);
}

INSTANTIATE_TEST_SUITE_P(Modes, Memory, testing::ValuesIn(kAllModes), mode_label);

TEST(MemoryWildcard, WildcardIndexesAreReclaimed) {
  // Arrivals create tag and source index buckets (once a wildcard receive
  // has enabled the indexes); with ever-new tags, the emptied buckets must
  // be dropped again rather than pile up.
  Matcher m(Mode::kOrderedWildcard);
  const Key patterns[] = {{kAnySource, 0}, {0, kAnyTag}, {kAnySource, kAnyTag}, {0, 0}};
  for (int round = 0; round < 200000; ++round) {
    const Key k{round % 5, round};
    m.arrive(k, round);
    Key p = patterns[round % 4];
    if (p.source != kAnySource) p.source = k.source;
    if (p.tag != kAnyTag) p.tag = k.tag;
    ASSERT_TRUE(m.post(p, round).matched());
    ASSERT_LE(m.stats().keys, 64u) << "round " << round;
    ASSERT_EQ(m.stats().unexpected_depth, 0u);
  }
}

}  // namespace
}  // namespace mpix::match
