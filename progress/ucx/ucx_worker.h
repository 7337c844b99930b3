// The UCX transport's process state: one UCP context and worker, the
// peers (worker addresses, endpoints made on first use, eager credit), the
// operations in flight, and the two active messages:
//
//   message  header = Envelope (the protocol's WireHeader plus routing:
//            the receiver's link id, the sender's rank, a sequence number
//            and piggy-backed credit); data = the eager payload, or a UCX
//            rendezvous whose data the receiver pulls with
//            ucp_am_recv_data_nbx straight into the user's buffer after
//            the match.
//   control  header = Control: eager credit given back, or the
//            acknowledgement of an eager synchronous send's match.
//
// Flow control: a sender may have at most `window` bytes of eager payload
// (plus kArrivalOverhead each) unconsumed at a receiver, not counting
// payloads of up to kTinyPayload bytes, which cost the receiver no more
// than the envelope every message brings; the receiver gives
// credit back as its engine releases payloads (piggy-backed on messages
// going the other way, or a control message once half a window is owed).
// Without credit an eager message goes as a rendezvous from a copy: the
// sender's buffer is free at once as for any eager send, the receiver holds
// only the envelope until a receive pulls the data. So a flood of
// unexpected messages costs a receiver at most a window per sender plus
// envelopes, and nothing is dropped.
//
// UCX callbacks run inside ucp_worker_progress (from poll(), under the
// engine lock). Arrivals are handed to the engine from there; anything the
// engine then asks of UCX (a pull, a control message) is deferred until
// ucp_worker_progress returns, and completions reach progress::Pending
// only from poll(), never from inside the call that started the operation.
// UCX's loopback transport runs a handler inside the send itself: such an
// arrival waits, copied, for the next poll(), so the engine is never
// re-entered from inside one of its own calls.
#ifndef MPIX_PROGRESS_UCX_WORKER_H
#define MPIX_PROGRESS_UCX_WORKER_H

#include <ucp/api/ucp.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "progress/link_core.h"
#include "progress/shm_ring.h"
#include "progress/transport.h"
#include "ucx_wire.h"

namespace mpix::progress::ucx {

constexpr unsigned kAmMessage = 0x6d31;
constexpr std::size_t kTinyPayload = 64;
constexpr unsigned kAmControl = 0x6d32;

class UcxLink;

// An operation UCX runs for us. complete() runs once, from poll().
class Op {
 public:
  virtual ~Op() = default;
  // status: UCX's; length: bytes received (pulls).
  virtual void complete(ucs_status_t status, std::size_t length) = 0;
  // MPI_Finalize: the Pending behind it is about to go away.
  virtual void abandon() = 0;
  // Whether it can finish without a receive being posted at the peer
  // (MPI_Finalize waits for those).
  virtual bool local() const { return true; }
  // An eager synchronous send's receiver matched it.
  virtual void acknowledged() {}
  // Awaiting an acknowledgement from a process of this node that exited
  // (TransportCore::fail_acks_of_exited): no ack will come.
  virtual void peer_exited() {}
  void *request = nullptr;  // UCX's handle while in flight
};

struct Peer : Credit {
  std::string address;  // empty: not exchanged yet
  ucp_ep_h ep = nullptr;
};

class Worker : public TransportCore<UcxLink, Op, Peer> {
 public:
  // Local bring-up; false with the reason in `why`.
  bool start(const TransportConfig &config, char *why, std::size_t why_len);
  // Collective, after start() succeeded everywhere: the shared-memory rings
  // to the processes of this node (MPIX_SHM_RING); without them (off, or
  // they could not be set up) everything goes through UCX.
  void start_rings();
  bool ring_reaches(int world) const { return rings_.reaches(world); }
  ~Worker();

  ucp_worker_h handle() const { return worker_; }
  const TransportConfig &config() const { return config_; }
  const std::string &address() const { return address_; }
  bool knows(int world) const { return !peers_[static_cast<std::size_t>(world)].address.empty(); }
  // First contact: the peer's address and the window it grants.
  void learn(int world, std::string address, std::size_t window);
  // The endpoint to a peer, made on first use; nullptr if that failed.
  ucp_ep_h endpoint(int world);

