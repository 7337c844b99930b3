// mpix::match::ShardedMatcher: the matching of one communicator without
// wildcards, split by key over shards, each a Matcher behind its own lock,
// so that threads receiving on different keys match side by side instead
// of taking turns on one lock (issue 27).
//
// Why splitting is legal: without wildcards a receive (source, tag) can
// only take messages of exactly that key, and MPI's non-overtaking rule
// only orders messages one receive could take both of. So the order that
// must be kept is per key, and every key lives whole in one shard. (With
// kAnySource or kAnyTag a receive spans keys: such communicators keep one
// Matcher; this class refuses the wildcard mode.)
//
//   ShardedMatcher m(Mode::kOrdered, 64);
//   {
//     auto s = m.lock(key);          // the key's shard, locked until s goes
//     PostResult p = s->post(key, cookie);
//     ...                            // deliver while still holding it
//   }
//
// The caller holds a shard's lock across whatever must not interleave with
// another thread's match of the same key (taking the matched message's
// payload, completing the receive). Locks are never nested by this class;
// a caller needing two shards takes them in index order (lock_shard()).
#ifndef MPIX_MATCH_SHARDED_MATCHER_H_
#define MPIX_MATCH_SHARDED_MATCHER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "match/matcher.h"

namespace mpix::match {

// A test-and-test-and-set lock for a shard: held for a match (tens of
// nanoseconds), so a waiter spins on its own cached copy of the word and
// only after a long while gives its core up (oversubscribed processes).
class ShardLock {
 public:
  bool try_lock() noexcept {
    return !taken_.load(std::memory_order_relaxed) && !taken_.exchange(true, std::memory_order_acquire);
  }
  void lock() noexcept {
    if (!try_lock()) lock_slow();
  }
  void unlock() noexcept { taken_.store(false, std::memory_order_release); }

 private:
  void lock_slow() noexcept;
  std::atomic<bool> taken_{false};
};

class ShardedMatcher {
  // One cache line or more per shard: two threads working on two shards
  // must not share the line holding either lock.
  struct alignas(64) Shard {
    explicit Shard(Mode mode) : matcher(mode) {}
    ShardLock lock;
    Matcher matcher;
  };

 public:
  // mode: kOrdered or kUnordered (kOrderedWildcard throws
  // std::invalid_argument: a wildcard receive spans shards). shards:
  // rounded up to a power of two, 1 to kMaxShards.
  ShardedMatcher(Mode mode, unsigned shards);
  ~ShardedMatcher();
  ShardedMatcher(const ShardedMatcher&) = delete;
  ShardedMatcher& operator=(const ShardedMatcher&) = delete;

  static constexpr unsigned kMaxShards = 1024;

  Mode mode() const { return mode_; }
  unsigned shards() const { return static_cast<unsigned>(shards_.size()); }
  // The shard of key k. Blocks of kBlockTags consecutive tags of one
  // source share a shard, so a thread that owns a range of tags (the usual
  // pattern) works in a few shards whose lines stay in its cache; the next
  // blocks take the next shards, so ranges of different threads within a
  // span of shards() blocks never share one (with a hash per block, two of
  // bench_match_threads' threads collided and scaled 1.14x instead of 2x on
  // two cores). Each span starts at a shard hashed from (source, span), so
  // sources and strided tags still scatter. (Each shard's key table places
  // keys by another mix, so a shard's keys spread over its table.)
  static constexpr unsigned kBlockBits = 4;
  static constexpr int kBlockTags = 1 << kBlockBits;
  unsigned shard_of(Key k) const {
    if (shift_ >= 64) return 0u;
    const auto block = static_cast<std::uint32_t>(k.tag) >> kBlockBits;
    const std::uint64_t span = detail::pack(k.source, static_cast<std::int32_t>(block >> span_bits_)) ^ kShardSalt;
    return static_cast<unsigned>((detail::mix64(span) >> shift_) + block) & mask_;
  }

  // A shard's Matcher with its lock held; the lock goes with the object.
  class Locked {
   public:
    Locked(Locked&& o) noexcept : shard_(o.shard_), index_(o.index_) { o.shard_ = nullptr; }
    Locked& operator=(Locked&&) = delete;
    Locked(const Locked&) = delete;
    ~Locked() {
      if (shard_ != nullptr) shard_->lock.unlock();
    }
    Matcher* operator->() const { return &shard_->matcher; }
    Matcher& operator*() const { return shard_->matcher; }
    unsigned index() const { return index_; }

   private:
    friend class ShardedMatcher;
    Locked(Shard* s, unsigned index) : shard_(s), index_(index) { s->lock.lock(); }
    Shard* shard_;
    unsigned index_;
  };
  Locked lock(Key k) { return lock_shard(shard_of(k)); }
  Locked lock_shard(unsigned i) { return Locked(shards_[i].get(), i); }

  // One-call forms (lock, operate, unlock) for callers with nothing to do
  // under the lock. A wildcard key gets kInvalidKey / not found, as from a
  // Matcher of an exact mode. cancel() needs the receive's pattern to find
  // its shard.
  PostResult post(Key pattern, Cookie receive) { return lock(pattern)->post(pattern, receive); }
  ArriveResult arrive(Key envelope, Cookie message, Cookie aux = 0) {
    return lock(envelope)->arrive_with(envelope, [message] { return message; }, aux);
  }
  ProbeResult probe(Key pattern) { return lock(pattern)->probe(pattern); }
  ProbeResult take(Key pattern) { return lock(pattern)->take(pattern); }
  bool cancel(Key pattern, RecvHandle handle) { return lock(pattern)->cancel(handle); }

  // Mode::kUnordered only: Matcher::match_batch over the shards, each
  // shard's part under its lock (one shard at a time). Indexes in the
  // output are into the caller's arrays; queued_arrivals and
  // queued_receives come out in input order, pairs in no stated order.
  MatcherBatchCounts match_batch(const Entry* arrivals, std::uint32_t n_arrivals, const Entry* receives,
                                 std::uint32_t n_receives, const MatcherBatchOutput& out);

  // Sums over the shards, each read under its lock (a snapshot per shard,
  // not of the whole). max_posted_depth and max_unexpected_depth are the
  // sums of the shards' peaks: an upper bound of the whole's peak.
  Stats stats();
  std::size_t depth();
  // Queued entries shard by shard; within a key in queue order (the only
  // order MPI defines here).
  std::vector<Entry> posted_entries();
  std::vector<Entry> unexpected_entries();
  Drained drain();
  void trim();

 private:
  // Keeps shard_of() from being a function of the key table's own home
  // slot (both start from the packed key).
  static constexpr std::uint64_t kShardSalt = 0x5bd1e9955bd1e995ull;
  struct BatchScratch;
  // One of Matcher's entry lists, shard after shard.
  std::vector<Entry> gather(std::vector<Entry> (Matcher::*entries)());

  Mode mode_;
  unsigned shift_;      // 64 - log2(shards); 64 for one shard
  unsigned span_bits_;  // log2(shards)
  unsigned mask_;       // shards - 1
  std::vector<std::unique_ptr<Shard>> shards_;
  std::unique_ptr<BatchScratch> batch_;
  ShardLock batch_lock_;  // batch_ is one scratch: one batch at a time
};

}  // namespace mpix::match

#endif  // MPIX_MATCH_SHARDED_MATCHER_H_
