#include "shm_ring.h"

#include <fcntl.h>
#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

#include "single_copy.h"

namespace mpix::progress::shm {
namespace {

static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "lap words shared between processes");
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t), "lap word layout");

// The slot's lap word: written by the sender (release), read by the
// receiver (acquire); the memory is shared, so no object of ours lives
// there and the word is reached through the atomic's layout.
std::atomic<std::uint32_t> *lap_word(char *slot) { return reinterpret_cast<std::atomic<std::uint32_t> *>(slot); }

static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "claim words shared between processes");

std::atomic<Node *> g_active{nullptr};

// floor(log2(n)), n > 0.
unsigned log2_of(std::size_t n) {
  unsigned k = 0;
  while ((std::size_t{1} << (k + 1)) <= n) ++k;
  return k;
}

}  // namespace

std::size_t Ring::bytes_for(std::size_t slots, std::size_t slot_bytes) { return kHeaderBytes + slots * slot_bytes; }

Ring::Ring(void *memory, std::size_t slots, std::size_t slot_bytes)
    : consumed_(static_cast<Consumed *>(memory)),
      claims_(reinterpret_cast<Claims *>(static_cast<char *>(memory) + sizeof(Consumed))),
      slots_base_(static_cast<char *>(memory) + kHeaderBytes),
      slots_(slots),
      slot_bytes_(slot_bytes),
      capacity_(slots * slot_bytes / 4 - kSlotHead),
      slots_pow2_((slots & (slots - 1)) == 0),
      slots_shift_(log2_of(slots)),
      slot_shift_((slot_bytes & (slot_bytes - 1)) == 0 ? log2_of(slot_bytes) : 0) {}

bool Ring::room(std::size_t n) {
  if (head_ + n - consumed_seen_ <= slots_) return true;
  consumed_seen_ = consumed_->count.load(std::memory_order_acquire);
  return head_ + n - consumed_seen_ <= slots_;
}

void Ring::publish(std::uint64_t seq, std::uint32_t id, std::uint32_t header_bytes, std::uint32_t bytes) {
  char *s = slot(seq);
  const std::uint32_t head[3] = {id, header_bytes, bytes};
  std::memcpy(s + 4, head, sizeof head);
  lap_word(s)->store(lap_of(seq), std::memory_order_release);
}

bool Ring::push(std::uint32_t id, const void *header, std::size_t header_bytes, const void *payload,
                std::size_t bytes) {
  const std::size_t total = header_bytes + bytes;
  if (total > capacity()) return false;
  const std::size_t n = slots_for(total);
  const std::size_t to_end = slots_ - static_cast<std::size_t>(slot_index(head_));
  const std::size_t skip = n > to_end ? to_end : 0;
  if (!room(skip + n)) return false;
  if (skip > 0) {
    publish(head_, kSkip, 0, 0);
    head_ += skip;
  }
  char *s = slot(head_);
  std::memcpy(s + kSlotHead, header, header_bytes);
  if (bytes > 0) std::memcpy(s + kSlotHead + header_bytes, payload, bytes);
  publish(head_, id, static_cast<std::uint32_t>(header_bytes), static_cast<std::uint32_t>(bytes));
  head_ += n;
  return true;
}

bool Ring::peek(Message *m) {
  for (;;) {
    char *s = slot(tail_);
    if (lap_word(s)->load(std::memory_order_acquire) != lap_of(tail_)) return false;
    std::uint32_t head[3];
    std::memcpy(head, s + 4, sizeof head);
    if (head[0] == kSkip) {  // the rest of the ring: freed at once
      peeked_ = slots_ - static_cast<std::size_t>(slot_index(tail_));
      pop();
      continue;
    }
    // A head whose sizes overrun the ring's share (a peer writing garbage)
    // is handed up empty, with id 0, for the transport to report and drop.
    const std::size_t total = static_cast<std::size_t>(head[1]) + head[2];
    const bool fits = total <= capacity();
    m->id = fits ? head[0] : 0;
    m->header = s + kSlotHead;
    m->header_bytes = fits ? head[1] : 0;
    m->data = s + kSlotHead + m->header_bytes;
    m->bytes = fits ? head[2] : 0;
    peeked_ = fits ? slots_for(total) : 1;
    return true;
  }
}

bool Ring::waiting() const {
  return lap_word(slot(tail_))->load(std::memory_order_acquire) == lap_of(tail_);
}

void Ring::pop() {
  // Slots inside the message may start one of the sender's next lap: their
  // lap words (payload bytes now, which could read as any lap) are zeroed
  // before the sender may reuse them.
  for (std::size_t i = 1; i < peeked_; ++i) lap_word(slot(tail_ + i))->store(0, std::memory_order_relaxed);
  tail_ += peeked_;
  peeked_ = 0;
  consumed_->count.store(tail_, std::memory_order_release);
}

Node *active_node() { return g_active.load(std::memory_order_acquire); }

Node::~Node() {
  Node *me = this;
  g_active.compare_exchange_strong(me, nullptr, std::memory_order_acq_rel);
  for (auto &[p, n] : maps_) munmap(p, n);
}

