// Single-producer single-consumer message rings in shared memory between
// the processes of one node (issue 27): a transport's fast lane for small
// messages and control frames, in the manner of MPICH's and Open MPI's
// shared-memory transports. A message is one slot (a 16-byte head, the
// transport's header, the payload): the sender copies it in and publishes
// it with one release store; the receiver polls the next slot's lap word,
// hands the message up in place, and frees the slot. No allocation, lock or
// system call per message; what does not fit (too big, ring full) takes
// the transport's ordinary path, and the transport's sequence numbers put
// the two paths back in order.
#ifndef MPIX_PROGRESS_SHM_RING_H
#define MPIX_PROGRESS_SHM_RING_H

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mpix::progress::shm {

// A message as the receiver sees it: valid until pop().
struct Message {
  std::uint32_t id;  // the transport's kind of message
  const void *header;
  std::size_t header_bytes;
  void *data;
  std::size_t bytes;
};

// One direction's ring over memory both processes map (bytes_for()):
// a line the receiver writes (slots consumed), a line of claim words, then
// the slots. The claim words are not the ring's: they are atomics both
// ends of the pair may change, for the engine's split transfers
// (src/p2p/split_copy.cc), which need a word each side can compare and
// swap where cross-memory copies cannot. A message
// takes as many consecutive slots as it needs, never wrapping: where it
// would, the sender first fills the rest of the ring with a skip record.
// Each side makes its own Ring over the same memory and keeps its own
// position; push() is the sender's, peek()/pop() the receiver's.
class Ring {
 public:
  static std::size_t bytes_for(std::size_t slots, std::size_t slot_bytes);
  // Zeroed memory is an empty ring. slot_bytes: a multiple of 64, at least
  // 64; slots: at least 4.
  Ring(void *memory, std::size_t slots, std::size_t slot_bytes);

  // The largest header + payload one message carries: a quarter of the
  // ring, so that a message never waits for more than its share.
  std::size_t capacity() const { return capacity_; }
  // Copies header and payload into the next slots and publishes them;
  // false (nothing published) when they exceed capacity() or the ring has
  // no room for them now.
  bool push(std::uint32_t id, const void *header, std::size_t header_bytes, const void *payload, std::size_t bytes);
  // The oldest message not popped yet, if any.
  bool peek(Message *m);
  // Frees the slots of the message peek() showed.
  void pop();
  // Whether a message waits unread (peek() would show one), changing nothing.
  bool waiting() const;

  static constexpr std::size_t kClaims = 8;
  std::atomic<std::uint64_t> *claims() const { return claims_->word; }

 private:
  static constexpr std::size_t kSlotHead = 16;
  static constexpr std::uint32_t kSkip = 0xffffffffu;  // id of a skip record
  struct alignas(64) Consumed {
    std::atomic<std::uint64_t> count;  // slots, not messages
  };
  struct alignas(64) Claims {
    std::atomic<std::uint64_t> word[kClaims];
  };
  static_assert(sizeof(Consumed) == 64 && sizeof(Claims) == 64, "ring header lines");
  static constexpr std::size_t kHeaderBytes = sizeof(Consumed) + sizeof(Claims);
  // The lap word of a message starting at slot number seq: never 0, which
  // marks a slot where no message starts (zeroed memory, or the inside of
  // a message the receiver freed), and different in consecutive laps.
  std::uint32_t lap_of(std::uint64_t seq) const {
    return static_cast<std::uint32_t>(lap_number(seq) % 0xfffffffeu) + 1;
  }
  // Slot numbers to positions and laps: by mask and shift where the sizes
  // are powers of two (as Node makes them), since a 64-bit division costs
  // tens of cycles and a message took about ten of them on its way.
  std::uint64_t slot_index(std::uint64_t seq) const { return slots_pow2_ ? seq & (slots_ - 1) : seq % slots_; }
  std::uint64_t lap_number(std::uint64_t seq) const { return slots_pow2_ ? seq >> slots_shift_ : seq / slots_; }
  char *slot(std::uint64_t seq) const { return slots_base_ + slot_index(seq) * slot_bytes_; }
  std::size_t slots_for(std::size_t bytes) const {
    const std::size_t b = kSlotHead + bytes + slot_bytes_ - 1;
    return slot_shift_ != 0 ? b >> slot_shift_ : b / slot_bytes_;
  }
  // Sender: whether n more slots are free.
  bool room(std::size_t n);
  void publish(std::uint64_t seq, std::uint32_t id, std::uint32_t header_bytes, std::uint32_t bytes);

  Consumed *consumed_;
  Claims *claims_;
  char *slots_base_;
  std::size_t slots_, slot_bytes_, capacity_;
  bool slots_pow2_;
  unsigned slots_shift_;  // log2(slots_) where slots_pow2_
  unsigned slot_shift_;   // log2(slot_bytes_) where a power of two, else 0
  std::uint64_t head_ = 0;           // sender: next slot number
  std::uint64_t consumed_seen_ = 0;  // sender: last count read
  std::uint64_t tail_ = 0;           // receiver: next slot number
  std::size_t peeked_ = 0;           // receiver: slots of the message peek() showed
};

// This process's rings: one from every other process of its node (in a
// segment it creates) and one to each (in theirs).
class Node {
 public:
  Node() = default;
  Node(const Node &) = delete;
  Node &operator=(const Node &) = delete;
  ~Node();
  // Collective over MPI_COMM_WORLD: rings of ring_bytes (fewer where the
  // node has so many processes that a process's rings from all the others
  // would exceed kInboundBudget) in slots of slot_bytes. False (rings unused
  // everywhere, the reason in why) where a process could not make or map
  // its segments.
  bool start(std::size_t ring_bytes, std::size_t slot_bytes, char *why, std::size_t why_len) {
    return start(MPI_COMM_WORLD, ring_bytes, slot_bytes, why, why_len, true);
  }
  // start() over the members of comm (ranks below are comm's): another
  // user's rings (a communicator's lanes, src/p2p/lanes.h). active: the
  // transport's rings, which active_node() names.
  bool start(MPI_Comm comm, std::size_t ring_bytes, std::size_t slot_bytes, char *why, std::size_t why_len,
             bool active);
  // start() where `wanted` (MPIX_SHM_RING), saying on rank 0 what came of it
  // when verbose (a transport's start-up).
  void start_if(bool wanted, std::size_t ring_bytes, std::size_t slot_bytes, int verbose);
  std::size_t ring_bytes() const { return ring_bytes_; }
  // The largest header + payload a ring carries (Ring::capacity()).
  std::size_t capacity() const { return capacity_; }
  static constexpr std::size_t kInboundBudget = std::size_t{32} << 20;
  bool running() const { return running_; }
  // Whether MPI_COMM_WORLD rank `world` is reached through a ring.
  bool reaches(int world) const {
    return running_ && world >= 0 && static_cast<std::size_t>(world) < out_of_.size() &&
           out_of_[static_cast<std::size_t>(world)] >= 0;
  }
  bool send(int world, std::uint32_t id, const void *header, std::size_t header_bytes, const void *payload,
            std::size_t bytes) {
    if (!reaches(world)) return false;
    return out_[static_cast<std::size_t>(out_of_[static_cast<std::size_t>(world)])].push(id, header, header_bytes,
                                                                                         payload, bytes);
  }
  // The claim words of the ring from `world` (this process receives) or to
  // it (this process sends): Ring::kClaims each; nullptr where no ring.
  std::atomic<std::uint64_t> *claims_from(int world) const {
    return reaches(world) ? in_[static_cast<std::size_t>(out_of_[static_cast<std::size_t>(world)])].claims() : nullptr;
  }
  std::atomic<std::uint64_t> *claims_to(int world) const {
    return reaches(world) ? out_[static_cast<std::size_t>(out_of_[static_cast<std::size_t>(world)])].claims() : nullptr;
  }
  // The rings from other processes, by index, and whose each is.
  std::size_t inbound() const { return in_.size(); }
  Ring &in_ring(std::size_t i) { return in_[i]; }
  int in_source(std::size_t i) const { return in_source_[i]; }
  // The ring from rank `from`, or nullptr.
  Ring *in_from(int from) {
    return reaches(from) ? &in_[static_cast<std::size_t>(out_of_[static_cast<std::size_t>(from)])] : nullptr;
  }
  // Whether any ring from another process holds a message not read yet.
  bool inbound_waiting() const {
    for (const Ring &r : in_)
      if (r.waiting()) return true;
    return false;
  }
  // Hands each waiting message to f(const Message &), at most `budget` from
  // each ring; returns how many.
  template <class F>
  int poll(F &&f, int budget = 32) {
    int n = 0;
    Message m{};
    for (Ring &r : in_) {
      for (int k = 0; k < budget && r.peek(&m); ++k) {
        f(m);
        r.pop();
        ++n;
      }
    }
    return n;
  }

 private:
  bool running_ = false;
  std::size_t ring_bytes_ = 0;  // of each ring's slots, as started
  std::size_t capacity_ = 0;    // Ring::capacity() of them all
  std::vector<Ring> in_;        // from each other process of the node
  std::vector<Ring> out_;       // to each
  std::vector<int> out_of_;     // rank -> index in in_ and out_, -1: not on the node
  std::vector<int> in_source_;  // index in in_ -> rank
  std::vector<std::pair<void *, std::size_t>> maps_;  // to unmap
};

// The rings of the transport in use (one per process), nullptr while none
// run: the engine reaches the claim words through it.
Node *active_node();

}  // namespace mpix::progress::shm

#endif
