// CPU batch matching: hash the smaller side by key into per-key chains, then
// stream the other side through the table in input order.
#include "match/batch.h"

#include <stdexcept>

#include "match/intrusive_list.h"

namespace mpix::match {

struct BatchEngine {
  // kFifo: chains keep input order (the i-th of a key pairs with the i-th of
  // the same key on the other side); otherwise chains are stacks.
  template <bool kFifo>
  static BatchCounts run(const BatchItem* arrivals, std::uint32_t n_arrivals,
                         const BatchItem* receives, std::uint32_t n_receives,
                         const BatchOutput& out, BatchScratch& s);

 private:
  static std::size_t hash(BatchKey k) { return batch_key_hash(k); }
  static std::size_t prepare(BatchScratch& s, std::uint32_t n_hashed);
};

std::size_t BatchEngine::prepare(BatchScratch& s, std::uint32_t n_hashed) {
  if (n_hashed >= detail::kNil) throw std::length_error("mpix::match: batch too large");
  std::size_t cap = 16;
  while (cap < 2 * std::size_t{n_hashed}) cap *= 2;
  if (s.slots_.size() < cap) s.slots_.assign(cap, BatchScratch::Slot{});
  if (s.next_.size() < n_hashed) {
    s.next_.resize(n_hashed);
    s.consumed_.resize(n_hashed);
  }
  // A new epoch empties the table without touching it; clear for real only
  // when the counter wraps.
  if (++s.epoch_ == 0) {
    for (BatchScratch::Slot& slot : s.slots_) slot.epoch = 0;
    s.epoch_ = 1;
  }
  return cap - 1;
}

template <bool kFifo>
BatchCounts BatchEngine::run(const BatchItem* arrivals, std::uint32_t n_arrivals,
                             const BatchItem* receives, std::uint32_t n_receives,
                             const BatchOutput& out, BatchScratch& s) {
  using detail::kNil;
  // Pairing within a key is symmetric, so hash whichever side is smaller.
  const bool hash_receives = n_receives <= n_arrivals;
  const BatchItem* hashed = hash_receives ? receives : arrivals;
  const BatchItem* streamed = hash_receives ? arrivals : receives;
  const std::uint32_t n_hashed = hash_receives ? n_receives : n_arrivals;
  const std::uint32_t n_streamed = hash_receives ? n_arrivals : n_receives;
  std::uint32_t* unmatched_hashed = hash_receives ? out.unmatched_receives : out.unmatched_arrivals;
  std::uint32_t* unmatched_streamed = hash_receives ? out.unmatched_arrivals : out.unmatched_receives;

  const std::size_t mask = prepare(s, n_hashed);
  const std::uint32_t epoch = s.epoch_;
  BatchScratch::Slot* slots = s.slots_.data();
  std::uint32_t* next = s.next_.data();
  std::uint8_t* consumed = s.consumed_.data();

  for (std::uint32_t i = 0; i < n_hashed; ++i) {
    const BatchKey k = hashed[i].key;
    std::size_t h = hash(k) & mask;
    while (slots[h].epoch == epoch && !(slots[h].key == k)) h = (h + 1) & mask;
    BatchScratch::Slot& slot = slots[h];
    consumed[i] = 0;
    if (slot.epoch != epoch) {
      slot = BatchScratch::Slot{k, epoch, i, i};
      next[i] = kNil;
    } else if (kFifo) {
      next[slot.tail] = i;
      next[i] = kNil;
      slot.tail = i;
    } else {
      next[i] = slot.head;
      slot.head = i;
    }
  }

  BatchCounts counts{0, 0, 0};
  std::uint32_t n_unmatched_streamed = 0;
  for (std::uint32_t j = 0; j < n_streamed; ++j) {
    const BatchKey k = streamed[j].key;
    std::size_t h = hash(k) & mask;
    while (slots[h].epoch == epoch && !(slots[h].key == k)) h = (h + 1) & mask;
    BatchScratch::Slot& slot = slots[h];
    if (slot.epoch != epoch || slot.head == kNil) {
      unmatched_streamed[n_unmatched_streamed++] = j;
      continue;
    }
    const std::uint32_t i = slot.head;
    slot.head = next[i];
    consumed[i] = 1;
    const std::uint32_t a = hash_receives ? j : i;
    const std::uint32_t r = hash_receives ? i : j;
    out.pairs[counts.pairs++] = BatchPair{a, r, arrivals[a].cookie, receives[r].cookie};
  }

  std::uint32_t n_unmatched_hashed = 0;
  for (std::uint32_t i = 0; i < n_hashed; ++i) {
    if (!consumed[i]) unmatched_hashed[n_unmatched_hashed++] = i;
  }
  counts.unmatched_arrivals = hash_receives ? n_unmatched_streamed : n_unmatched_hashed;
  counts.unmatched_receives = hash_receives ? n_unmatched_hashed : n_unmatched_streamed;
  return counts;
}

BatchCounts match_batch_fifo(const BatchItem* arrivals, std::uint32_t n_arrivals,
                             const BatchItem* receives, std::uint32_t n_receives,
                             const BatchOutput& out, BatchScratch& scratch) {
  return BatchEngine::run<true>(arrivals, n_arrivals, receives, n_receives, out, scratch);
}

BatchCounts match_batch_unordered(const BatchItem* arrivals, std::uint32_t n_arrivals,
                                  const BatchItem* receives, std::uint32_t n_receives,
                                  const BatchOutput& out, BatchScratch& scratch) {
  return BatchEngine::run<false>(arrivals, n_arrivals, receives, n_receives, out, scratch);
}

std::size_t BatchScratch::bytes() const {
  return slots_.capacity() * sizeof(Slot) + next_.capacity() * sizeof(std::uint32_t) +
         consumed_.capacity();
}

void BatchScratch::release() { *this = BatchScratch(); }

}  // namespace mpix::match
