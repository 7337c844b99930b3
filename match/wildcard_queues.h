// Queues of the ordered mode with wildcards (Mode::kOrderedWildcard): full
// MPI matching with kAnySource / kAnyTag, in the spirit of Flajslik et al.
// (hash tables plus ordering information).
//
// Every entry carries a sequence number (its enqueue order). One key table
// holds four kinds of buckets, told apart by which fields are wildcards:
//
//   bucket key       posted side: FIFO of       unexpected side: index of
//   (s, t)           receives (s, t)            messages (s, t) (their FIFO)
//   (ANY, t)         receives (ANY, t)          all messages with tag t
//   (s, ANY)         receives (s, ANY)          all messages from s
//   (ANY, ANY)       receives (ANY, ANY)        (all messages: all_, no bucket)
//
// A posted receive lives in exactly one FIFO, that of its own pattern. An
// unexpected message lives in its exact FIFO and in each enabled index
// (through IndexLinks). Every list is in sequence order: entries are only
// ever appended.
//
// Arriving message (s, t): the receives that accept it are exactly those of
// the FIFOs (s,t), (ANY,t), (s,ANY), (ANY,ANY); the earliest posted is the
// head with the smallest sequence number (cached in the buckets). FIFOs of a
// kind with no pending receive are skipped by counter, so non-wildcard
// traffic probes one bucket. Posted receive: the earliest-arrived eligible
// message is the head of the one list named by the pattern. Both directions
// are O(1) expected.
//
// The three indexes are enabled lazily, each the first time a pattern needs
// it (building it from the queued messages in sequence order, O(n log n)
// once), and stay enabled. Until then non-wildcard traffic costs what it
// costs in Mode::kOrdered plus the sequence comparisons.
//
// A bucket whose list runs empty stays (see KeyTable); its side bit is then
// meaningless, so tests use has_messages()/has_receives(). A bucket's two
// sides are never both in use: a pending receive and a pending
// message that accept each other cannot coexist (whichever came second would
// have matched); e.g. a pending (ANY, t) receive means no message with tag t
// is queued, so the tag-t index is empty.
#ifndef MPIX_MATCH_WILDCARD_QUEUES_H_
#define MPIX_MATCH_WILDCARD_QUEUES_H_

#include <cassert>
#include <cstdint>

#include "match/queue_core.h"

namespace mpix::match::detail {

// Which fields of a packed receive pattern are wildcards (a wildcard packs to 0).
enum Pattern : int { kExactPattern = 0, kAnySourcePattern = 1, kAnyTagPattern = 2,
                     kAnyBothPattern = 3 };
inline int pattern_of(PackedKey p) {
  return ((p >> 32) == 0 ? kAnySourcePattern : 0) |
         (static_cast<std::uint32_t>(p) == 0 ? kAnyTagPattern : 0);
}
// The index that lists the messages a wildcard pattern may take.
inline IndexId index_of(int pattern) {
  return pattern == kAnySourcePattern ? kByTag
         : pattern == kAnyTagPattern  ? kBySource
                                      : kAll;
}

class WildcardQueues {
 public:
  WildcardQueues() : core_(/*with_index_links=*/true) {}

  PostResult post(Key k, Cookie receive) {
    return post_with(k, [receive] { return receive; });
  }
  // post() whose cookie is made only if the receive is queued.
  template <class MakeCookie>
  PostResult post_with(Key k, MakeCookie&& make_cookie) {
    if (!is_valid_receive_key(k)) return PostResult{Status::kInvalidKey, 0, {}};
    ++core_.counters.posts;
    core_.tick();
    const PackedKey pk = pack(k);
    const int pattern = pattern_of(pk);
    if (pattern != kExactPattern && !index_on_[index_of(pattern)]) {
      enable_index(index_of(pattern));
    }
    if (pattern == kAnyBothPattern && all_.head != kNil) {
      ++core_.counters.matches;
      return PostResult{Status::kMatched, take_message(all_.head), {}};
    }
    core_.table.reserve(1);
    Bucket* b = core_.table.find_or_insert(pk);
    if (b->has_messages()) {
      // The head of the pattern's message list is the earliest eligible arrival.
      ++core_.counters.matches;
      const Cookie c = pattern == kExactPattern ? take_exact_head(b, pk)
                                                : take_message(b->head);
      return PostResult{Status::kMatched, c, {}};
    }
    b->set_holds_unexpected(false);  // the list is empty or holds receives
    const RecvHandle h = core_.fifo_push_new(*b, pk, make_cookie());
    ++pending_[pattern];
    core_.note_queued(/*unexpected=*/false);
    return PostResult{Status::kQueued, 0, h};
  }

