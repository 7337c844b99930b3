// Randomised differential tests.
//
// Ordered modes: every result of the engine (match or queue, which partner,
// probe, take, cancel, and the full queue contents now and then) must equal
// the reference matcher's. Unordered mode: checked against a model of the
// contract instead (key-compatible partners, nothing matched twice, nothing
// lost, and maximality: never a queued receive and a queued message with the
// same key).
//
// MPIX_TEST_SCALE scales the number of operations (default 1: about 5
// million operations in this file; the sanitizer build defaults lower).
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "match/matcher.h"
#include "reference_matcher.h"

#ifndef MPIX_MATCH_TEST_DEFAULT_SCALE
#define MPIX_MATCH_TEST_DEFAULT_SCALE 1.0
#endif

namespace mpix::match {
namespace {

// The aux word a test queues with message cookie c (Matcher::arrive_with):
// distinct per cookie and never 0, so that one handed back with the wrong
// message, or lost, shows.
Cookie aux_of(Cookie c) { return c * 0x9E3779B97F4A7C15ull + 7; }

using test::ReferenceMatcher;

double test_scale() {
  const char* s = std::getenv("MPIX_TEST_SCALE");
  const double v = s != nullptr ? std::atof(s) : MPIX_MATCH_TEST_DEFAULT_SCALE;
  return v > 0 ? v : MPIX_MATCH_TEST_DEFAULT_SCALE;
}

std::uint64_t scaled(std::uint64_t ops) {
  return std::max<std::uint64_t>(1000, static_cast<std::uint64_t>(ops * test_scale()));
}

// Random keys from a small space (so that keys repeat: the multiplicity is
// what exercises ordering), plus the extreme values now and then.
struct KeySpace {
  int sources;
  int tags;
  std::int32_t source(std::mt19937_64& rng) const {
    return rng() % 64 == 0 ? INT32_MAX : static_cast<std::int32_t>(rng() % sources);
  }
  std::int32_t tag(std::mt19937_64& rng) const {
    return rng() % 64 == 0 ? INT32_MAX : static_cast<std::int32_t>(rng() % tags);
  }
  Key message(std::mt19937_64& rng) const { return Key{source(rng), tag(rng)}; }
};

struct OrderedConfig {
  const char* name;
  Mode mode;
  KeySpace keys;
  double wildcard_p;      // probability that a receive/probe field is a wildcard
  std::size_t depth_cap;  // above it, operations are steered to drain the queue
  std::uint64_t ops;
};

std::string str(Key k) {
  return "(" + std::to_string(k.source) + "," + std::to_string(k.tag) + ")";
}

class OrderedDifferential {
 public:
  OrderedDifferential(const OrderedConfig& cfg, std::uint64_t seed)
      : cfg_(cfg), m_(cfg.mode), rng_(seed), seed_(seed) {}

  void run() {
    for (op_ = 0; op_ < cfg_.ops; ++op_) {
      step();
      if (testing::Test::HasFailure()) return;
      if (op_ % 997 == 0) compare_queues();
    }
    compare_queues();
  }

 private:
  std::string where() const {
    std::ostringstream os;
    os << cfg_.name << " seed " << seed_ << " op " << op_;
    return os.str();
  }

  Key pattern() {
    Key k = cfg_.keys.message(rng_);
    if (cfg_.wildcard_p > 0) {
      std::uniform_real_distribution<double> u(0, 1);
      if (u(rng_) < cfg_.wildcard_p) k.source = kAnySource;
      if (u(rng_) < cfg_.wildcard_p) k.tag = kAnyTag;
    }
    return k;
  }

  void step() {
    const auto& posted = ref_.posted();
    const auto& unexpected = ref_.unexpected();
    if (unexpected.size() > cfg_.depth_cap) {
      // Steer: post a receive that some queued message satisfies.
      auto it = std::next(unexpected.begin(), rng_() % unexpected.size());
      Key k = it->envelope;
      if (cfg_.wildcard_p > 0 && rng_() % 4 == 0) k.source = kAnySource;
      return do_post(k);
    }
    if (posted.size() > cfg_.depth_cap) {
      // Steer: send a message that some queued receive accepts.
      auto it = std::next(posted.begin(), rng_() % posted.size());
      Key k = it->pattern;
      if (k.source == kAnySource) k.source = cfg_.keys.source(rng_);
      if (k.tag == kAnyTag) k.tag = cfg_.keys.tag(rng_);
      return do_arrive(k);
    }
    const unsigned r = rng_() % 100;
    if (r < 32) return do_post(pattern());
    if (r < 64) return do_arrive(cfg_.keys.message(rng_));
    if (r < 76) return do_probe(pattern());
    if (r < 84) return do_take(pattern());
    return do_cancel();
  }

