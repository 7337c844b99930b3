// Intrusive doubly linked lists over pool slot numbers (not pointers: slots
// are 32-bit and stay valid while the pool's chunk table is reallocated).
//
// Used for the wildcard indexes, where an entry leaves from anywhere in the
// list: prev == kNil exactly at the head, so a node in the middle is
// unlinked without looking up the list head (which lives in a hash bucket).
// The per-key FIFOs have their own variant in QueueCore (cached head,
// unmaintained head prev).
#ifndef MPIX_MATCH_INTRUSIVE_LIST_H_
#define MPIX_MATCH_INTRUSIVE_LIST_H_

#include <cstdint>

namespace mpix::match::detail {

// Slot numbers are 31-bit (the key table packs a flag beside its tail slot).
inline constexpr std::uint32_t kNil = 0x7fffffffu;
inline constexpr std::uint32_t kMaxSlots = kNil;

struct Link {
  std::uint32_t next;
  std::uint32_t prev;
};

// A list head is any type with a `head` member and tail()/set_tail() (a
// key-table bucket, or ListHead below); `link(slot)` returns a slot's Link&.
struct ListHead {
  std::uint32_t head = kNil;
  std::uint32_t tail_slot = kNil;
  std::uint32_t tail() const { return tail_slot; }
  void set_tail(std::uint32_t slot) { tail_slot = slot; }
};

template <class Head, class LinkOf>
inline void dlist_push_back(Head& h, std::uint32_t slot, LinkOf&& link) {
  Link& l = link(slot);
  const std::uint32_t tail = h.tail();
  l.next = kNil;
  l.prev = tail;
  if (tail == kNil) {
    h.head = slot;
  } else {
    link(tail).next = slot;
  }
  h.set_tail(slot);
}

// Unlinks `slot` from its neighbours and returns its old links. When the slot
// was at an end of the list (a returned field is kNil) the caller must also
// pass the result to dlist_fix_ends on the list head.
template <class LinkOf>
inline Link dlist_unlink_neighbours(std::uint32_t slot, LinkOf&& link) {
  const Link l = link(slot);
  if (l.prev != kNil) link(l.prev).next = l.next;
  if (l.next != kNil) link(l.next).prev = l.prev;
  return l;
}

inline bool dlist_was_at_end(Link removed) {
  return removed.prev == kNil || removed.next == kNil;
}

template <class Head>
inline void dlist_fix_ends(Head& h, Link removed) {
  if (removed.prev == kNil) h.head = removed.next;
  if (removed.next == kNil) h.set_tail(removed.prev);
}

}  // namespace mpix::match::detail

#endif  // MPIX_MATCH_INTRUSIVE_LIST_H_