  ArriveResult arrive(Key k, Cookie message, Cookie aux = 0) {
    return arrive_with(k, [message] { return message; }, aux);
  }
  // arrive() whose cookie is made only if the message is queued. This mode
  // keeps no aux words (its buckets hold the heads' sequence numbers): a
  // message with one is refused, nothing done.
  template <class MakeCookie>
  ArriveResult arrive_with(Key k, MakeCookie&& make_cookie, Cookie aux = 0) {
    if (aux != 0) return ArriveResult{Status::kWrongMode, 0};
    if (!is_valid_message_key(k)) return ArriveResult{Status::kInvalidKey, 0};
    ++core_.counters.arrivals;
    core_.tick();
    core_.table.reserve(3);  // no rehash below: the bucket pointers stay valid
    const PackedKey pk = pack(k);
    Bucket* exact = core_.table.find(pk);
    Bucket* best = nullptr;
    std::uint64_t best_seq = ~std::uint64_t{0};
    auto consider = [&](Bucket* b) {
      if (b != nullptr && b->has_receives() && b->head_word < best_seq) {
        best_seq = b->head_word;
        best = b;
      }
    };
    consider(exact);
    if (pending_[kAnySourcePattern] != 0) consider(core_.table.find(pack(kAnySource, k.tag)));
    if (pending_[kAnyTagPattern] != 0) consider(core_.table.find(pack(k.source, kAnyTag)));
    if (pending_[kAnyBothPattern] != 0) consider(core_.table.find(pack(kAnySource, kAnyTag)));
    if (best != nullptr) return ArriveResult{Status::kMatched, take_receive(best)};
    queue_message(pk, k, make_cookie(), exact);
    return ArriveResult{Status::kQueued, 0};
  }

  // Whether a new entry of exact key k could meet something queued: an
  // entry under k itself, or any queued wildcard receive (conservatively,
  // whatever its pattern).
  bool key_busy(Key k) {
    if (pending_[kAnySourcePattern] != 0 || pending_[kAnyTagPattern] != 0 || pending_[kAnyBothPattern] != 0)
      return true;
    const Bucket* b = core_.table.find(pack(k));
    return b != nullptr && (b->has_messages() || b->has_receives());
  }

  ProbeResult probe(Key k) {
    ++core_.counters.probes;
    if (!is_valid_receive_key(k)) return ProbeResult{false, 0};
    const PackedKey pk = pack(k);
    const int pattern = pattern_of(pk);
    if (pattern == kExactPattern) {
      const Bucket* b = core_.table.find(pk);
      if (b == nullptr || !b->has_messages()) return ProbeResult{false, 0};
      return ProbeResult{true, b->head_cookie};
    }
    if (!index_on_[index_of(pattern)]) enable_index(index_of(pattern));
    const std::uint32_t slot = oldest_message(pk);
    if (slot == kNil) return ProbeResult{false, 0};
    return ProbeResult{true, core_.pool.node(slot).cookie};
  }

  ProbeResult take(Key k) {
    if (!is_valid_receive_key(k)) return ProbeResult{false, 0};
    core_.tick();
    const PackedKey pk = pack(k);
    const int pattern = pattern_of(pk);
    if (pattern != kExactPattern && !index_on_[index_of(pattern)]) {
      enable_index(index_of(pattern));
    }
    const std::uint32_t slot = oldest_message(pk);
    if (slot == kNil) return ProbeResult{false, 0};
    ++core_.counters.takes;
    return ProbeResult{true, take_message(slot)};
  }

  bool cancel(RecvHandle h) {
    if (h.seq == 0 || !core_.pool.is_open_slot(h.slot)) return false;
    const Node& n = core_.pool.node(h.slot);
    if (n.seq != h.seq) return false;  // seqs are never reused: stale handle
    core_.tick();
    Bucket* b = core_.table.find(n.key);
    --pending_[pattern_of(n.key)];
    core_.fifo_unlink(*b, h.slot);
    core_.pool.release(h.slot);
    core_.note_dequeued(/*unexpected=*/false);
    ++core_.counters.cancels;
    return true;
  }

  QueueCore& core() { return core_; }
  const QueueCore& core() const { return core_; }

  std::vector<Entry> snapshot(bool unexpected) {
    // Message lists of wildcard buckets are indexes over the exact FIFOs.
    return core_.snapshot(unexpected, [](const Bucket& b) {
      return b.has_messages() && pattern_of(b.key) != kExactPattern;
    });
  }

  void reset();

 private:
  IndexLinksOf index_links(IndexId which) { return IndexLinksOf{core_.pool, which}; }

