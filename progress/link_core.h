// What the message transports (UCX: ucx_worker.h, libfabric: ofi_fabric.h)
// share above their wires: the process-wide registries of a transport
// (links by id, operations awaiting a peer's acknowledgement, eager credit
// per peer, whether a peer may need our progress) and the per-communicator
// state of a link (link ids of the members, sequence numbers, arrivals
// held until their predecessors came). Each transport names its own
// envelope, operation and peer types.
#ifndef MPIX_PROGRESS_LINK_CORE_H
#define MPIX_PROGRESS_LINK_CORE_H

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "single_copy.h"
#include "transport.h"

namespace mpix::progress {

// A status as progress::Pending expects it.
MPI_Status make_status(int error, std::size_t bytes);

// Each member of comm's rank in MPI_COMM_WORLD (MPI_UNDEFINED: another
// job's process).
std::vector<int> world_ranks(MPI_Comm comm);

// The n contiguous bytes a rendezvous of (buf, count, dtype) offers at
// *src: the buffer itself, or a copy in *owned when `copy` (a buffered
// send) or when the datatype is not contiguous (packed through comm).
int rendezvous_source(const void *buf, int count, MPI_Datatype dtype, bool copy, MPI_Comm comm, const void **src,
                      std::size_t *n, std::unique_ptr<char[]> *owned);

// Polls (a transport's poll(): the work it did) until done(), at most
// `seconds`; false on timeout.
template <class Poll, class Done>
bool poll_until(Poll &&poll, Done &&done, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  unsigned idle = 0;
  while (!done()) {
    if (poll() == 0 && ++idle % 64 == 0) sched_yield();
    if (std::chrono::steady_clock::now() > end) return false;
  }
  return true;
}

// A barrier on MPI_COMM_WORLD that keeps polling: a peer may need our
// progress to reach it.
template <class Poll>
void polling_barrier(Poll &&poll) {
  MPI_Request req = MPI_REQUEST_NULL;
  if (PMPI_Ibarrier(MPI_COMM_WORLD, &req) != MPI_SUCCESS) return;
  int flag = 0;
  unsigned idle = 0;
  while (!flag) {
    if (poll() == 0 && ++idle % 64 == 0) sched_yield();
    PMPI_Test(&req, &flag, MPI_STATUS_IGNORE);
  }
}

// One peer's eager credit (flow control: ucx_worker.h).
struct Credit {
  std::int64_t credit = 0;  // eager bytes we may still send it
  std::size_t owed = 0;     // eager bytes consumed here, not given back yet
};

// A transport's process-wide registries. Peer derives from Credit.
template <class LinkT, class OpT, class Peer>
class TransportCore {
 public:
  int world_rank() const { return world_rank_; }
  std::size_t window() const { return window_; }
  Peer &peer(int world) { return peers_[static_cast<std::size_t>(world)]; }

  // Link ids: process-local, never reused.
  std::uint32_t register_link(LinkT *link) {
    const std::uint32_t id = next_link_++;
    links_.emplace(id, link);
    return id;
  }
  void unregister_link(std::uint32_t id) {
    links_.erase(id);
    if (id == last_link_id_) last_link_ = nullptr;
  }
  // The link of an arriving envelope, or nullptr (freed): traffic comes in
  // runs on one communicator, so the last one found is asked first.
  LinkT *find_link(std::uint32_t id) {
    if (last_link_ != nullptr && id == last_link_id_) return last_link_;
    auto it = links_.find(id);
    if (it == links_.end()) return nullptr;
    last_link_id_ = id;
    last_link_ = it->second;
    return last_link_;
  }

  // Operations waiting for the acknowledgement of MPI_COMM_WORLD rank
  // `world`, by cookie (never 0).
  std::uint64_t await_ack(OpT *op, int world) {
    const std::uint64_t cookie = next_cookie_++;
    acks_.emplace(cookie, Awaited{op, world});
    return cookie;
  }
  void forget_ack(std::uint64_t cookie) { acks_.erase(cookie); }