bool Node::start(MPI_Comm comm, std::size_t wanted_bytes, std::size_t slot_bytes, char *why, std::size_t why_len,
                 bool active) {
  int size = 1, rank = 0;
  PMPI_Comm_size(comm, &size);
  PMPI_Comm_rank(comm, &rank);
  struct Card {
    std::uint64_t node;
    std::uint64_t nonce;  // with the pid, a segment name no other job uses
    std::int32_t pid;
    std::int32_t pad;
  };
  std::random_device entropy;
  const Card me{node_identity(),
                (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy() ^
                    static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()),
                static_cast<std::int32_t>(getpid()), 0};
  std::vector<Card> all(static_cast<std::size_t>(size));
  PMPI_Allgather(&me, sizeof me, MPI_BYTE, all.data(), sizeof me, MPI_BYTE, comm);
  std::vector<int> local;  // ranks of this node, in order
  int mine = -1;
  for (int w = 0; w < size; ++w) {
    if (all[static_cast<std::size_t>(w)].node != me.node) continue;
    if (w == rank) mine = static_cast<int>(local.size());
    local.push_back(w);
  }
  auto name_of = [&](int w) {
    char name[64];
    std::snprintf(name, sizeof name, "/mpix-%d-%016llx", static_cast<int>(all[static_cast<std::size_t>(w)].pid),
                  static_cast<unsigned long long>(all[static_cast<std::size_t>(w)].nonce));
    return std::string(name);
  };
  std::size_t per_ring = wanted_bytes;
  if (local.size() > 1) per_ring = std::min(per_ring, std::max(kInboundBudget / (local.size() - 1), 4 * slot_bytes));
  // A power of two: slot positions by mask (Ring::slot_index).
  const std::size_t slots = std::size_t{1} << log2_of(std::max<std::size_t>(per_ring / slot_bytes, 4));
  ring_bytes_ = slots * slot_bytes;
  const std::size_t ring_bytes = Ring::bytes_for(slots, slot_bytes);
  const std::size_t segment = ring_bytes * local.size();
  auto map = [&](int fd) -> char * {
    void *p = mmap(nullptr, segment, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return nullptr;
    maps_.emplace_back(p, segment);
    return static_cast<char *>(p);
  };

  // Each process makes the segment its peers write into: one ring per
  // process of the node, by its index there. posix_fallocate reserves the
  // pages now: a /dev/shm too small for them fails here, not as SIGBUS in
  // the middle of a message.
  char *own = nullptr;
  int ok = 1;
  const std::string own_name = name_of(rank);
  if (local.size() > 1) {
    const int fd = shm_open(own_name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0) {
      err = posix_fallocate(fd, 0, static_cast<off_t>(segment));
      if (err == 0 && (own = map(fd)) == nullptr) err = errno;
      close(fd);
    }
    if (err != 0) {
      std::snprintf(why, why_len, "shared memory segment %s of %zu bytes: %s", own_name.c_str(), segment,
                    std::strerror(err));
      ok = 0;
    }
  }
  int all_ok = 0;
  PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
  std::vector<char *> theirs(local.size(), nullptr);
  if (all_ok) {
    for (std::size_t j = 0; j < local.size() && ok; ++j) {
      if (static_cast<int>(j) == mine) continue;
      const std::string name = name_of(local[j]);
      const int fd = shm_open(name.c_str(), O_RDWR, 0600);
      if (fd >= 0) {
        theirs[j] = map(fd);
        close(fd);
      }
      if (theirs[j] == nullptr) {
        std::snprintf(why, why_len, "mapping %s: %s", name.c_str(), std::strerror(errno));
        ok = 0;
      }
    }
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
  }
  // Every peer has mapped it (or given up): the name may go, so a job that
  // dies leaves nothing in /dev/shm.
  if (own != nullptr) shm_unlink(own_name.c_str());
  if (!all_ok) {
    if (ok && why_len > 0) std::snprintf(why, why_len, "another process of the job could not set its rings up");
    for (auto &[p, n] : maps_) munmap(p, n);
    maps_.clear();
    return false;
  }
  out_of_.assign(static_cast<std::size_t>(size), -1);
  for (std::size_t j = 0; j < local.size(); ++j) {
    if (static_cast<int>(j) == mine) continue;
    in_.emplace_back(own + j * ring_bytes, slots, slot_bytes);
    in_source_.push_back(local[j]);
    out_of_[static_cast<std::size_t>(local[j])] = static_cast<int>(out_.size());
    out_.emplace_back(theirs[j] + static_cast<std::size_t>(mine) * ring_bytes, slots, slot_bytes);
  }
  running_ = !in_.empty();
  capacity_ = running_ ? out_.front().capacity() : 0;
  if (running_ && active) g_active.store(this, std::memory_order_release);
  return true;
}

void Node::start_if(bool wanted, std::size_t wanted_bytes, std::size_t slot_bytes, int verbose) {
  if (!wanted) return;
  char why[256] = "";
  const bool ok = start(wanted_bytes, slot_bytes, why, sizeof why);
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (verbose <= 0 || rank != 0) return;
  if (ok) std::fprintf(stderr, "[mpix] shared-memory rings within a node: %zu bytes each, slots of %zu bytes\n",
                       ring_bytes_, slot_bytes);
  else std::fprintf(stderr, "[mpix] shared-memory rings within a node: off (%s)\n", why);
}

}  // namespace mpix::progress::shm