  // Earliest-arrived unexpected message accepted by `pattern`, or kNil.
  // Requires the pattern's index to be enabled.
  std::uint32_t oldest_message(PackedKey pattern) {
    if (pattern_of(pattern) == kAnyBothPattern) return all_.head;
    const Bucket* b = core_.table.find(pattern);
    return (b != nullptr && b->has_messages()) ? b->head : kNil;
  }

  // Pops the head of a posted FIFO that matched an arrival.
  Cookie take_receive(Bucket* b) {
    const int pattern = pattern_of(b->key);
    const Cookie c = b->head_cookie;
    const std::uint32_t slot = core_.fifo_pop(*b);
    core_.pool.release(slot);
    --pending_[pattern];
    core_.note_dequeued(/*unexpected=*/false);
    ++core_.counters.matches;
    return c;
  }

  void queue_message(PackedKey pk, Key k, Cookie message, Bucket* exact);
  Cookie take_exact_head(Bucket* exact, PackedKey pk);
  Cookie take_message(std::uint32_t slot);
  void unlink_from_indexes(std::uint32_t slot, Key k);
  void unlink_from_index(std::uint32_t slot, IndexId which, PackedKey index_key);
  void enable_index(IndexId which);  // cold

  QueueCore core_;
  ListHead all_;                          // every unexpected message, in arrival order
  std::size_t pending_[4] = {};           // queued receives per Pattern
  bool index_on_[kIndexCount] = {};       // per IndexId
};

// Requires the reserve(3) of arrive(): up to three buckets are inserted and
// `exact` (null or the message side of pk) must stay valid meanwhile.
inline void WildcardQueues::queue_message(PackedKey pk, Key k, Cookie message,
                                          Bucket* exact) {
  if (exact == nullptr) exact = core_.table.find_or_insert(pk);
  exact->set_holds_unexpected(true);
  const std::uint32_t slot = core_.fifo_push_new(*exact, pk, message).slot;
  if (index_on_[kByTag]) {
    Bucket* by_tag = core_.table.find_or_insert(pack(kAnySource, k.tag));
    assert(!by_tag->has_receives());  // else a receive would have matched
    by_tag->set_holds_unexpected(true);
    dlist_push_back(*by_tag, slot, index_links(kByTag));
  }
  if (index_on_[kBySource]) {
    Bucket* by_source = core_.table.find_or_insert(pack(k.source, kAnyTag));
    assert(!by_source->has_receives());
    by_source->set_holds_unexpected(true);
    dlist_push_back(*by_source, slot, index_links(kBySource));
  }
  if (index_on_[kAll]) dlist_push_back(all_, slot, index_links(kAll));
  core_.note_queued(/*unexpected=*/true);
}

// Matches the head of an exact message FIFO (pattern == key): the cookie
// comes from the bucket, so without enabled indexes no node is read.
inline Cookie WildcardQueues::take_exact_head(Bucket* exact, PackedKey pk) {
  const Cookie c = exact->head_cookie;
  const std::uint32_t slot = core_.fifo_pop(*exact);
  unlink_from_indexes(slot, unpack(pk));
  core_.pool.release(slot);
  core_.note_dequeued(/*unexpected=*/true);
  return c;
}

// Removes a matched or taken message found through an index.
inline Cookie WildcardQueues::take_message(std::uint32_t slot) {
  const Node& n = core_.pool.node(slot);
  const Cookie c = n.cookie;
  const PackedKey pk = n.key;
  Bucket* exact = core_.table.find(pk);
  // The message heads its exact FIFO: a pattern that accepts one message of
  // a key accepts all of them, and of those the earliest arrival is chosen.
  assert(exact->head == slot);
  core_.fifo_pop(*exact);
  unlink_from_indexes(slot, unpack(pk));
  core_.pool.release(slot);
  core_.note_dequeued(/*unexpected=*/true);
  return c;
}

inline void WildcardQueues::unlink_from_indexes(std::uint32_t slot, Key k) {
  if (index_on_[kByTag]) unlink_from_index(slot, kByTag, pack(kAnySource, k.tag));
  if (index_on_[kBySource]) unlink_from_index(slot, kBySource, pack(k.source, kAnyTag));
  if (index_on_[kAll]) {
    const Link l = dlist_unlink_neighbours(slot, index_links(kAll));
    if (dlist_was_at_end(l)) dlist_fix_ends(all_, l);
  }
}

inline void WildcardQueues::unlink_from_index(std::uint32_t slot, IndexId which,
                                              PackedKey index_key) {
  const Link l = dlist_unlink_neighbours(slot, index_links(which));
  if (!dlist_was_at_end(l)) return;  // the list head in the bucket is unchanged
  dlist_fix_ends(*core_.table.find(index_key), l);
}

}  // namespace mpix::match::detail

#endif  // MPIX_MATCH_WILDCARD_QUEUES_H_
