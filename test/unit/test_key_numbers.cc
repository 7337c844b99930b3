// Host numbering of GPU-run *_enqueue operations (mpix/key_numbers.h): the
// n-th send of a (peer, tag) and the n-th receive of it get the same number
// however the two sides interleave their keys, and keys never share a
// counter (a shared counter would make a receive wait for a number its
// message never gets).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <utility>
#include <vector>

#include "mpix/key_numbers.h"

namespace {

using mpix::stream::KeyNumbers;

TEST(KeyNumbers, CountsEachKeyFromZeroInCallOrder) {
  KeyNumbers k;
  EXPECT_EQ(k.next(1, 7), 0u);
  EXPECT_EQ(k.next(1, 7), 1u);
  EXPECT_EQ(k.next(1, 8), 0u);
  EXPECT_EQ(k.next(0, 7), 0u);
  EXPECT_EQ(k.next(1, 7), 2u);
}

TEST(KeyNumbers, PeerAndTagNeverAlias) {
  KeyNumbers k;
  // Pairs that a packing of peer and tag into fewer bits would confuse.
  const std::vector<std::pair<int, int>> keys = {{0, 1}, {1, 0}, {0, 1 << 16}, {1 << 16, 0},
                                                 {0, 2147483647}, {2147483647, 0}, {65535, 65535}};
  for (const auto &key : keys) EXPECT_EQ(k.next(key.first, key.second), 0u) << key.first << "," << key.second;
  for (const auto &key : keys) EXPECT_EQ(k.next(key.first, key.second), 1u) << key.first << "," << key.second;
}

// Sender and receiver issue the same per-key sequences, interleaved across
// keys differently: every message meets its receive.
TEST(KeyNumbers, SenderAndReceiverAgreeUnderAnyInterleaving) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::pair<int, int>> ops;
    for (int i = 0; i < 2000; ++i) ops.emplace_back(static_cast<int>(rng() % 4), static_cast<int>(rng() % 5));
    // The receiver's order: stable within a key, shuffled across keys.
    std::map<std::pair<int, int>, std::vector<int>> by_key;
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) by_key[ops[i]].push_back(i);
    std::vector<std::pair<int, int>> recv_order;
    std::vector<std::pair<std::pair<int, int>, std::size_t>> cursors;
    for (const auto &e : by_key) cursors.push_back({e.first, 0});
    while (!cursors.empty()) {
      const std::size_t pick = rng() % cursors.size();
      auto &c = cursors[pick];
      recv_order.push_back(c.first);
      if (++c.second == by_key[c.first].size()) cursors.erase(cursors.begin() + static_cast<long>(pick));
    }
    KeyNumbers sender, receiver;
    std::map<std::pair<int, int>, std::vector<std::uint32_t>> sent, received;
    for (const auto &op : ops) sent[op].push_back(sender.next(op.first, op.second));
    for (const auto &op : recv_order) received[op].push_back(receiver.next(op.first, op.second));
    ASSERT_EQ(sent, received) << "round " << round;
  }
}

}  // namespace
