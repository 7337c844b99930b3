// Cold paths of the key table: growing, shrinking, rehashing.
#include "match/key_table.h"

#include <utility>

namespace mpix::match::detail {

namespace {
std::size_t capacity_for(std::size_t keys, std::size_t max_load_inverse) {
  std::size_t cap = KeyTable::kMinCapacity;
  while (cap < keys * max_load_inverse) cap *= 2;
  return cap;
}
}  // namespace

std::size_t KeyTable::live_keys() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    n += slots_[i].key != kEmptyPackedKey && !slots_[i].empty();
  }
  return n;
}

void KeyTable::rebuild_for(std::size_t inserts) {
  // Load 1/4 after the rebuild: at least capacity/4 inserts pay for the next.
  rehash(capacity_for(live_keys() + inserts, 4));
}

void KeyTable::trim(std::size_t peak_keys) {
  // Nothing to give back while the recent peak alone fills an eighth: no
  // walk of the whole table (it missed the cache on every line of it, a
  // fifth of a deep queue's misses while it drained).
  if (slots_.size() <= kMinCapacity || peak_keys * 8 >= slots_.size()) return;
  const std::size_t live = live_keys();
  if (peak_keys < live) peak_keys = live;
  if (slots_.size() > kMinCapacity && peak_keys * 8 < slots_.size()) {
    rehash(capacity_for(peak_keys, 4));  // lands at load 1/4: room both ways
  }
}

void KeyTable::rehash(std::size_t new_capacity) {
  HugePageArray<Bucket> old(new_capacity, Bucket{kEmptyPackedKey, kNil, kNil, 0, 0});
  old.swap(slots_);
  mask_ = new_capacity - 1;
  grow_at_ = new_capacity / 2;
  size_ = 0;
  for (const Bucket& b : old) {
    if (b.key == kEmptyPackedKey || b.empty()) continue;
    ++size_;
    std::size_t i = home(b.key);
    while (slots_[i].key != kEmptyPackedKey) i = (i + 1) & mask_;
    slots_[i] = b;
  }
}

}  // namespace mpix::match::detail