  // Credit for `world`, taken to go back piggy-backed on an envelope.
  std::uint32_t take_owed(int world) {
    Credit &p = peer(world);
    const std::size_t give = std::min<std::size_t>(p.owed, UINT32_MAX);
    p.owed -= give;
    return static_cast<std::uint32_t>(give);
  }

  TransportStats stats;
  std::uint64_t envelopes_sent = 0;  // every envelope given a sequence number

 protected:
  // The engine released `credit` bytes of world's payloads: true once half
  // a window is owed, which then goes back by a control message of its own
  // (no message going back may carry it).
  bool owe(int world, std::size_t credit) {
    Credit &p = peer(world);
    p.owed += credit;
    return p.owed >= window_ / 2;
  }
  // For busy(), from the liveness thread: operations in flight, or a poll
  // that did something within `linger` (a peer may need our progress to
  // finish a protocol after our own operations completed).
  bool busy_within(std::chrono::steady_clock::duration linger) {
    if (outstanding_.load(std::memory_order_relaxed) > 0) return true;
    const auto now = std::chrono::steady_clock::now();
    const std::uint64_t activity = activity_.load(std::memory_order_relaxed);
    if (activity != seen_activity_) {
      seen_activity_ = activity;
      activity_changed_ = now;
    }
    return now - activity_changed_ < linger;
  }

  // From poll(): a process of this node that exited will never acknowledge,
  // and nothing else would end the wait of a synchronous or single-copy
  // send to it (the transports are not told; MPI's own launcher may leave
  // the survivors running). Those sends fail (OpT::peer_exited()), each
  // once. /proc is read at most every kExitCheckPeriod, and only while
  // acknowledgements are awaited.
  void fail_acks_of_exited() {
    if (acks_.empty() || ++polls_since_check_ < kExitCheckPolls) return;
    polls_since_check_ = 0;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_exit_check_ < kExitCheckPeriod) return;
    last_exit_check_ = now;
    std::map<int, bool> exited;  // the few peers awaited, each looked at once
    std::vector<std::pair<std::uint64_t, Awaited>> failed;
    for (const auto &[cookie, a] : acks_) {
      auto it = exited.find(a.world);
      if (it == exited.end()) it = exited.emplace(a.world, process_exited(a.world)).first;
      if (it->second) failed.emplace_back(cookie, a);
    }
    for (const auto &[world, gone] : exited) {
      if (!gone) continue;
      std::size_t n = 0;
      for (const auto &f : failed) n += f.second.world == world ? 1 : 0;
      std::fprintf(stderr,
                   "[mpix] rank %d: MPI_COMM_WORLD rank %d, a process of this node, exited before acknowledging "
                   "%zu message(s): their sends fail with MPI_ERR_OTHER\n",
                   world_rank_, world, n);
    }
    for (const auto &[cookie, a] : failed) {
      acks_.erase(cookie);
      ++stats.peer_exits;
      a.op->peer_exited();
    }
  }

  int world_rank_ = 0;
  std::size_t window_ = 0;
  std::vector<Peer> peers_;
  std::unordered_map<std::uint32_t, LinkT *> links_;
  std::uint32_t last_link_id_ = 0;
  LinkT *last_link_ = nullptr;
  struct Awaited {
    OpT *op;
    int world;
  };
  std::unordered_map<std::uint64_t, Awaited> acks_;
  std::atomic<long> outstanding_{0};
  // Polls that did something (a count: the clock is slow to read on every
  // poll); busy_within() notes when it last changed.
  std::atomic<std::uint64_t> activity_{0};

 private:
  std::uint32_t next_link_ = 1;
  std::uint64_t next_cookie_ = 1;
  std::uint64_t seen_activity_ = 0;
  std::chrono::steady_clock::time_point activity_changed_{};
  static constexpr unsigned kExitCheckPolls = 256;  // polls between clock reads
  static constexpr std::chrono::milliseconds kExitCheckPeriod{20};
  unsigned polls_since_check_ = 0;
  std::chrono::steady_clock::time_point last_exit_check_{};
};