  // UCX calls not allowed inside callbacks run later (in order).
  bool in_callback() const { return in_callback_; }
  void defer(std::function<void()> f) { deferred_.push_back(std::move(f)); }
  // An operation that finished inside the call that started it: reported
  // from the next poll().
  void complete_later(Op *op, ucs_status_t status, std::size_t length);
  // Sends header (+ payload) as one active message for op, which owns both
  // until it completes; op == nullptr with an immediate-only attempt.
  // Returns UCS_OK (done now: op was not kept), UCS_INPROGRESS (op in
  // flight) or an error (op not kept).
  ucs_status_t send_am(int world, unsigned id, const void *header, std::size_t header_bytes, const void *payload,
                       std::size_t bytes, std::uint32_t flags, Op *op);
  // An op in flight is tracked until complete().
  void track(Op *op) {
    live_.insert(op);
    outstanding_.fetch_add(1, std::memory_order_relaxed);
  }
  void untrack(Op *op) {
    if (live_.erase(op) != 0) outstanding_.fetch_sub(1, std::memory_order_relaxed);
  }

  // Credit given back to `world` (piggy-backed, see take_owed(), or by
  // control message).
  void consumed(int world, std::size_t credit);
  void send_control(int world, ControlKind kind, std::uint32_t credit, std::uint64_t cookie);

  int poll();
  // From the liveness thread only, without the engine lock: operations in
  // flight, completions not reported yet, or a poll that did something
  // lately. UCX finishes protocols after our operations completed (a
  // rendezvous receiver's acknowledgement may wait for room on the wire),
  // and its peer may be waiting for that while this process blocks in a
  // call mpix never sees.
  bool busy();
  // MPI_Finalize (transport_counts, transport_abandon).
  TransportCounts counts() const;
  void abandon();
  // After the links are gone: close endpoints (collective).
  void stop();

 private:
  static ucs_status_t on_message(void *arg, const void *header, std::size_t header_length, void *data,
                                 std::size_t length, const ucp_am_recv_param_t *param);
  static ucs_status_t on_control(void *arg, const void *header, std::size_t header_length, void *data,
                                 std::size_t length, const ucp_am_recv_param_t *param);
  // Progress while waiting for `done`, at most `seconds`; false on timeout.
  bool progress_until(const std::function<bool()> &done, double seconds);
  // Non-blocking barrier on MPI_COMM_WORLD, progressing UCX meanwhile.
  void fence();

  TransportConfig config_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::string address_;
  bool in_callback_ = false;
  std::vector<std::function<void()>> deferred_;
  // Arrivals of messages to ourselves, handed up by the next poll().
  struct Loopback {
    unsigned id;
    std::unique_ptr<char[]> header;
    std::size_t header_length;
    std::unique_ptr<char[]> data;
    std::size_t length;
    void *desc;  // rendezvous data (kept by UCX until pulled)
  };
  std::vector<Loopback> loopback_;
  // Takes an arrival outside poll() for later; returns what UCX expects.
  ucs_status_t keep_loopback(unsigned id, const void *header, std::size_t header_length, void *data,
                             std::size_t length, bool rndv);
  struct Done {
    Op *op;
    ucs_status_t status;
    std::size_t length;
  };
  std::vector<Done> completed_;
  std::unordered_set<Op *> live_;  // outstanding_: live_ + completed_
  // The fast lane within a node: eager messages that fit a ring and control
  // frames (send_am), drained by poll().
  shm::Node rings_;
  // Every other process of MPI_COMM_WORLD is reached through a ring: UCX
  // then carries only rendezvous data and what is too large for a ring,
  // which nothing here waits for unless an operation of ours is
  // outstanding, so poll() runs UCX's progress only on every
  // kRingPollsPerUcx-th call while none is.
  bool all_ringed_ = false;
  unsigned ucx_skipped_ = 0;
  static constexpr unsigned kRingPollsPerUcx = 4;
  bool ucx_poll_due();
  // Per MPI_COMM_WORLD rank: what waits for room in its ring, in order
  // (the op owns header and payload until it completes), pushed by poll().
  struct Backlogged {
    Op *op;
    unsigned id;
    const void *header;
    std::size_t header_bytes;
    const void *payload;
    std::size_t bytes;
  };
  std::vector<std::deque<Backlogged>> backlog_;
  std::size_t backlogged_ = 0;
  // Pushes what waits into the rings that have room again.
  int drain_backlog();
};

// The process's worker (nullptr unless the UCX transport is in use).
Worker *worker();
// MPI error code for a UCX status (printing what failed).
int mpi_error(ucs_status_t status, const char *what);
}  // namespace mpix::progress::ucx

#endif
