// The sharded matcher (match/sharded_matcher.h): the same answers as one
// matcher, one thread at a time (differential against the reference), and
// under threads that post and deliver side by side: every message matched
// once, to the receive MPI's per-key order names, nothing lost. Run by the
// ThreadSanitizer build too (CI's tsan stage), which checks the locking.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "match/sharded_matcher.h"
#include "reference_matcher.h"

#ifndef MPIX_MATCH_TEST_DEFAULT_SCALE
#define MPIX_MATCH_TEST_DEFAULT_SCALE 1.0
#endif

namespace mpix::match {
namespace {

using test::ReferenceMatcher;

double scale() {
  const char* s = std::getenv("MPIX_TEST_SCALE");
  const double v = s != nullptr ? std::atof(s) : MPIX_MATCH_TEST_DEFAULT_SCALE;
  return v > 0 ? v : MPIX_MATCH_TEST_DEFAULT_SCALE;
}
std::uint64_t scaled(std::uint64_t n) { return std::max<std::uint64_t>(500, static_cast<std::uint64_t>(n * scale())); }

TEST(ShardedMatcher, RefusesWildcards) {
  EXPECT_THROW(ShardedMatcher(Mode::kOrderedWildcard, 8), std::invalid_argument);
  EXPECT_THROW(ShardedMatcher(Mode::kOrdered, 0), std::invalid_argument);
  EXPECT_THROW(ShardedMatcher(Mode::kOrdered, ShardedMatcher::kMaxShards + 1), std::invalid_argument);
  ShardedMatcher m(Mode::kOrdered, 8);
  EXPECT_EQ(m.post(Key{kAnySource, 3}, 1).status, Status::kInvalidKey);
  EXPECT_EQ(m.post(Key{0, kAnyTag}, 1).status, Status::kInvalidKey);
  EXPECT_EQ(m.arrive(Key{0, kAnyTag}, 1).status, Status::kInvalidKey);
  EXPECT_FALSE(m.probe(Key{kAnySource, 3}).found);
  EXPECT_EQ(m.depth(), 0u);
}

TEST(ShardedMatcher, RoundsShardsToPowersOfTwo) {
  EXPECT_EQ(ShardedMatcher(Mode::kOrdered, 1).shards(), 1u);
  EXPECT_EQ(ShardedMatcher(Mode::kOrdered, 5).shards(), 8u);
  EXPECT_EQ(ShardedMatcher(Mode::kUnordered, 64).shards(), 64u);
  ShardedMatcher one(Mode::kOrdered, 1);
  EXPECT_EQ(one.shard_of(Key{3, 77}), 0u);
}

// Threads that own a range of consecutive tags each (the usual pattern)
// must not all land on a few shards: 4096 consecutive tags of 4 sources
// (1024 blocks of 16) over 64 shards, none empty, none with twice its
// share. A block's tags share a shard (a thread's keys stay together),
// and consecutive blocks take distinct shards.
TEST(ShardedMatcher, ConsecutiveTagsSpreadOverShards) {
  ShardedMatcher m(Mode::kOrdered, 64);
  std::vector<int> per(m.shards());
  for (int s = 0; s < 4; ++s)
    for (int t = 0; t < 4096; ++t) {
      per[m.shard_of(Key{s, t})]++;
      if (t % ShardedMatcher::kBlockTags != 0) {
        ASSERT_EQ(m.shard_of(Key{s, t}), m.shard_of(Key{s, t - 1})) << "tag " << t;
      }
    }
  // Threads owning consecutive ranges: within a span of shards() blocks
  // no two blocks share a shard.
  for (int s = 0; s < 4; ++s)
    for (int span = 0; span < 4; ++span) {
      std::vector<bool> seen(m.shards());
      for (unsigned b = 0; b < m.shards(); ++b) {
        const unsigned k = m.shard_of(Key{s, static_cast<int>((span * m.shards() + b) * ShardedMatcher::kBlockTags)});
        ASSERT_FALSE(seen[k]) << "source " << s << " span " << span << " block " << b;
        seen[k] = true;
      }
    }
  const double share = 4.0 * 4096 / m.shards();
  for (unsigned k = 0; k < m.shards(); ++k) {
    EXPECT_GT(per[k], 0) << "shard " << k;
    EXPECT_LT(per[k], 2 * share) << "shard " << k;
  }
}

std::string str(Key k) { return "(" + std::to_string(k.source) + "," + std::to_string(k.tag) + ")"; }

// One thread: every answer equals the reference's (which knows nothing of
// shards), including which message a receive takes and what a cancel finds.
TEST(ShardedMatcher, DifferentialAgainstReference) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    ShardedMatcher m(Mode::kOrdered, seed == 1 ? 1 : 16);
    ReferenceMatcher ref;
    std::mt19937_64 rng(seed);
    struct Handle {
      Key key;
      RecvHandle h;
      std::uint64_t ref_id;
    };
    std::vector<Handle> handles;
    Cookie next = 1;
    const std::uint64_t ops = scaled(200000);
    for (std::uint64_t op = 0; op < ops; ++op) {
      const Key k{static_cast<std::int32_t>(rng() % 3), static_cast<std::int32_t>(rng() % 40)};
      const unsigned r = rng() % 100;
      if (r < 35) {
        std::uint64_t id = 0;
        const auto want = ref.post(k, next, &id);
        const PostResult got = m.post(k, next);
        ASSERT_EQ(got.matched(), want.has_value()) << "seed " << seed << " op " << op << " post " << str(k);
        if (want) {
          ASSERT_EQ(got.partner, *want) << "seed " << seed << " op " << op;
        } else {
          handles.push_back(Handle{k, got.handle, id});
        }
        ++next;
      } else if (r < 70) {
        const auto want = ref.arrive(k, next);
        const ArriveResult got = m.arrive(k, next, next * 3 + 1);
        ASSERT_EQ(got.matched(), want.has_value()) << "seed " << seed << " op " << op << " arrive " << str(k);
        if (want) { ASSERT_EQ(got.partner, *want) << "seed " << seed << " op " << op; }
        ++next;
      } else if (r < 80) {
        const auto want = ref.probe(k);
        const ProbeResult got = m.probe(k);
        ASSERT_EQ(got.found, want.has_value()) << "seed " << seed << " op " << op << " probe";
        if (want) {
          ASSERT_EQ(got.cookie, *want);
          ASSERT_EQ(got.aux, *want * 3 + 1) << "the aux word queued with the message";
        }
      } else if (r < 88) {
        const auto want = ref.take(k);
        const ProbeResult got = m.take(k);
        ASSERT_EQ(got.found, want.has_value()) << "seed " << seed << " op " << op << " take";
        if (want) { ASSERT_EQ(got.cookie, *want); }
      } else if (!handles.empty()) {
        const std::size_t i = handles.size() - 1 - rng() % std::min<std::size_t>(handles.size(), 16);
        const bool want = ref.cancel(handles[i].ref_id);
        ASSERT_EQ(m.cancel(handles[i].key, handles[i].h), want) << "seed " << seed << " op " << op << " cancel";
      }
      if (op % 4999 == 0) {
        // Per key, the queues hold the same entries in the same order.
        std::map<std::pair<int, int>, std::vector<Cookie>> want_p, got_p, want_u, got_u;
        for (const auto& p : ref.posted()) want_p[{p.pattern.source, p.pattern.tag}].push_back(p.cookie);
        for (const auto& u : ref.unexpected()) want_u[{u.envelope.source, u.envelope.tag}].push_back(u.cookie);
        for (const Entry& e : m.posted_entries()) got_p[{e.key.source, e.key.tag}].push_back(e.cookie);
        for (const Entry& e : m.unexpected_entries()) got_u[{e.key.source, e.key.tag}].push_back(e.cookie);
        ASSERT_EQ(got_p, want_p) << "seed " << seed << " op " << op << " posted queues";
        ASSERT_EQ(got_u, want_u) << "seed " << seed << " op " << op << " unexpected queues";
        const Stats s = m.stats();
        ASSERT_EQ(s.posted_depth, ref.posted().size());
        ASSERT_EQ(s.unexpected_depth, ref.unexpected().size());
        ASSERT_EQ(m.depth(), ref.posted().size() + ref.unexpected().size());
      }
    }
    const Drained d = m.drain();
    EXPECT_EQ(d.posted.size(), ref.posted().size());
    EXPECT_EQ(d.unexpected.size(), ref.unexpected().size());
    EXPECT_EQ(m.depth(), 0u);
  }
}