// Arrivals of one communicator in each sender's order. Transports do not
// promise it on every path (UCX's lanes, a send that waited for room
// against one that did not); MPI's matching needs it.
template <class Early>
class InOrder {
 public:
  void reset(std::size_t members) { next_.assign(members, 0); }
  bool is_next(int source, std::uint32_t seq) const { return seq == next_[static_cast<std::size_t>(source)]; }
  // An arrival ahead of its predecessors, kept until they came.
  void hold(int source, std::uint32_t seq, Early early) {
    early_.emplace(std::make_pair(source, seq), std::move(early));
  }
  // source's next arrival was handed up: so is each held one now due.
  template <class HandUp>
  void advance(int source, HandUp &&hand_up) {
    const auto src = static_cast<std::size_t>(source);
    ++next_[src];
    while (!early_.empty()) {
      auto it = early_.find(std::make_pair(source, next_[src]));
      if (it == early_.end()) break;
      Early next = std::move(it->second);
      early_.erase(it);
      hand_up(next);
      ++next_[src];
    }
  }
  template <class F>
  void for_each_held(F &&f) {
    for (auto &entry : early_) f(entry.second);
  }

 private:
  std::vector<std::uint32_t> next_;
  std::map<std::pair<int, std::uint32_t>, Early> early_;
};

// A link's state common to both transports: who the members are, the id
// each gave this communicator, and the sequence numbers sent.
template <class Host>
class LinkCore : public Link {
 public:
  // world: each member's rank in MPI_COMM_WORLD; rank: this process's.
  LinkCore(Host &host, const LinkParams &params, std::vector<int> world, int rank)
      : host_(host), params_(params), rank_(rank), world_(std::move(world)), seq_out_(world_.size(), 0) {}

  std::uint32_t id() const { return id_; }
  // The peers' ids of this communicator (from the exchange).
  void set_remote_ids(std::vector<std::uint32_t> ids) { remote_ = std::move(ids); }
  int size() const { return static_cast<int>(world_.size()); }

  // Buffered: the caller's buffer is free at once. Non-contiguous: the
  // transport moves bytes, MPI packs them.
  int send_rendezvous(int dest, const WireHeader &h, const void *buf, int count, MPI_Datatype dtype, SendMode mode,
                      Pending *done, bool *pending) final {
    const void *src = nullptr;
    std::size_t n = 0;
    std::unique_ptr<char[]> owned;
    const bool buffered = mode == SendMode::kBuffered;
    const int rc = rendezvous_source(buf, count, dtype, buffered, params_.ctrl, &src, &n, &owned);
    if (rc != MPI_SUCCESS) return rc;
    return rendezvous(dest, h, src, n, std::move(owned), buffered ? nullptr : done, pending);
  }
  void consumed(int source, std::size_t credit) override {
    if (credit > 0) host_.consumed(world_of(source), credit);
  }
  void want_more() override {}
  bool eager_sync() const override { return true; }
  int poll() override { return 0; }  // the host's poll serves every link

 protected:
  int world_of(int rank) const { return world_[static_cast<std::size_t>(rank)]; }
  // A rendezvous of n contiguous bytes at src (owned: a copy the op keeps).
  virtual int rendezvous(int dest, const WireHeader &h, const void *src, std::size_t n,
                         std::unique_ptr<char[]> owned, Pending *done, bool *pending) = 0;
  // The routing fields of an envelope to dest: its link id there, our
  // ranks, the next sequence number, credit owed to it.
  template <class Envelope>
  void address(Envelope &e, int dest, const WireHeader &h) {
    e.link = remote_[static_cast<std::size_t>(dest)];
    e.source = rank_;
    e.world = host_.world_rank();
    e.seq = seq_out_[static_cast<std::size_t>(dest)]++;
    ++host_.envelopes_sent;
    e.credit = host_.take_owed(world_of(dest));
    e.h = h;
  }

  Host &host_;
  LinkParams params_;
  int rank_;
  std::uint32_t id_ = 0;
  std::vector<int> world_;             // comm rank -> MPI_COMM_WORLD rank
  std::vector<std::uint32_t> remote_;  // comm rank -> its id of this link
  std::vector<std::uint32_t> seq_out_;
};

}  // namespace mpix::progress

#endif  // MPIX_PROGRESS_LINK_CORE_H
