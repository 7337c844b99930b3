// Batch matching (match_batch_fifo, match_batch_unordered): explicit cases
// and randomised checks against a naive per-key FIFO and against the
// unordered contract.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "match/batch.h"

#ifndef MPIX_MATCH_TEST_DEFAULT_SCALE
#define MPIX_MATCH_TEST_DEFAULT_SCALE 1.0
#endif

namespace mpix::match {
namespace {

double test_scale() {
  const char* s = std::getenv("MPIX_TEST_SCALE");
  const double v = s != nullptr ? std::atof(s) : MPIX_MATCH_TEST_DEFAULT_SCALE;
  return v > 0 ? v : MPIX_MATCH_TEST_DEFAULT_SCALE;
}

using KeyTuple = std::tuple<std::uint32_t, std::int32_t, std::int32_t>;
KeyTuple tuple_of(BatchKey k) { return {k.context, k.source, k.tag}; }

struct Result {
  BatchCounts counts{};
  std::vector<BatchPair> pairs;
  std::vector<std::uint32_t> unmatched_arrivals;
  std::vector<std::uint32_t> unmatched_receives;
};

using BatchFn = BatchCounts (*)(const BatchItem*, std::uint32_t, const BatchItem*, std::uint32_t,
                                const BatchOutput&, BatchScratch&);

Result run(BatchFn fn, const std::vector<BatchItem>& a, const std::vector<BatchItem>& r,
           BatchScratch& scratch) {
  Result res;
  res.pairs.resize(std::min(a.size(), r.size()));
  res.unmatched_arrivals.resize(a.size());
  res.unmatched_receives.resize(r.size());
  res.counts = fn(a.data(), static_cast<std::uint32_t>(a.size()), r.data(),
                  static_cast<std::uint32_t>(r.size()),
                  BatchOutput{res.pairs.data(), res.unmatched_arrivals.data(),
                              res.unmatched_receives.data()},
                  scratch);
  res.pairs.resize(res.counts.pairs);
  res.unmatched_arrivals.resize(res.counts.unmatched_arrivals);
  res.unmatched_receives.resize(res.counts.unmatched_receives);
  return res;
}

// The unordered contract; the FIFO variant must meet it too.
void check_contract(const std::vector<BatchItem>& a, const std::vector<BatchItem>& r,
                    const Result& res) {
  std::vector<int> used_a(a.size(), 0);
  std::vector<int> used_r(r.size(), 0);
  for (const BatchPair& p : res.pairs) {
    ASSERT_LT(p.arrival, a.size());
    ASSERT_LT(p.receive, r.size());
    ASSERT_TRUE(a[p.arrival].key == r[p.receive].key) << "pair of different keys";
    ASSERT_EQ(p.arrival_cookie, a[p.arrival].cookie);
    ASSERT_EQ(p.receive_cookie, r[p.receive].cookie);
    ++used_a[p.arrival];
    ++used_r[p.receive];
  }
  for (std::size_t i = 0; i < res.unmatched_arrivals.size(); ++i) {
    if (i > 0) {
      ASSERT_LT(res.unmatched_arrivals[i - 1], res.unmatched_arrivals[i]) << "order kept";
    }
    ++used_a[res.unmatched_arrivals[i]];
  }
  for (std::size_t i = 0; i < res.unmatched_receives.size(); ++i) {
    if (i > 0) {
      ASSERT_LT(res.unmatched_receives[i - 1], res.unmatched_receives[i]) << "order kept";
    }
    ++used_r[res.unmatched_receives[i]];
  }
  for (int u : used_a) ASSERT_EQ(u, 1) << "arrival not accounted for exactly once";
  for (int u : used_r) ASSERT_EQ(u, 1) << "receive not accounted for exactly once";
  std::set<KeyTuple> left;
  for (std::uint32_t i : res.unmatched_arrivals) left.insert(tuple_of(a[i].key));
  for (std::uint32_t i : res.unmatched_receives) {
    ASSERT_EQ(left.count(tuple_of(r[i].key)), 0u) << "not maximal";
  }
}

// Naive per-key FIFO pairing.
Result fifo_reference(const std::vector<BatchItem>& a, const std::vector<BatchItem>& r) {
  std::map<KeyTuple, std::deque<std::uint32_t>> waiting;
  for (std::uint32_t i = 0; i < r.size(); ++i) waiting[tuple_of(r[i].key)].push_back(i);
  Result res;
  std::vector<bool> matched_r(r.size(), false);
  for (std::uint32_t i = 0; i < a.size(); ++i) {
    auto& q = waiting[tuple_of(a[i].key)];
    if (q.empty()) {
      res.unmatched_arrivals.push_back(i);
      continue;
    }
    res.pairs.push_back(BatchPair{i, q.front(), a[i].cookie, r[q.front()].cookie});
    matched_r[q.front()] = true;
    q.pop_front();
  }
  for (std::uint32_t i = 0; i < r.size(); ++i) {
    if (!matched_r[i]) res.unmatched_receives.push_back(i);
  }
  return res;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> sorted_pairs(const Result& res) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> v;
  for (const BatchPair& p : res.pairs) v.emplace_back(p.arrival, p.receive);
  std::sort(v.begin(), v.end());
  return v;
}

BatchItem item(std::uint32_t ctx, std::int32_t src, std::int32_t tag, Cookie c) {
  return BatchItem{BatchKey{ctx, src, tag}, c};
}

TEST(BatchFifo, PairsTheIthArrivalWithTheIthReceiveOfAKey) {
  const std::vector<BatchItem> a = {item(0, 1, 1, 100), item(0, 2, 2, 101), item(0, 1, 1, 102),
                                    item(0, 3, 3, 103)};
  const std::vector<BatchItem> r = {item(0, 1, 1, 200), item(0, 1, 1, 201), item(0, 2, 2, 202),
                                    item(0, 4, 4, 203)};
  BatchScratch s;
  const Result res = run(match_batch_fifo, a, r, s);
  ASSERT_EQ(res.counts.pairs, 3u);
  const auto pairs = sorted_pairs(res);
  EXPECT_EQ(pairs[0], std::make_pair(0u, 0u));
  EXPECT_EQ(pairs[1], std::make_pair(1u, 2u));
  EXPECT_EQ(pairs[2], std::make_pair(2u, 1u));
  EXPECT_EQ(res.unmatched_arrivals, std::vector<std::uint32_t>{3});
  EXPECT_EQ(res.unmatched_receives, std::vector<std::uint32_t>{3});
}

TEST(Batch, ContextsDoNotMatchEachOther) {
  const std::vector<BatchItem> a = {item(1, 0, 0, 1), item(2, 0, 0, 2)};
  const std::vector<BatchItem> r = {item(2, 0, 0, 3), item(3, 0, 0, 4)};
  BatchScratch s;
  for (BatchFn fn : {match_batch_fifo, match_batch_unordered}) {
    const Result res = run(fn, a, r, s);
    ASSERT_EQ(res.counts.pairs, 1u);
    EXPECT_EQ(res.pairs[0].arrival, 1u);
    EXPECT_EQ(res.pairs[0].receive, 0u);
    EXPECT_EQ(res.unmatched_arrivals, std::vector<std::uint32_t>{0});
    EXPECT_EQ(res.unmatched_receives, std::vector<std::uint32_t>{1});
  }
}

TEST(Batch, EmptySides) {
  const std::vector<BatchItem> some = {item(0, 1, 2, 1), item(0, 1, 2, 2)};
  const std::vector<BatchItem> none;
  BatchScratch s;
  for (BatchFn fn : {match_batch_fifo, match_batch_unordered}) {
    Result res = run(fn, some, none, s);
    EXPECT_EQ(res.counts.pairs, 0u);
    EXPECT_EQ(res.unmatched_arrivals, (std::vector<std::uint32_t>{0, 1}));
    res = run(fn, none, some, s);
    EXPECT_EQ(res.unmatched_receives, (std::vector<std::uint32_t>{0, 1}));
    res = run(fn, none, none, s);
    EXPECT_EQ(res.counts.pairs + res.counts.unmatched_arrivals + res.counts.unmatched_receives,
              0u);
  }
}

TEST(Batch, ExtremeKeyValues) {
  const std::vector<BatchItem> a = {item(UINT32_MAX, INT32_MAX, INT32_MAX, 1),
                                    item(0, 0, INT32_MAX, 2)};
  const std::vector<BatchItem> r = {item(0, INT32_MAX, 0, 3),
                                    item(UINT32_MAX, INT32_MAX, INT32_MAX, 4)};
  BatchScratch s;
  const Result res = run(match_batch_fifo, a, r, s);
  ASSERT_EQ(res.counts.pairs, 1u);
  EXPECT_EQ(res.pairs[0].arrival_cookie, 1u);
  EXPECT_EQ(res.pairs[0].receive_cookie, 4u);
}

// Random batches of both shapes (more arrivals or more receives: the engine
// hashes the smaller side), reusing one scratch across sizes.
TEST(Batch, RandomAgainstReferenceAndContract) {
  std::mt19937_64 rng(12345);
  BatchScratch s;
  const int trials = std::max(20, static_cast<int>(400 * test_scale()));
  std::uint64_t total_items = 0;
  for (int t = 0; t < trials; ++t) {
    const std::uint32_t contexts = 1 + rng() % 3;
    const std::uint32_t sources = 1 + rng() % (t % 2 ? 4 : 64);
    const std::uint32_t tags = 1 + rng() % (t % 3 ? 4 : 256);
    const std::size_t na = rng() % (t % 5 == 0 ? 5000 : 300);
    const std::size_t nr = rng() % (t % 7 == 0 ? 5000 : 300);
    auto make = [&](std::size_t n, Cookie base) {
      std::vector<BatchItem> v(n);
      for (std::size_t i = 0; i < n; ++i) {
        v[i] = item(static_cast<std::uint32_t>(rng() % contexts),
                    static_cast<std::int32_t>(rng() % sources),
                    static_cast<std::int32_t>(rng() % tags), base + i);
      }
      return v;
    };
    const auto a = make(na, 1000000);
    const auto r = make(nr, 2000000);
    total_items += na + nr;

    const Result fifo = run(match_batch_fifo, a, r, s);
    check_contract(a, r, fifo);
    if (HasFatalFailure()) return;
    const Result want = fifo_reference(a, r);
    ASSERT_EQ(sorted_pairs(fifo), sorted_pairs(want)) << "trial " << t;
    ASSERT_EQ(fifo.unmatched_arrivals, want.unmatched_arrivals);
    ASSERT_EQ(fifo.unmatched_receives, want.unmatched_receives);

    const Result unordered = run(match_batch_unordered, a, r, s);
    check_contract(a, r, unordered);
    if (HasFatalFailure()) return;
    ASSERT_EQ(unordered.counts.pairs, want.pairs.size()) << "maximal matchings have one size";
  }
  EXPECT_GT(total_items, 100000u);
}

TEST(Batch, UnorderedCpuVariantPairsEachKeyAsAStack) {
  // Pins the CPU choice (a stack per key), which keeps the contract checks
  // above honest: they must accept a pairing that is not the FIFO one.
  const std::vector<BatchItem> a = {item(0, 1, 1, 1), item(0, 1, 1, 2), item(0, 1, 1, 3)};
  const std::vector<BatchItem> r = {item(0, 1, 1, 10), item(0, 1, 1, 11)};
  BatchScratch s;
  const Result res = run(match_batch_unordered, a, r, s);
  check_contract(a, r, res);
  const Result fifo = run(match_batch_fifo, a, r, s);
  EXPECT_NE(sorted_pairs(res), sorted_pairs(fifo));
}

TEST(Batch, ScratchReleaseGivesMemoryBack) {
  std::vector<BatchItem> a(10000);
  for (std::uint32_t i = 0; i < a.size(); ++i) a[i] = item(0, 0, static_cast<std::int32_t>(i), i);
  BatchScratch s;
  run(match_batch_fifo, a, a, s);
  EXPECT_GT(s.bytes(), 10000u * 4);
  s.release();
  EXPECT_EQ(s.bytes(), 0u);
  const Result res = run(match_batch_fifo, a, a, s);  // still usable
  EXPECT_EQ(res.counts.pairs, a.size());
}

}  // namespace
}  // namespace mpix::match
