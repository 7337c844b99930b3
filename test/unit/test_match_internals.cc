// The building blocks under the matcher: key packing, the key table (linear
// probing with backward-shift deletion) and the node pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

#include "match/key.h"
#include "match/key_table.h"
#include "match/node_pool.h"

namespace mpix::match::detail {
namespace {

TEST(KeyPacking, RoundTripsAndKeepsClearOfTheEmptyMarker) {
  const std::int32_t values[] = {kAnySource, 0, 1, 2, 1000, INT32_MAX - 1, INT32_MAX};
  std::set<PackedKey> seen;
  for (std::int32_t s : values) {
    for (std::int32_t t : values) {
      const PackedKey p = pack(s, t);
      EXPECT_NE(p, kEmptyPackedKey);
      EXPECT_EQ(unpack(p), (Key{s, t}));
      EXPECT_TRUE(seen.insert(p).second) << "two keys packed alike";
    }
  }
  EXPECT_EQ(pack(kAnySource, kAnyTag), 0u);
}

TEST(KeyRules, ReceiveAcceptsMessage) {
  EXPECT_TRUE(receive_accepts({1, 2}, {1, 2}));
  EXPECT_FALSE(receive_accepts({1, 2}, {1, 3}));
  EXPECT_FALSE(receive_accepts({1, 2}, {2, 2}));
  EXPECT_TRUE(receive_accepts({kAnySource, 2}, {9, 2}));
  EXPECT_FALSE(receive_accepts({kAnySource, 2}, {9, 3}));
  EXPECT_TRUE(receive_accepts({9, kAnyTag}, {9, 3}));
  EXPECT_TRUE(receive_accepts({kAnySource, kAnyTag}, {0, INT32_MAX}));
}

// Random fills and emptyings against std::unordered_map, with a small key
// space so that probe runs form and wrap around the table end; rebuilds
// (from reserve and trim) must keep every live bucket and may drop empty ones.
TEST(KeyTableTest, RandomOperationsAgreeWithUnorderedMap) {
  std::mt19937_64 rng(99);
  KeyTable table;
  std::unordered_map<PackedKey, std::uint32_t> live;  // key -> head of a live bucket
  std::size_t peak = 0;
  for (int i = 0; i < 400000; ++i) {
    const PackedKey k = pack(static_cast<std::int32_t>(rng() % 40),
                             static_cast<std::int32_t>(rng() % (i % 3 ? 40 : 4000)));
    const unsigned op = rng() % 3;
    if (op == 0) {  // make k live
      table.reserve(1);
      Bucket* b = table.find_or_insert(k);
      ASSERT_EQ(b->empty(), live.count(k) == 0);
      b->head = static_cast<std::uint32_t>(i);
      live[k] = static_cast<std::uint32_t>(i);
    } else if (op == 1) {  // empty k's list: the bucket may stay
      Bucket* b = table.find(k);
      if (live.count(k) != 0) {
        ASSERT_NE(b, nullptr);
        b->head = kNil;
        live.erase(k);
      } else if (b != nullptr) {
        ASSERT_TRUE(b->empty());
      }
    } else {
      const Bucket* b = table.find(k);
      if (live.count(k) != 0) {
        ASSERT_NE(b, nullptr);
        ASSERT_EQ(b->head, live[k]);
      } else {
        ASSERT_TRUE(b == nullptr || b->empty());
      }
    }
    peak = std::max(peak, live.size());
    ASSERT_LE(table.occupied() * 2, table.capacity()) << "load above 1/2";
    ASSERT_LE(table.capacity(), std::max<std::size_t>(8 * (peak + 1), KeyTable::kMinCapacity));
    if (i % 50000 == 0) {
      table.trim(live.size());
      peak = live.size();
    }
  }
  EXPECT_EQ(table.live_keys(), live.size());
  for (const auto& [k, v] : live) {
    const Bucket* b = table.find(k);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->head, v);
  }
}

TEST(KeyTableTest, GrowsAndShrinks) {
  KeyTable table;
  for (int i = 0; i < 100000; ++i) {
    table.reserve(1);
    table.find_or_insert(pack(0, i))->head = 1;
  }
  EXPECT_GE(table.capacity(), 200000u) << "load stays at most 1/2";
  for (int i = 0; i < 100000; ++i) table.find(pack(0, i))->head = kNil;
  EXPECT_EQ(table.live_keys(), 0u);
  table.trim(0);
  EXPECT_EQ(table.capacity(), KeyTable::kMinCapacity);
  EXPECT_EQ(table.occupied(), 0u) << "a rebuild drops empty buckets";
}

TEST(NodePoolTest, AllocatesFromTheLowestChunkAndTrimsHighOnes) {
  NodePool pool(/*with_index_links=*/false);
  std::vector<std::uint32_t> slots;
  for (std::uint32_t i = 0; i < 4 * NodePool::kChunkNodes; ++i) slots.push_back(pool.allocate());
  EXPECT_EQ(pool.capacity(), 4 * NodePool::kChunkNodes);
  const std::size_t full_bytes = pool.bytes();
  // Free one node in chunk 0 and all of chunks 2 and 3.
  pool.release(slots[5]);
  for (std::uint32_t i = 2 * NodePool::kChunkNodes; i < 4 * NodePool::kChunkNodes; ++i) {
    pool.release(slots[i]);
  }
  EXPECT_EQ(pool.allocate() >> NodePool::kChunkBits, 0u) << "lowest chunk with room first";
  pool.trim(pool.live());
  EXPECT_EQ(pool.capacity(), 3 * NodePool::kChunkNodes) << "one empty chunk kept as slack";
  EXPECT_LT(pool.bytes(), full_bytes);
  EXPECT_FALSE(pool.is_open_slot(slots.back()));
  EXPECT_TRUE(pool.is_open_slot(slots.front()));
  // Released slots read seq 0, so stale handles cannot match them.
  EXPECT_EQ(pool.node(slots[2 * NodePool::kChunkNodes]).seq, 0u);
}

TEST(NodePoolTest, ReopensTrimmedChunks) {
  NodePool pool(/*with_index_links=*/true);
  std::vector<std::uint32_t> slots;
  for (std::uint32_t i = 0; i < 3 * NodePool::kChunkNodes; ++i) slots.push_back(pool.allocate());
  for (std::uint32_t s : slots) pool.release(s);
  pool.trim(0);
  EXPECT_EQ(pool.capacity(), NodePool::kChunkNodes);
  std::set<std::uint32_t> again;
  for (std::uint32_t i = 0; i < 3 * NodePool::kChunkNodes; ++i) {
    const std::uint32_t s = pool.allocate();
    EXPECT_TRUE(again.insert(s).second) << "slot handed out twice";
    pool.index_link(s, kAll).next = s;  // the links array exists for reopened chunks
  }
  EXPECT_EQ(pool.live(), 3 * NodePool::kChunkNodes);
}

}  // namespace
}  // namespace mpix::match::detail
