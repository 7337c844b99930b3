// Lanes: a no-wildcard communicator's point-to-point split by key so that
// threads of an MPI_THREAD_MULTIPLE program match side by side instead of
// taking turns on the engine lock (issue 27; DESIGN.md, "Threads").
//
// A key (source, tag) belongs to lane (tag >> MPIX_LANE_TAG_SHIFT) % L, so
// that a thread's block of consecutive tags stays in one lane. Each lane
// has its own lock, its own Matcher (every receive and unexpected message of
// its keys, whichever way they came) and its own shared-memory rings to and
// from every member (a progress::shm::Node over the communicator). Legal
// because without wildcards MPI's order is per key, and a key lives whole in
// one lane.
//
// Small contiguous host messages in standard mode go through the lane ring
// and are matched by whichever thread takes them in, under the lane's lock
// alone; receives into contiguous host buffers are posted the same way, as
// lane requests from per-thread caches (request.h), and waited for by their
// flags. Everything else (larger, derived types, device memory, synchronous,
// buffered, ready, persistent, probes, cancels) goes through the engine as
// before, with the engine lock, which matches in the lane's matcher under
// the lane lock too (lock order: engine, then lane; a lane holder never
// waits for the engine lock).
//
// Order between a key's two paths: after handing an engine envelope of a
// matched message to its transport, the sender puts a mark in the lane
// ring it would have used (before it returns, so before any later lane
// message of the calling thread; where the ring is full the mark is owed,
// and goes before the next lane message to that process). The receiver
// pairs marks and envelopes of one sender and lane in order: the engine,
// taking an envelope in, first takes in that lane ring's messages up to the
// next mark and matches the envelope there; an envelope that comes before
// its mark waits in the lane (`early`) and a lane reader that reaches the
// mark matches it then; a reader that reaches a mark whose envelope has
// not come stops there. So each key's messages are matched in the order
// they were sent, whichever path each took, and nobody ever waits for a
// peer while holding a lock. A receive the engine must complete (a
// rendezvous, an engine receive that a lane message met) is handed over to
// the engine's next progress step.
#ifndef MPIX_SRC_P2P_LANES_H
#define MPIX_SRC_P2P_LANES_H

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "match/matcher.h"
#include "match/sharded_matcher.h"
#include "progress/shm_ring.h"
#include "request.h"

namespace mpix::p2p {

struct Message;

// Ring message ids: a lane message, or the mark of an engine envelope.
constexpr std::uint32_t kLaneData = 0;
constexpr std::uint32_t kLaneMark = 1;

struct LaneHeader {
  std::int32_t source;  // rank in the communicator
  std::int32_t tag;
};

class Lanes {
 public:
  Lanes() = default;  // empty: create() makes them
  // Collective over comm (a communicator of the members, for set-up
  // traffic). nullptr (everywhere) where some member is on another node or
  // the rings could not be made. lanes: MPIX_LANES; shift: MPIX_LANE_TAG_SHIFT;
  // eager_limit: MPIX_LANE_EAGER_LIMIT (less where the ring cannot carry it).
  static std::unique_ptr<Lanes> create(MPI_Comm comm, int lanes, unsigned shift, std::size_t eager_limit);

  // A receive matched in a lane that only the engine can complete: the
  // receive and the message (owned) it met.
  struct Handoff {
    Request *r;
    Message *m;
  };
  struct alignas(64) Lane {
    match::ShardLock lock;
    match::Matcher matcher{match::Mode::kOrdered};
    progress::shm::Node node;
    std::vector<Handoff> handoffs;
    std::vector<Handoff> handoffs_spare;
    // By source: engine envelopes that came before their marks, in order.
    std::vector<std::deque<Message *>> early;
    // By destination: marks not in the ring yet (it was full); they go
    // before any later lane message to that destination.
    std::vector<std::uint32_t> owed;
    bool owes = false;
    std::int64_t waiting = 0;     // lane requests queued in the matcher
    // Written under the lock, read without it (MPI_T): no read-modify-write.
    std::atomic<std::uint64_t> messages{0};  // lane messages taken in
    std::atomic<std::uint64_t> marks{0};     // engine envelopes ordered by a mark
    std::atomic<std::uint64_t> inlined{0};   // unexpected lane messages kept without a record
  };

  int count() const { return static_cast<int>(lanes_.size()); }
  Lane &lane(int k) { return *lanes_[static_cast<std::size_t>(k)]; }
  int lane_of(int tag) const { return static_cast<int>((static_cast<unsigned>(tag) >> shift_) % lanes_.size()); }
  // The largest payload a lane message carries.
  std::size_t max_bytes() const { return max_bytes_; }
  // Set when a lane holds handoffs; cleared by the engine as it takes them.
  std::atomic<bool> handoffs_pending{false};

 private:
  std::vector<std::unique_ptr<Lane>> lanes_;
  unsigned shift_ = 0;
  std::size_t max_bytes_ = 0;
};

// A thread inside a lock-free wait or test of lane requests (MPI_Wait and
// friends) may still touch the lanes of a request that has just completed,
// whose communicator may have been freed meanwhile: a freed lane
// communicator is destroyed only while no thread is inside one.
class LaneCallerScope {
 public:
  LaneCallerScope();
  ~LaneCallerScope();
  LaneCallerScope(const LaneCallerScope &) = delete;
  LaneCallerScope &operator=(const LaneCallerScope &) = delete;
};
bool lane_callers_none();

// MPIX_LANES, MPIX_LANE_TAG_SHIFT and MPIX_LANE_EAGER_LIMIT, set at MPI_Init (src/config.cc).
void lanes_configure(int lanes, unsigned tag_shift, std::size_t eager_limit);
int lanes_configured();
unsigned lanes_tag_shift();
std::size_t lanes_eager_limit();

}  // namespace mpix::p2p

#endif
