// State shared by the queue engines of every mode: the entry pool, the key
// table, the sequence counter, statistics, and the periodic maintenance that
// gives memory back.
#ifndef MPIX_MATCH_QUEUE_CORE_H_
#define MPIX_MATCH_QUEUE_CORE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "match/key_table.h"
#include "match/matcher_types.h"
#include "match/node_pool.h"

namespace mpix::match::detail {

class QueueCore {
 public:
  explicit QueueCore(bool with_index_links);

  NodePool pool;
  KeyTable table;
  Stats counters;  // depth, max and total fields (keys/bytes filled by stats())

  // Appends a new entry to the FIFO of its key's bucket. Only writes to
  // nodes (stores do not stall the pipeline the way loads do). Returns the
  // handle of the new entry. aux: an unexpected message's, in the exact
  // modes only (the wildcard mode keeps none); receives have none, and
  // their slots' aux words are neither written nor read.
  RecvHandle fifo_push_new(Bucket& b, PackedKey key, Cookie cookie, Cookie aux = 0) {
    const std::uint32_t slot = pool.allocate();
    const std::uint64_t seq = ++seq_;
    Node& n = pool.node(slot);
    n.cookie = cookie;
    n.seq = seq;
    n.key = key;
    n.fifo.next = kNil;
    if (!with_index_links_ && b.holds_unexpected()) pool.aux(slot) = aux;
    const std::uint32_t tail = b.tail();
    if (tail == kNil) {
      b.head = slot;
      b.head_cookie = cookie;
      b.head_word = with_index_links_ ? seq : aux;
    } else {
      n.fifo.prev = tail;
      pool.node(tail).fifo.next = slot;
    }
    b.set_tail(slot);
    return RecvHandle{seq, slot};
  }

  // Removes the head of a non-empty FIFO and returns its slot (the caller
  // has its cookie in b.head_cookie, read before this call). Reads a node
  // only when another entry becomes the head.
  std::uint32_t fifo_pop(Bucket& b) {
    const std::uint32_t slot = b.head;
    if (slot == b.tail()) {
      b.head = kNil;
      b.set_tail(kNil);
      return slot;
    }
    const std::uint32_t next = pool.node(slot).fifo.next;
    const Node& n = pool.node(next);
    b.head = next;
    b.head_cookie = n.cookie;
    b.head_word = with_index_links_ ? n.seq : b.holds_unexpected() ? pool.aux(next) : 0;
    return slot;
  }

  // Removes any entry of a FIFO. The head's `prev` is never maintained (so
  // that fifo_pop writes nothing to the next node); whether `slot` is the
  // head is told by the bucket instead.
  void fifo_unlink(Bucket& b, std::uint32_t slot) {
    if (slot == b.head) {
      fifo_pop(b);
      return;
    }
    const Link l = pool.node(slot).fifo;
    pool.node(l.prev).fifo.next = l.next;
    if (l.next == kNil) {
      b.set_tail(l.prev);
    } else {
      pool.node(l.next).fifo.prev = l.prev;
    }
  }

  void note_queued(bool unexpected) {
    std::size_t& depth = unexpected ? counters.unexpected_depth : counters.posted_depth;
    std::size_t& max = unexpected ? counters.max_unexpected_depth : counters.max_posted_depth;
    if (++depth > max) max = depth;
    if (pool.live() > window_peak_live_) window_peak_live_ = pool.live();
  }
  // One queued entry (of the given side) left the matcher.
  void note_dequeued(bool unexpected) {
    --(unexpected ? counters.unexpected_depth : counters.posted_depth);
  }

  // Called once per operation: runs maintenance every so many operations.
  void tick() {
    if (--ticks_left_ == 0) maintain(false);
  }

  // Frees pool chunks and shrinks the table down to what the peak usage of
  // the last window needs (now == true: down to the current usage). The
  // window is at least twice the capacity in operations, so the O(capacity)
  // cost is amortised to O(1) per operation.
  void maintain(bool now);

  Stats stats() const;

  // Entries of the FIFOs of `side`, in sequence order. `skip` tells which
  // buckets hold lists that are not FIFOs of queued entries (the wildcard
  // indexes) and must be left out.
  template <class SkipBucket>
  std::vector<Entry> snapshot(bool unexpected, SkipBucket&& skip);

  // Empties the queues (pool and table start over). Sequence numbers
  // continue, so handles from before stay invalid.
  void reset_queues();

 private:
  bool with_index_links_;
  std::uint64_t seq_ = 0;
  std::uint64_t ticks_left_;
  std::size_t window_peak_live_ = 0;  // most entries at once in this window
};

template <class SkipBucket>
std::vector<Entry> QueueCore::snapshot(bool unexpected, SkipBucket&& skip) {
  struct Item {
    std::uint64_t seq;
    Entry entry;
  };
  std::vector<Item> items;
  table.for_each([&](const Bucket& b) {
    if (b.empty() || b.holds_unexpected() != unexpected || skip(b)) return;
    for (std::uint32_t s = b.head; s != kNil; s = pool.node(s).fifo.next) {
      const Node& n = pool.node(s);
      items.push_back(Item{n.seq, Entry{unpack(n.key), n.cookie, with_index_links_ || !unexpected ? 0 : pool.aux(s)}});
    }
  });
  std::vector<Entry> out;
  out.reserve(items.size());
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.seq < b.seq; });
  for (const Item& i : items) out.push_back(i.entry);
  return out;
}

}  // namespace mpix::match::detail

#endif  // MPIX_MATCH_QUEUE_CORE_H_