  void do_post(Key k) {
    const Cookie c = next_cookie_++;
    std::uint64_t ref_id = 0;
    const auto want = ref_.post(k, c, &ref_id);
    // Every other post through post_with (the engine's blocking receive),
    // whose cookie must be made exactly when the receive is queued.
    int made = 0;
    const PostResult got = c % 2 == 0 ? m_.post(k, c) : m_.post_with(k, [&] {
      ++made;
      return c;
    });
    ASSERT_EQ(got.matched(), want.has_value()) << where() << " post " << str(k);
    if (c % 2 != 0) {
      ASSERT_EQ(made, want ? 0 : 1) << where() << " post_with " << str(k);
    }
    if (want) {
      ASSERT_EQ(got.partner, *want) << where() << " post " << str(k);
      ASSERT_EQ(got.partner_aux, expected_aux(*want)) << where() << " post " << str(k);
    } else {
      ASSERT_EQ(got.status, Status::kQueued) << where();
      remember_handle(got.handle, ref_id);
    }
  }

  void do_arrive(Key k) {
    const Cookie c = next_cookie_++;
    const auto want = ref_.arrive(k, c);
    // Every other arrival through arrive_with (the engine's form), whose
    // cookie must be made exactly when the message is queued.
    int made = 0;
    const ArriveResult got = c % 2 == 0 ? m_.arrive(k, c) : m_.arrive_with(k, [&] {
      ++made;
      return c;
    }, expected_aux(c));
    ASSERT_EQ(got.matched(), want.has_value()) << where() << " arrive " << str(k);
    if (c % 2 != 0) {
      ASSERT_EQ(made, want ? 0 : 1) << where() << " arrive_with " << str(k);
    }
    if (want) {
      ASSERT_EQ(got.partner, *want) << where() << " arrive " << str(k);
    }
  }

  void do_probe(Key k) {
    const auto want = ref_.probe(k);
    const ProbeResult got = m_.probe(k);
    ASSERT_EQ(got.found, want.has_value()) << where() << " probe " << str(k);
    if (want) {
      ASSERT_EQ(got.cookie, *want) << where() << " probe " << str(k);
      ASSERT_EQ(got.aux, expected_aux(*want)) << where() << " probe " << str(k);
    }
  }

  void do_take(Key k) {
    const auto want = ref_.take(k);
    const ProbeResult got = m_.take(k);
    ASSERT_EQ(got.found, want.has_value()) << where() << " take " << str(k);
    if (want) {
      ASSERT_EQ(got.cookie, *want) << where() << " take " << str(k);
      ASSERT_EQ(got.aux, expected_aux(*want)) << where() << " take " << str(k);
    }
  }

  // Cancels a recent handle: often one that already matched or was cancelled.
  void do_cancel() {
    if (handles_.empty()) return;
    const auto& [handle, ref_id] = handles_[rng_() % handles_.size()];
    const bool want = ref_.cancel(ref_id);
    ASSERT_EQ(m_.cancel(handle), want) << where() << " cancel";
  }

  void remember_handle(RecvHandle h, std::uint64_t ref_id) {
    constexpr std::size_t kKept = 64;
    if (handles_.size() < kKept) {
      handles_.emplace_back(h, ref_id);
    } else {
      handles_[rng_() % kKept] = {h, ref_id};
    }
  }

  void compare_queues() {
    const std::vector<Entry> posted = m_.posted_entries();
    ASSERT_EQ(posted.size(), ref_.posted().size()) << where();
    auto p = ref_.posted().begin();
    for (const Entry& e : posted) {
      ASSERT_EQ(e.key, p->pattern) << where();
      ASSERT_EQ(e.cookie, p->cookie) << where();
      ++p;
    }
    const std::vector<Entry> unexpected = m_.unexpected_entries();
    ASSERT_EQ(unexpected.size(), ref_.unexpected().size()) << where();
    auto u = ref_.unexpected().begin();
    for (const Entry& e : unexpected) {
      ASSERT_EQ(e.key, u->envelope) << where();
      ASSERT_EQ(e.cookie, u->cookie) << where();
      ASSERT_EQ(e.aux, expected_aux(e.cookie)) << where();
      ++u;
    }
    const Stats s = m_.stats();
    ASSERT_EQ(s.posted_depth, posted.size()) << where();
    ASSERT_EQ(s.unexpected_depth, unexpected.size()) << where();
  }