// Threads side by side. Thread t owns keys (t % 2, t * 32 .. t * 32 + 31):
// it posts their receives, while thread (t + 1) % T makes their messages
// arrive (a transport thread delivering for another). Both sides number
// their entries per key; a cookie carries (key, number, side). Whoever
// matches writes the pair into the receive's slot under the shard's lock
// (as the engine delivers a payload). Ordered mode: the n-th receive of a
// key must get the n-th message of that key, every one exactly once;
// unordered: every receive gets one message of its key, none twice.
constexpr int kKeysPerThread = 32;

struct Traffic {
  int threads;
  std::uint64_t per_key;  // receives (and messages) per key
};

Cookie cookie_of(int key, std::uint64_t n, bool message) {
  return (static_cast<Cookie>(key) << 40) | (n << 1) | (message ? 1 : 0);
}
int key_of(Cookie c) { return static_cast<int>(c >> 40); }
std::uint64_t number_of(Cookie c) { return (c & ((Cookie{1} << 40) - 1)) >> 1; }
Key key_for(int key) {
  const int t = key / kKeysPerThread;
  return Key{t % 2, key};
}

void run_threads(Mode mode, unsigned shards, const Traffic& tr) {
  ShardedMatcher m(mode, shards);
  const int n_keys = tr.threads * kKeysPerThread;
  // slot[key][n]: the message cookie the n-th receive of key got (0: none
  // yet). Written under the key's shard lock by whichever thread matched.
  std::vector<std::vector<Cookie>> slot(n_keys, std::vector<Cookie>(tr.per_key, 0));
  std::atomic<int> ready{0};
  auto body = [&](int t) {
    std::mt19937_64 rng(1000 + t);
    std::vector<std::uint64_t> posted(kKeysPerThread, 0), sent(kKeysPerThread, 0);
    const int own = t * kKeysPerThread;
    const int fed = ((t + tr.threads - 1) % tr.threads) * kKeysPerThread;  // thread t-1's keys
    ready.fetch_add(1);
    while (ready.load() < tr.threads) std::this_thread::yield();
    std::uint64_t left = 2 * tr.per_key * kKeysPerThread;
    while (left > 0) {
      const int i = static_cast<int>(rng() % kKeysPerThread);
      if (rng() % 2 == 0 && posted[i] < tr.per_key) {
        const int key = own + i;
        const Cookie rc = cookie_of(key, posted[i]++, false);
        auto s = m.lock(key_for(key));
        const PostResult p = s->post(key_for(key), rc);
        ASSERT_NE(p.status, Status::kInvalidKey);
        if (p.matched()) slot[key][number_of(rc)] = p.partner;
        --left;
      } else if (sent[i] < tr.per_key) {
        const int key = fed + i;
        const Cookie mc = cookie_of(key, sent[i]++, true);
        auto s = m.lock(key_for(key));
        const ArriveResult a = s->arrive_with(key_for(key), [mc] { return mc; });
        if (a.matched()) slot[key_of(a.partner)][number_of(a.partner)] = mc;
        --left;
      }
      // Else this key is done both ways: the next pick takes another.
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < tr.threads; ++t) pool.emplace_back(body, t);
  for (auto& th : pool) th.join();
  if (testing::Test::HasFatalFailure()) return;

  EXPECT_EQ(m.depth(), 0u) << "as many messages as receives per key: nothing may stay queued";
  const Stats st = m.stats();
  EXPECT_EQ(st.matches, static_cast<std::uint64_t>(n_keys) * tr.per_key);
  std::vector<std::vector<bool>> used(n_keys, std::vector<bool>(tr.per_key, false));
  for (int key = 0; key < n_keys; ++key) {
    for (std::uint64_t n = 0; n < tr.per_key; ++n) {
      const Cookie got = slot[key][n];
      ASSERT_NE(got, 0u) << "receive " << n << " of key " << key << " got nothing";
      ASSERT_EQ(got & 1, 1u);
      ASSERT_EQ(key_of(got), key) << "receive " << n << " of key " << key << " got another key's message";
      if (mode == Mode::kOrdered) {
        ASSERT_EQ(number_of(got), n) << "key " << key << ": out of order";
      }
      ASSERT_FALSE(used[key][number_of(got)]) << "message " << number_of(got) << " of key " << key << " twice";
      used[key][number_of(got)] = true;
    }
  }
}

TEST(ShardedMatcher, ThreadsOrdered) { run_threads(Mode::kOrdered, 16, Traffic{8, scaled(400)}); }
TEST(ShardedMatcher, ThreadsOrderedOneShard) { run_threads(Mode::kOrdered, 1, Traffic{4, scaled(200)}); }
TEST(ShardedMatcher, ThreadsUnordered) { run_threads(Mode::kUnordered, 64, Traffic{8, scaled(400)}); }

// Batches: the same number of pairs as one unordered matcher fed the same
// entries (per key the count is fixed: what the two sides have in common),
// every pair of one key, every index used at most once, and nothing left
// that could still match (maximal).
TEST(ShardedMatcher, BatchesAgainstOneMatcher) {
  ShardedMatcher m(Mode::kUnordered, 8);
  Matcher one(Mode::kUnordered);
  std::mt19937_64 rng(7);
  Cookie next = 1;
  for (int round = 0; round < 200; ++round) {
    std::vector<Entry> arr(rng() % 300), rec(rng() % 300);
    for (Entry& e : arr) e = Entry{Key{static_cast<std::int32_t>(rng() % 2), static_cast<std::int32_t>(rng() % 50)}, next++};
    for (Entry& e : rec) e = Entry{Key{static_cast<std::int32_t>(rng() % 2), static_cast<std::int32_t>(rng() % 50)}, next++};
    const auto na = static_cast<std::uint32_t>(arr.size()), nr = static_cast<std::uint32_t>(rec.size());
    std::vector<BatchPair> pairs(na + nr), pairs1(na + nr);
    std::vector<std::uint32_t> qa(na), qa1(na);
    std::vector<QueuedReceive> qr(nr), qr1(nr);
    const MatcherBatchCounts c =
        m.match_batch(arr.data(), na, rec.data(), nr, MatcherBatchOutput{pairs.data(), qa.data(), qr.data()});
    const MatcherBatchCounts c1 =
        one.match_batch(arr.data(), na, rec.data(), nr, MatcherBatchOutput{pairs1.data(), qa1.data(), qr1.data()});
    ASSERT_EQ(c.status, Status::kMatched);
    ASSERT_EQ(c.pairs, c1.pairs) << "round " << round;
    ASSERT_EQ(c.queued_arrivals, c1.queued_arrivals) << "round " << round;
    ASSERT_EQ(c.queued_receives, c1.queued_receives) << "round " << round;
    std::vector<bool> a_used(na), r_used(nr);
    for (std::uint32_t p = 0; p < c.pairs; ++p) {
      const BatchPair& bp = pairs[p];
      Key ka{}, kr{};
      if (bp.arrival != kFromQueue) {
        ASSERT_LT(bp.arrival, na);
        ASSERT_FALSE(a_used[bp.arrival]);
        a_used[bp.arrival] = true;
        ASSERT_EQ(bp.arrival_cookie, arr[bp.arrival].cookie);
        ka = arr[bp.arrival].key;
      }
      if (bp.receive != kFromQueue) {
        ASSERT_LT(bp.receive, nr);
        ASSERT_FALSE(r_used[bp.receive]);
        r_used[bp.receive] = true;
        ASSERT_EQ(bp.receive_cookie, rec[bp.receive].cookie);
        kr = rec[bp.receive].key;
      }
      ASSERT_FALSE(bp.arrival == kFromQueue && bp.receive == kFromQueue);
      if (bp.arrival != kFromQueue && bp.receive != kFromQueue) { ASSERT_EQ(ka, kr); }
    }
    for (std::uint32_t q = 0; q < c.queued_arrivals; ++q) {
      ASSERT_FALSE(a_used[qa[q]]);
      if (q > 0) { ASSERT_LT(qa[q - 1], qa[q]) << "queued arrivals in input order"; }
    }
    for (std::uint32_t q = 0; q < c.queued_receives; ++q) {
      ASSERT_FALSE(r_used[qr[q].index]);
      if (q > 0) { ASSERT_LT(qr[q - 1].index, qr[q].index) << "queued receives in input order"; }
    }
    // Maximal: no key with both a receive and a message queued.
    std::map<std::pair<int, int>, int> posted;
    for (const Entry& e : m.posted_entries()) posted[{e.key.source, e.key.tag}]++;
    for (const Entry& e : m.unexpected_entries())
      ASSERT_EQ(posted.count({e.key.source, e.key.tag}), 0u) << "round " << round << " not maximal at " << str(e.key);
  }
  EXPECT_EQ(m.stats().matches, one.stats().matches);
  EXPECT_EQ(m.depth(), one.depth());
  ShardedMatcher mo(Mode::kOrdered, 4);
  Entry e{Key{0, 1}, 1};
  std::vector<BatchPair> pairs(2);
  std::uint32_t qa = 0;
  QueuedReceive qr{};
  EXPECT_EQ(mo.match_batch(&e, 1, &e, 1, MatcherBatchOutput{pairs.data(), &qa, &qr}).status, Status::kWrongMode);
}

}  // namespace
}  // namespace mpix::match
