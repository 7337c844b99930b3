// Open-addressing hash table from a packed key to the list of queue entries
// with that key.
//
// Linear probing (a miss costs one cache line most of the time). A bucket
// whose list runs empty stays in the table: MPI programs reuse their keys
// (the same tag every iteration), and a key that comes back then costs no
// insert, while nothing is ever deleted from the middle of a probe run.
// Empty buckets are dropped whenever the table is rebuilt: when the occupied
// slots (live and empty buckets) would pass half the capacity, the table is
// rebuilt at load 1/4 of the live keys, which may be the same size (then the
// capacity/4 inserts since the last rebuild pay for it), and trim() shrinks
// it when the recent peak is far below the capacity. So the load stays at
// most 1/2 and the capacity at most 8x the peak number of live keys.
#ifndef MPIX_MATCH_KEY_TABLE_H_
#define MPIX_MATCH_KEY_TABLE_H_

#include <cstddef>
#include <cstdint>
#include "match/huge_page_array.h"
#include "match/intrusive_list.h"
#include "match/key.h"

namespace mpix::match::detail {

struct Bucket {
  PackedKey key;
  std::uint32_t head;  // first slot of the list, kNil when empty
  // Tail slot (31 bits) and, in bit 31, which queue the list belongs to. A
  // key never has a posted receive and an unexpected message that accept
  // each other at the same time (whichever came second would have matched),
  // so one list per key is enough. Not a bit-field: compilers update those
  // with byte stores, and the next 32-bit load of the word then misses
  // store-to-load forwarding (measured: a quarter of the time of a match).
  std::uint32_t tail_side;
  // Copies of the head entry's cookie and of its sequence number (the
  // wildcard mode, which compares heads across buckets) or its aux word
  // (the exact modes, which never do): FIFO buckets only. Matching the only
  // entry of a key, or comparing heads, then reads no node at all.
  Cookie head_cookie;
  std::uint64_t head_word;

  static constexpr std::uint32_t kSideBit = 0x80000000u;
  bool empty() const { return head == kNil; }
  bool has_messages() const { return head != kNil && holds_unexpected(); }
  bool has_receives() const { return head != kNil && !holds_unexpected(); }
  std::uint32_t tail() const { return tail_side & ~kSideBit; }
  void set_tail(std::uint32_t slot) { tail_side = (tail_side & kSideBit) | slot; }
  bool holds_unexpected() const { return (tail_side & kSideBit) != 0; }
  void set_holds_unexpected(bool unexpected) {
    tail_side = tail() | (unexpected ? kSideBit : 0u);
  }
};
static_assert(sizeof(Bucket) == 32, "two buckets per cache line");

class KeyTable {
 public:
  static constexpr std::size_t kMinCapacity = 16;

  KeyTable() { rehash(kMinCapacity); }

  // Makes room for `n` inserts without rebuilding, so that bucket pointers
  // taken after this call survive up to n find_or_insert calls.
  void reserve(std::size_t n) {
    if (size_ + n > grow_at_) rebuild_for(n);
  }

  Bucket* find(PackedKey k) {
    for (std::size_t i = home(k);; i = (i + 1) & mask_) {
      Bucket& b = slots_[i];
      if (b.key == k) return &b;
      if (b.key == kEmptyPackedKey) return nullptr;
    }
  }

  // Requires a reserve() covering this insert. A new bucket has an empty
  // list; so may an old one (see above).
  Bucket* find_or_insert(PackedKey k) {
    for (std::size_t i = home(k);; i = (i + 1) & mask_) {
      Bucket& b = slots_[i];
      if (b.key == k) return &b;
      if (b.key == kEmptyPackedKey) {
        b = Bucket{k, kNil, kNil, 0, 0};
        ++size_;
        return &b;
      }
    }
  }

  void prefetch(PackedKey k) const { __builtin_prefetch(&slots_[home(k)]); }

  std::size_t occupied() const { return size_; }  // live and empty buckets
  std::size_t live_keys() const;                   // non-empty buckets (a scan)
  std::size_t capacity() const { return slots_.size(); }
  std::size_t bytes() const { return slots_.size() * sizeof(Bucket); }

  // Rebuilds smaller when `peak_keys` (an upper bound of the live keys over
  // the recent past) would use fewer than 1/8 of the slots.
  void trim(std::size_t peak_keys);

  template <class F>
  void for_each(F&& f) {
    for (Bucket& b : slots_) {
      if (b.key != kEmptyPackedKey) f(b);
    }
  }

 private:
  // Keys of one source whose tags differ only in the low kBlockBits bits get
  // adjacent home slots (a block of 16 slots, 512 bytes); blocks are
  // scattered by a full mix of the rest of the key. A sweep over consecutive
  // tags (a common pattern: tag = step or chunk number) then walks lines the
  // hardware prefetcher streams in and jumps to a new random place once per
  // 16 keys instead of once per key. Measured at depth 1M, best order: 2x
  // the rate of 4-slot blocks; unrelated keys (other sources, scattered
  // tags) still spread like a plain hash.
  static constexpr unsigned kBlockBits = 4;
  std::size_t home(PackedKey k) const {
    const std::uint64_t block = mix64(k >> kBlockBits);
    return ((block << kBlockBits) | (k & ((1u << kBlockBits) - 1))) & mask_;
  }
  void rebuild_for(std::size_t inserts);     // cold
  void rehash(std::size_t new_capacity);     // cold: drops empty buckets

  HugePageArray<Bucket> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
  std::size_t grow_at_ = 0;  // capacity / 2
};

}  // namespace mpix::match::detail

#endif  // MPIX_MATCH_KEY_TABLE_H_
