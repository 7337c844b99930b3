// Queues of the modes without wildcards (Mode::kOrdered, Mode::kUnordered).
//
// One hash bucket per (source, tag), holding a FIFO of either posted
// receives or unexpected messages (never both: see Bucket).
// Without wildcards two entries can only match if their keys are equal, so
// MPI's non-overtaking rule reduces to "the head of the FIFO of the same key
// is the partner", and each operation is one hash probe plus O(1) list work.
// The unordered mode uses the same FIFOs: FIFO is one of the schedules the
// unordered contract allows, and it cannot starve an entry.
#ifndef MPIX_MATCH_EXACT_QUEUES_H_
#define MPIX_MATCH_EXACT_QUEUES_H_

#include "match/queue_core.h"

namespace mpix::match::detail {

class ExactQueues {
 public:
  ExactQueues() : core_(/*with_index_links=*/false) {}

  PostResult post(Key k, Cookie receive) {
    return post_with(k, [receive] { return receive; });
  }
  // post() whose cookie is made only if the receive is queued (a blocking
  // receive whose message is here needs no record of its own).
  template <class MakeCookie>
  PostResult post_with(Key k, MakeCookie&& make_cookie) {
    if (!is_valid_message_key(k)) return PostResult{Status::kInvalidKey, 0, {}};
    ++core_.counters.posts;
    PostResult r{Status::kQueued, 0, {}};
    if (match_or_queue</*kIncomingIsMessage=*/false>(pack(k), make_cookie, 0, r.partner, r.partner_aux, r.handle)) {
      r.status = Status::kMatched;
    }
    return r;
  }

  ArriveResult arrive(Key k, Cookie message, Cookie aux = 0) {
    return arrive_with(k, [message] { return message; }, aux);
  }
  // arrive() whose cookie is made only if the message is queued; aux is
  // queued with it (Matcher::arrive_with).
  template <class MakeCookie>
  ArriveResult arrive_with(Key k, MakeCookie&& make_cookie, Cookie aux = 0) {
    if (!is_valid_message_key(k)) return ArriveResult{Status::kInvalidKey, 0};
    ++core_.counters.arrivals;
    ArriveResult r{Status::kQueued, 0};
    RecvHandle unused;
    Cookie unused_aux = 0;
    if (match_or_queue</*kIncomingIsMessage=*/true>(pack(k), make_cookie, aux, r.partner, unused_aux, unused)) {
      r.status = Status::kMatched;
    }
    return r;
  }

  // Whether anything is queued under k (a receive or a message): a new
  // entry of key k must then meet it first.
  bool key_busy(Key k) {
    if (!is_valid_message_key(k)) return false;
    const Bucket* b = core_.table.find(pack(k));
    return b != nullptr && (b->has_messages() || b->has_receives());
  }

  ProbeResult probe(Key k) {
    ++core_.counters.probes;
    if (!is_valid_message_key(k)) return ProbeResult{false, 0};
    const Bucket* b = core_.table.find(pack(k));
    if (b == nullptr || !b->has_messages()) return ProbeResult{false, 0};
    return ProbeResult{true, b->head_cookie, b->head_word};
  }

  ProbeResult take(Key k) {
    if (!is_valid_message_key(k)) return ProbeResult{false, 0};
    core_.tick();
    Bucket* b = core_.table.find(pack(k));
    if (b == nullptr || !b->has_messages()) return ProbeResult{false, 0};
    const Cookie aux = b->head_word;
    const Cookie c = pop_partner(b, /*unexpected=*/true);
    ++core_.counters.takes;
    return ProbeResult{true, c, aux};
  }

  bool cancel(RecvHandle h) {
    if (h.seq == 0 || !core_.pool.is_open_slot(h.slot)) return false;
    const Node& n = core_.pool.node(h.slot);
    // Sequence numbers are never reused, so equality proves the slot still
    // holds the very receive the handle was made for.
    if (n.seq != h.seq) return false;
    core_.tick();
    Bucket* b = core_.table.find(n.key);
    core_.fifo_unlink(*b, h.slot);
    core_.pool.release(h.slot);
    core_.note_dequeued(/*unexpected=*/false);
    ++core_.counters.cancels;
    return true;
  }

  void prefetch(Key k) const { core_.table.prefetch(pack(k)); }

  QueueCore& core() { return core_; }
  const QueueCore& core() const { return core_; }

  std::vector<Entry> snapshot(bool unexpected) {
    return core_.snapshot(unexpected, [](const Bucket&) { return false; });
  }

  void reset() { core_.reset_queues(); }

 private:
  // Matches against the other side's FIFO of the key, or queues on this side.
  // aux: the incoming entry's (queued with it); partner_aux: the partner's.
  template <bool kIncomingIsMessage, class MakeCookie>
  bool match_or_queue(PackedKey k, MakeCookie&& make_cookie, Cookie aux, Cookie& partner, Cookie& partner_aux,
                      RecvHandle& queued) {
    core_.tick();
    core_.table.reserve(1);
    Bucket* b = core_.table.find_or_insert(k);
    if (!b->empty() && b->holds_unexpected() != kIncomingIsMessage) {
      partner_aux = b->head_word;
      partner = pop_partner(b, !kIncomingIsMessage);
      ++core_.counters.matches;
      return true;
    }
    b->set_holds_unexpected(kIncomingIsMessage);
    queued = core_.fifo_push_new(*b, k, make_cookie(), aux);
    core_.note_queued(kIncomingIsMessage);
    return false;
  }

  // Removes the head of a non-empty FIFO (the oldest entry of the key, which
  // MPI's non-overtaking rule makes the partner) and returns its cookie.
  Cookie pop_partner(Bucket* b, bool unexpected) {
    const Cookie c = b->head_cookie;
    const std::uint32_t slot = core_.fifo_pop(*b);
    core_.pool.release(slot);
    core_.note_dequeued(unexpected);
    return c;
  }

  QueueCore core_;
};

}  // namespace mpix::match::detail

#endif  // MPIX_MATCH_EXACT_QUEUES_H_