  // Messages queued through arrive_with (odd cookies) carry aux words where
  // the mode keeps them; arrive() queues none.
  Cookie expected_aux(Cookie c) const { return m_.keeps_aux() && c % 2 != 0 ? aux_of(c) : 0; }

  OrderedConfig cfg_;
  Matcher m_;
  ReferenceMatcher ref_;
  std::mt19937_64 rng_;
  std::uint64_t seed_;
  std::uint64_t op_ = 0;
  Cookie next_cookie_ = 1;
  std::vector<std::pair<RecvHandle, std::uint64_t>> handles_;
};

class OrderedDiff : public testing::TestWithParam<OrderedConfig> {};

TEST_P(OrderedDiff, EveryResultEqualsTheReference) {
  OrderedConfig cfg = GetParam();
  cfg.ops = scaled(cfg.ops);
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    OrderedDifferential(cfg, seed * 7919 + cfg.ops).run();
    if (HasFailure()) return;
  }
}

const OrderedConfig kOrderedConfigs[] = {
    // name, mode, {sources, tags}, wildcard_p, depth_cap, ops per seed
    {"one_key", Mode::kOrdered, {1, 1}, 0.0, 32, 100000},
    {"few_keys", Mode::kOrdered, {3, 4}, 0.0, 64, 250000},
    {"many_keys_deep", Mode::kOrdered, {64, 64}, 0.0, 512, 150000},
    {"wild_never", Mode::kOrderedWildcard, {3, 4}, 0.0, 64, 150000},
    {"wild_rare", Mode::kOrderedWildcard, {4, 8}, 0.02, 128, 250000},
    {"wild_often", Mode::kOrderedWildcard, {3, 3}, 0.3, 64, 250000},
    {"wild_mostly", Mode::kOrderedWildcard, {2, 2}, 0.7, 32, 150000},
    {"wild_deep", Mode::kOrderedWildcard, {32, 32}, 0.1, 512, 100000},
};

INSTANTIATE_TEST_SUITE_P(Configs, OrderedDiff, testing::ValuesIn(kOrderedConfigs),
                         [](const testing::TestParamInfo<OrderedConfig>& info) {
                           return std::string(info.param.name);
                         });

// ---------------------------------------------------------------------------
// Unordered mode: a model of the contract.

class UnorderedModelRun {
 public:
  UnorderedModelRun(KeySpace keys, std::size_t depth_cap, std::uint64_t ops, std::uint64_t seed)
      : keys_(keys), cap_(depth_cap), ops_(ops), rng_(seed), m_(Mode::kUnordered) {}

  void run() {
    for (op_ = 0; op_ < ops_; ++op_) {
      step();
      if (testing::Test::HasFailure()) return;
    }
    finish();
  }

 private:
  using Bag = std::vector<Cookie>;  // multiset of cookies of one key
  static std::uint64_t id(Key k) {
    return (std::uint64_t{static_cast<std::uint32_t>(k.source)} << 32) |
           static_cast<std::uint32_t>(k.tag);
  }
  static bool remove_from(Bag& bag, Cookie c) {
    auto it = std::find(bag.begin(), bag.end(), c);
    if (it == bag.end()) return false;
    *it = bag.back();
    bag.pop_back();
    return true;
  }
  std::string where() const { return "op " + std::to_string(op_); }

  Key busy_key(const std::unordered_map<std::uint64_t, Bag>& side) {
    // A key with entries on `side` (the map keeps only non-empty bags).
    auto it = std::next(side.begin(), rng_() % side.size());
    return Key{static_cast<std::int32_t>(it->first >> 32),
               static_cast<std::int32_t>(static_cast<std::uint32_t>(it->first))};
  }
  void erase_if_empty(std::unordered_map<std::uint64_t, Bag>& side, Key k) {
    auto it = side.find(id(k));
    if (it != side.end() && it->second.empty()) side.erase(it);
  }

  void step() {
    if (unexpected_count_ > cap_) return do_post(busy_key(unexpected_));
    if (posted_count_ > cap_) return do_arrive(busy_key(posted_));
    const unsigned r = rng_() % 100;
    if (r < 30) return do_post(keys_.message(rng_));
    if (r < 60) return do_arrive(keys_.message(rng_));
    if (r < 70) return do_probe(keys_.message(rng_));
    if (r < 76) return do_take(keys_.message(rng_));
    if (r < 90) return do_cancel();
    return do_batch();
  }

