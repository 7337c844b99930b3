// The UCX and libfabric links' arrival ordering (InOrder, progress/link_core.h):
// whatever order a transport delivers each sender's envelopes in, they are
// handed up in sending order, each exactly once, and what is held when a
// link goes away is all that was not handed up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "progress/link_core.h"

namespace {

using mpix::progress::InOrder;

// What a link holds for an early arrival (a payload it owns).
struct Item {
  int source = 0;
  std::uint32_t seq = 0;
  std::unique_ptr<int> payload;
};

struct Delivery {
  int source;
  std::uint32_t seq;
  int payload;
};

// Feeds `arrivals` as a link's receive() does; returns what was handed up.
std::vector<Delivery> feed(InOrder<Item> &order, const std::vector<std::pair<int, std::uint32_t>> &arrivals) {
  std::vector<Delivery> out;
  const auto hand_up = [&out](Item &i) { out.push_back({i.source, i.seq, *i.payload}); };
  for (const auto &[source, seq] : arrivals) {
    Item item{source, seq, std::make_unique<int>(static_cast<int>(seq) * 7 + source)};
    if (!order.is_next(source, seq)) {
      order.hold(source, seq, std::move(item));
      continue;
    }
    hand_up(item);
    order.advance(source, hand_up);
  }
  return out;
}

TEST(InOrder, InOrderArrivalsPassStraightThrough) {
  InOrder<Item> order;
  order.reset(2);
  const auto out = feed(order, {{0, 0}, {1, 0}, {0, 1}, {1, 1}});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].source, 0);
  EXPECT_EQ(out[1].source, 1);
  EXPECT_EQ(out[2].seq, 1u);
}

TEST(InOrder, AnEarlyArrivalWaitsForItsPredecessorOnly) {
  InOrder<Item> order;
  order.reset(2);
  // Sender 0's second message overtakes its first; sender 1 is unaffected.
  auto out = feed(order, {{0, 1}, {1, 0}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].source, 1);
  out = feed(order, {{0, 0}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].seq, 0u);
  EXPECT_EQ(out[1].seq, 1u);
  EXPECT_EQ(out[1].payload, 7);  // the held payload itself, not a copy's remains
}

TEST(InOrder, HeldArrivalsAreVisitedWhenTheLinkGoes) {
  InOrder<Item> order;
  order.reset(3);
  feed(order, {{2, 3}, {2, 1}, {0, 5}});
  std::vector<std::pair<int, std::uint32_t>> held;
  order.for_each_held([&held](Item &i) { held.emplace_back(i.source, i.seq); });
  std::sort(held.begin(), held.end());
  EXPECT_EQ(held, (std::vector<std::pair<int, std::uint32_t>>{{0, 5}, {2, 1}, {2, 3}}));
}

// Randomized against the model: each sender's stream is delivered in a
// random interleaving with bounded reordering (as lanes or retried sends
// reorder a few neighbours), several rounds on one InOrder.
TEST(InOrder, RandomReorderingAgainstSendingOrder) {
  std::mt19937 rng(20261126);
  for (int trial = 0; trial < 200; ++trial) {
    const int senders = 1 + static_cast<int>(rng() % 6);
    InOrder<Item> order;
    order.reset(static_cast<std::size_t>(senders));
    std::vector<std::uint32_t> sent(static_cast<std::size_t>(senders), 0);
    std::vector<std::uint32_t> expected(static_cast<std::size_t>(senders), 0);
    for (int round = 0; round < 5; ++round) {
      std::vector<std::pair<int, std::uint32_t>> arrivals;
      for (int s = 0; s < senders; ++s) {
        const std::uint32_t n = rng() % 40;
        for (std::uint32_t k = 0; k < n; ++k) arrivals.emplace_back(s, sent[static_cast<std::size_t>(s)]++);
      }
      // Bounded reordering: swap neighbours within a window of 8.
      for (std::size_t i = 0; i + 1 < arrivals.size(); ++i) {
        const std::size_t j = std::min(arrivals.size() - 1, i + rng() % 8);
        std::swap(arrivals[i], arrivals[j]);
      }
      const auto out = feed(order, arrivals);
      // Every round's arrivals are complete: all are handed up, each
      // sender's in sending order, with its own payload.
      ASSERT_EQ(out.size(), arrivals.size()) << "trial " << trial << " round " << round;
      for (const Delivery &d : out) {
        ASSERT_EQ(d.seq, expected[static_cast<std::size_t>(d.source)]++) << "trial " << trial;
        ASSERT_EQ(d.payload, static_cast<int>(d.seq) * 7 + d.source);
      }
      int held = 0;
      order.for_each_held([&held](Item &) { ++held; });
      ASSERT_EQ(held, 0);
    }
  }
}

}  // namespace
