// Batch matching: a batch of arrivals against a batch of receives in one
// call, with keys compared for equality only (no wildcards: negative values
// have no special meaning here). The GPU matcher (device/) implements the
// same two functions with the same types.
//
// Both functions are maximal: afterwards no unmatched arrival has a key equal
// to an unmatched receive. They differ in which pairs they form:
//  - match_batch_fifo: within a key, the i-th arrival (in input order) pairs
//    with the i-th receive (in input order): MPI order without wildcards.
//  - match_batch_unordered: any pairing of equal keys (the CPU version pairs
//    each key's entries last-in first-out, so callers and tests cannot come
//    to rely on an order).
// Pairs come out in an unspecified order; unmatched indexes come out in their
// original relative order. Cost: O(n_arrivals + n_receives) expected, no
// allocation once the scratch has grown to the largest batch seen.
#ifndef MPIX_MATCH_BATCH_H_
#define MPIX_MATCH_BATCH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "match/key.h"

namespace mpix::match {

struct BatchKey {
  std::uint32_t context;  // communicator id, so one batch can span communicators
  std::int32_t source;
  std::int32_t tag;
};

inline constexpr bool operator==(BatchKey a, BatchKey b) {
  return a.context == b.context && a.source == b.source && a.tag == b.tag;
}

// The hash of a batch key, shared by the CPU and GPU batch matchers.
MPIX_HOST_DEVICE inline std::uint64_t batch_key_hash(BatchKey k) {
  const std::uint64_t st = (std::uint64_t{static_cast<std::uint32_t>(k.source)} << 32) |
                           static_cast<std::uint32_t>(k.tag);
  return detail::mix64(st ^ (std::uint64_t{k.context} * 0x9e3779b97f4a7c15ULL));
}

struct BatchItem {
  BatchKey key;
  Cookie cookie;
};

struct BatchPair {
  std::uint32_t arrival;  // index into the arrivals (kFromQueue: see Matcher)
  std::uint32_t receive;  // index into the receives (kFromQueue: see Matcher)
  Cookie arrival_cookie;
  Cookie receive_cookie;
  // Matcher::match_batch, arrival == kFromQueue: the queued message's aux
  // word (Matcher::arrive_with); otherwise 0 (the caller's arrival has it).
  Cookie arrival_aux = 0;
};

// Caller-owned output arrays. Capacities: pairs >= min(n_arrivals,
// n_receives), unmatched_arrivals >= n_arrivals, unmatched_receives >=
// n_receives.
struct BatchOutput {
  BatchPair* pairs;
  std::uint32_t* unmatched_arrivals;
  std::uint32_t* unmatched_receives;
};

struct BatchCounts {
  std::uint32_t pairs;
  std::uint32_t unmatched_arrivals;
  std::uint32_t unmatched_receives;
};

// Working memory of the batch functions; keep one per thread and reuse it.
class BatchScratch {
 public:
  BatchScratch() = default;
  std::size_t bytes() const;
  void release();  // gives the memory back

 private:
  friend struct BatchEngine;
  struct Slot {
    BatchKey key;
    std::uint32_t epoch;  // slot in use iff epoch == current epoch
    std::uint32_t head;
    std::uint32_t tail;
  };
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> next_;      // chain of equal keys, per hashed item
  std::vector<std::uint8_t> consumed_;   // per hashed item
  std::uint32_t epoch_ = 0;
};

BatchCounts match_batch_fifo(const BatchItem* arrivals, std::uint32_t n_arrivals,
                             const BatchItem* receives, std::uint32_t n_receives,
                             const BatchOutput& out, BatchScratch& scratch);

BatchCounts match_batch_unordered(const BatchItem* arrivals, std::uint32_t n_arrivals,
                                  const BatchItem* receives, std::uint32_t n_receives,
                                  const BatchOutput& out, BatchScratch& scratch);

}  // namespace mpix::match

#endif  // MPIX_MATCH_BATCH_H_