  // The engine matched message `msg` with key k from its queue.
  void consume_message(Key k, Cookie msg) {
    ASSERT_TRUE(remove_from(unexpected_[id(k)], msg)) << where() << " not a queued message of the key";
    erase_if_empty(unexpected_, k);
    --unexpected_count_;
    ASSERT_TRUE(consumed_.insert(msg).second) << where() << " message consumed twice";
  }
  void consume_receive(Key k, Cookie recv) {
    ASSERT_TRUE(remove_from(posted_[id(k)], recv)) << where() << " not a queued receive of the key";
    erase_if_empty(posted_, k);
    --posted_count_;
  }
  void queue_receive(Key k, Cookie recv, RecvHandle h) {
    ASSERT_EQ(unexpected_.count(id(k)), 0u) << where() << " receive queued beside a message of its key";
    posted_[id(k)].push_back(recv);
    ++posted_count_;
    handles_.push_back(HandleInfo{h, k, recv});
    if (handles_.size() > 64) handles_.erase(handles_.begin() + (rng_() % 64));
  }
  void queue_message(Key k, Cookie msg) {
    ASSERT_EQ(posted_.count(id(k)), 0u) << where() << " message queued beside a receive of its key";
    unexpected_[id(k)].push_back(msg);
    ++unexpected_count_;
  }

  void do_post(Key k) {
    const Cookie c = next_cookie_++;
    const PostResult p = m_.post(k, c);
    if (p.matched()) {
      ASSERT_EQ(p.partner_aux, aux_of(p.partner)) << where() << " aux of the matched message";
      consume_message(k, p.partner);
    } else {
      queue_receive(k, c, p.handle);
    }
  }
  void do_arrive(Key k) {
    const Cookie c = next_cookie_++;
    arrived_.push_back(c);
    const ArriveResult a = m_.arrive_with(k, [c] { return c; }, aux_of(c));
    if (a.matched()) {
      consume_receive(k, a.partner);
      ASSERT_TRUE(consumed_.insert(c).second);
    } else {
      queue_message(k, c);
    }
  }
  void do_probe(Key k) {
    const ProbeResult p = m_.probe(k);
    auto it = unexpected_.find(id(k));
    ASSERT_EQ(p.found, it != unexpected_.end()) << where();
    if (p.found) {
      ASSERT_NE(std::find(it->second.begin(), it->second.end(), p.cookie), it->second.end());
      ASSERT_EQ(p.aux, aux_of(p.cookie)) << where();
    }
  }
  void do_take(Key k) {
    const bool expect = unexpected_.count(id(k)) != 0;
    const ProbeResult t = m_.take(k);
    ASSERT_EQ(t.found, expect) << where();
    if (t.found) {
      ASSERT_EQ(t.aux, aux_of(t.cookie)) << where();
      consume_message(k, t.cookie);
    }
  }
  void do_cancel() {
    if (handles_.empty()) return;
    const HandleInfo h = handles_[rng_() % handles_.size()];
    auto it = posted_.find(id(h.key));
    const bool expect = it != posted_.end() &&
                        std::find(it->second.begin(), it->second.end(), h.cookie) != it->second.end();
    ASSERT_EQ(m_.cancel(h.handle), expect) << where();
    if (expect) consume_receive(h.key, h.cookie);
  }

