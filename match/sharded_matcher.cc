// Cold parts of the ShardedMatcher: construction, batches, inspection.
#include "match/sharded_matcher.h"

#include <sched.h>

#include <algorithm>
#include <stdexcept>

#include "match/cpu_relax.h"

namespace mpix::match {

void ShardLock::lock_slow() noexcept {
  // A match holds the lock for tens of nanoseconds: spin on a read (the
  // holder's line stays shared until it lets go). Thousands of pauses with
  // the lock still taken mean its holder lost its core: give ours up.
  for (unsigned spins = 0;;) {
    while (taken_.load(std::memory_order_relaxed)) {
      cpu_relax();
      if (++spins % 4096 == 0) sched_yield();
    }
    if (!taken_.exchange(true, std::memory_order_acquire)) return;
  }
}

ShardedMatcher::ShardedMatcher(Mode mode, unsigned shards) : mode_(mode) {
  if (mode == Mode::kOrderedWildcard)
    throw std::invalid_argument("ShardedMatcher: a wildcard receive spans keys, so its matching cannot be sharded");
  if (shards == 0 || shards > kMaxShards) throw std::invalid_argument("ShardedMatcher: 1 to kMaxShards shards");
  unsigned bits = 0;
  while ((1u << bits) < shards) ++bits;
  shift_ = 64 - bits;
  span_bits_ = bits;
  mask_ = (1u << bits) - 1;
  shards_.reserve(1u << bits);
  for (unsigned i = 0; i < (1u << bits); ++i) shards_.push_back(std::make_unique<Shard>(mode));
}

ShardedMatcher::~ShardedMatcher() = default;

struct ShardedMatcher::BatchScratch {
  // Per shard: its entries and where each came from in the caller's arrays.
  std::vector<std::vector<Entry>> arrivals, receives;
  std::vector<std::vector<std::uint32_t>> arrival_from, receive_from;
  std::vector<BatchPair> pairs;
  std::vector<std::uint32_t> queued_arrivals;
  std::vector<QueuedReceive> queued_receives;
};

MatcherBatchCounts ShardedMatcher::match_batch(const Entry* arrivals, std::uint32_t n_arrivals,
                                               const Entry* receives, std::uint32_t n_receives,
                                               const MatcherBatchOutput& out) {
  MatcherBatchCounts c{Status::kMatched, 0, 0, 0};
  if (mode_ != Mode::kUnordered) {
    c.status = Status::kWrongMode;
    return c;
  }
  for (std::uint32_t i = 0; i < n_arrivals; ++i)
    if (!is_valid_message_key(arrivals[i].key)) return c.status = Status::kInvalidKey, c;
  for (std::uint32_t i = 0; i < n_receives; ++i)
    if (!is_valid_message_key(receives[i].key)) return c.status = Status::kInvalidKey, c;

  batch_lock_.lock();
  if (!batch_) batch_ = std::make_unique<BatchScratch>();
  BatchScratch& s = *batch_;
  const unsigned n = shards();
  s.arrivals.resize(n), s.receives.resize(n), s.arrival_from.resize(n), s.receive_from.resize(n);
  for (unsigned k = 0; k < n; ++k) {
    s.arrivals[k].clear(), s.receives[k].clear(), s.arrival_from[k].clear(), s.receive_from[k].clear();
  }
  for (std::uint32_t i = 0; i < n_arrivals; ++i) {
    const unsigned k = shard_of(arrivals[i].key);
    s.arrivals[k].push_back(arrivals[i]);
    s.arrival_from[k].push_back(i);
  }
  for (std::uint32_t i = 0; i < n_receives; ++i) {
    const unsigned k = shard_of(receives[i].key);
    s.receives[k].push_back(receives[i]);
    s.receive_from[k].push_back(i);
  }
  for (unsigned k = 0; k < n; ++k) {
    const auto na = static_cast<std::uint32_t>(s.arrivals[k].size());
    const auto nr = static_cast<std::uint32_t>(s.receives[k].size());
    if (na + nr == 0) continue;
    s.pairs.resize(na + nr), s.queued_arrivals.resize(na), s.queued_receives.resize(nr);
    MatcherBatchCounts part;
    {
      Locked shard = lock_shard(k);
      part = shard->match_batch(s.arrivals[k].data(), na, s.receives[k].data(), nr,
                                MatcherBatchOutput{s.pairs.data(), s.queued_arrivals.data(), s.queued_receives.data()});
    }
    // Keys were checked above and the mode is kUnordered: nothing else
    // can come back.
    for (std::uint32_t p = 0; p < part.pairs; ++p) {
      BatchPair bp = s.pairs[p];
      if (bp.arrival != kFromQueue) bp.arrival = s.arrival_from[k][bp.arrival];
      if (bp.receive != kFromQueue) bp.receive = s.receive_from[k][bp.receive];
      out.pairs[c.pairs++] = bp;
    }
    for (std::uint32_t q = 0; q < part.queued_arrivals; ++q)
      out.queued_arrivals[c.queued_arrivals++] = s.arrival_from[k][s.queued_arrivals[q]];
    for (std::uint32_t q = 0; q < part.queued_receives; ++q) {
      QueuedReceive qr = s.queued_receives[q];
      qr.index = s.receive_from[k][qr.index];
      out.queued_receives[c.queued_receives++] = qr;
    }
  }
  batch_lock_.unlock();
  std::sort(out.queued_arrivals, out.queued_arrivals + c.queued_arrivals);
  std::sort(out.queued_receives, out.queued_receives + c.queued_receives,
            [](const QueuedReceive& a, const QueuedReceive& b) { return a.index < b.index; });
  return c;
}

Stats ShardedMatcher::stats() {
  Stats t;
  for (unsigned k = 0; k < shards(); ++k) t += lock_shard(k)->stats();
  return t;
}

std::size_t ShardedMatcher::depth() {
  std::size_t d = 0;
  for (unsigned k = 0; k < shards(); ++k) d += lock_shard(k)->depth();
  return d;
}

std::vector<Entry> ShardedMatcher::gather(std::vector<Entry> (Matcher::*entries)()) {
  std::vector<Entry> all;
  for (unsigned k = 0; k < shards(); ++k) {
    const std::vector<Entry> part = ((*lock_shard(k)).*entries)();
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

std::vector<Entry> ShardedMatcher::posted_entries() { return gather(&Matcher::posted_entries); }
std::vector<Entry> ShardedMatcher::unexpected_entries() { return gather(&Matcher::unexpected_entries); }

Drained ShardedMatcher::drain() {
  Drained all;
  for (unsigned k = 0; k < shards(); ++k) {
    Drained part = lock_shard(k)->drain();
    all.posted.insert(all.posted.end(), part.posted.begin(), part.posted.end());
    all.unexpected.insert(all.unexpected.end(), part.unexpected.begin(), part.unexpected.end());
  }
  return all;
}

void ShardedMatcher::trim() {
  for (unsigned k = 0; k < shards(); ++k) lock_shard(k)->trim();
}

}  // namespace mpix::match