  void do_batch() {
    const std::uint32_t na = rng_() % 17;
    const std::uint32_t nr = rng_() % 17;
    std::vector<Entry> arrivals(na);
    std::vector<Entry> receives(nr);
    for (Entry& e : arrivals) {
      e = Entry{keys_.message(rng_), next_cookie_, aux_of(next_cookie_)};
      ++next_cookie_;
      arrived_.push_back(e.cookie);
    }
    for (Entry& e : receives) e = Entry{keys_.message(rng_), next_cookie_++};
    std::vector<BatchPair> pairs(na + nr);
    std::vector<std::uint32_t> qa(na);
    std::vector<QueuedReceive> qr(nr);
    const MatcherBatchCounts c = m_.match_batch(arrivals.data(), na, receives.data(), nr,
                                                {pairs.data(), qa.data(), qr.data()});
    ASSERT_EQ(c.status, Status::kMatched);
    std::vector<int> seen_a(na, 0);
    std::vector<int> seen_r(nr, 0);
    for (std::uint32_t i = 0; i < c.pairs; ++i) {
      const BatchPair& p = pairs[i];
      if (p.arrival != kFromQueue) {
        ++seen_a[p.arrival];
        ASSERT_EQ(p.arrival_cookie, arrivals[p.arrival].cookie);
        ASSERT_TRUE(consumed_.insert(p.arrival_cookie).second) << where();
      }
      if (p.receive != kFromQueue) {
        ++seen_r[p.receive];
        ASSERT_EQ(p.receive_cookie, receives[p.receive].cookie);
      }
      ASSERT_FALSE(p.arrival == kFromQueue && p.receive == kFromQueue);
      if (p.arrival == kFromQueue) {
        ASSERT_EQ(p.arrival_aux, aux_of(p.arrival_cookie)) << where() << " aux of a queued message";
        consume_message(receives[p.receive].key, p.arrival_cookie);
      } else if (p.receive == kFromQueue) {
        consume_receive(arrivals[p.arrival].key, p.receive_cookie);
      } else {
        ASSERT_EQ(arrivals[p.arrival].key, receives[p.receive].key) << where();
      }
    }
    for (std::uint32_t i = 0; i < c.queued_arrivals; ++i) {
      ++seen_a[qa[i]];
      if (i > 0) {
        ASSERT_LT(qa[i - 1], qa[i]) << "queued arrivals out of order";
      }
    }
    for (std::uint32_t i = 0; i < c.queued_receives; ++i) {
      ++seen_r[qr[i].index];
      if (i > 0) {
        ASSERT_LT(qr[i - 1].index, qr[i].index) << "queued receives out of order";
      }
    }
    for (int s : seen_a) ASSERT_EQ(s, 1) << where() << " batch arrival not accounted once";
    for (int s : seen_r) ASSERT_EQ(s, 1) << where() << " batch receive not accounted once";
    // Queue the leftovers in the model after all matches, then check that
    // nothing queued could have matched (queue_* assert maximality).
    for (std::uint32_t i = 0; i < c.queued_arrivals; ++i) {
      queue_message(arrivals[qa[i]].key, arrivals[qa[i]].cookie);
    }
    for (std::uint32_t i = 0; i < c.queued_receives; ++i) {
      const Entry& e = receives[qr[i].index];
      queue_receive(e.key, e.cookie, qr[i].handle);
    }
  }

  void finish() {
    const Stats s = m_.stats();
    ASSERT_EQ(s.posted_depth, posted_count_);
    ASSERT_EQ(s.unexpected_depth, unexpected_count_);
    // Nothing lost: enough receives match every remaining message once.
    while (!unexpected_.empty()) {
      do_post(busy_key(unexpected_));
      if (testing::Test::HasFailure()) return;
    }
    ASSERT_EQ(m_.stats().unexpected_depth, 0u);
    for (Cookie c : arrived_) ASSERT_EQ(consumed_.count(c), 1u) << "message " << c << " lost";
    const Drained d = m_.drain();
    ASSERT_EQ(d.posted.size(), posted_count_);
    for (const Entry& e : d.posted) {
      auto it = posted_.find(id(e.key));
      ASSERT_NE(it, posted_.end());
      ASSERT_TRUE(remove_from(it->second, e.cookie));
    }
  }

  struct HandleInfo {
    RecvHandle handle;
    Key key;
    Cookie cookie;
  };

  KeySpace keys_;
  std::size_t cap_;
  std::uint64_t ops_;
  std::mt19937_64 rng_;
  Matcher m_;
  std::uint64_t op_ = 0;
  Cookie next_cookie_ = 1;
  std::unordered_map<std::uint64_t, Bag> posted_;
  std::unordered_map<std::uint64_t, Bag> unexpected_;
  std::size_t posted_count_ = 0;
  std::size_t unexpected_count_ = 0;
  std::unordered_set<Cookie> consumed_;  // messages matched or taken
  std::vector<Cookie> arrived_;
  std::vector<HandleInfo> handles_;
};

TEST(UnorderedModel, FewKeysHighMultiplicity) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    UnorderedModelRun({2, 3}, 64, scaled(200000), seed).run();
    if (HasFailure()) return;
  }
}

TEST(UnorderedModel, ManyKeysDeepQueues) {
  for (std::uint64_t seed = 11; seed <= 13; ++seed) {
    UnorderedModelRun({64, 64}, 2048, scaled(150000), seed).run();
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace mpix::match
