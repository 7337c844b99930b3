// The wire below the point-to-point protocol (DESIGN.md, "Transports").
//
// The protocol (src/p2p/engine.cc) decides what a message is: an eager
// envelope with its payload, a rendezvous envelope whose payload the
// receiver pulls once it matched, a GPU envelope with a descriptor. A
// transport only moves those between the members of one communicator:
//
//   pmpi  shadow communicators of the MPI library underneath: landing
//         receives for envelopes, a tagged message per rendezvous payload.
//         Works on any MPI, pays MPI's per-message cost a second time.
//   ucx   UCP active messages whose handler hands the envelope straight to
//         the engine; rendezvous by UCX itself into the user's buffer.
//   ofi   libfabric FI_MSG frames into receive buffers kept posted, handed
//         to the engine as the completion queue is read; rendezvous by
//         fi_read of the sender's registered buffer into the user's.
//
// One Link per handled communicator, made by the transport selected at
// MPI_Init (MPIX_TRANSPORT). Every call happens under the engine lock;
// arrivals are handed up from poll() (the transport's or the link's), and
// completions through progress::Pending, so the engine's callbacks may
// start new operations.
#ifndef MPIX_PROGRESS_TRANSPORT_H
#define MPIX_PROGRESS_TRANSPORT_H

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "engine_mutex.h"
#include "inflight.h"
#include "transport_kind.h"
#include "wire.h"

namespace mpix::progress {

enum class SendMode : std::uint8_t { kStandard, kSync, kBuffered, kReady };

// What eager traffic costs the receiver per message beyond its payload
// (envelope and bookkeeping): the unit of back-pressure accounting.
constexpr std::size_t kArrivalOverhead = 64;

// An envelope as a transport hands it up.
struct Arrival {
  int source = 0;                  // rank in the communicator
  WireHeader h{};
  const char *payload = nullptr;   // bytes after the envelope (eager data, GPU descriptor); valid during arrived()
  std::size_t payload_bytes = 0;
  std::uint64_t ticket = 0;        // the transport's reference for pull/discard/matched
  std::size_t credit = 0;          // handed back through Link::consumed once the payload is released
};

// The engine's side of a link.
class ArrivalSink {
 public:
  // Takes the envelope (matches it or keeps it as unexpected, copying the
  // payload if it keeps it).
  virtual void arrived(const Arrival &a) = 0;
  // Whether a posted receive waits for a message that has not come: the
  // transport must then not hold messages back.
  virtual bool receive_waiting() = 0;

 protected:
  ~ArrivalSink() = default;
};

class Link {
 public:
  virtual ~Link() = default;

  // Payload lifetimes: the contract between a link and whoever sends.
  //
  // send_eager(..., done == nullptr): the link has read the payload, or
  // copied it, when the call returns; the caller may overwrite or free it
  // at once. done != nullptr: the link MAY keep the pointer and read the
  // payload at any time until done->on_complete runs (UCX and libfabric do
  // when the wire is busy: a "tied" send once kCopiesMax copies wait), so
  // the bytes must stay valid and unchanged until then. Hence a caller
  // passes done only with memory that lives as long as the operation: the
  // application's buffer of a nonblocking send (MPI forbids touching it
  // before completion), a blocking caller's buffer while it waits for
  // done, or a copy owned by the request (Request::eager_copy). Scratch
  // memory reused by the next send (the GPU path's bounce buffer, a packed
  // copy on the stack) goes with done == nullptr, or becomes the request's
  // own first: P2PComm::transmit does this for PayloadLife::kDuringCall.
  // send_rendezvous: (buf, count, dtype) is read until done->on_complete;
  // buffered sends are copied before the call returns (*pending = false).
  // Every caller is listed in docs/DESIGN.md ("Payload lifetimes"); the
  // checking link (MPIX_LINK_CHECK=defer, check_link.h) holds every
  // completion-bearing eager payload and reads it only at completion, so a
  // caller that breaks this delivers wrong bytes in tests, every time.
  //
  // Sends an envelope followed by n contiguous payload bytes.
  // *pending = true means done->on_complete follows (with the error, if
  // any, in MPI_ERROR); false means finished.
  // kFlagSyncAck in h (eager_sync() links only): done runs once matched.
  virtual int send_eager(int dest, const WireHeader &h, const void *payload, std::size_t n, Pending *done,
                         bool *pending) = 0;
  // Announces h and leaves (buf, count, dtype) in place until the receiver
  // pulls it. done->on_complete runs when the buffer may be reused (kSync:
  // and the receive started); *pending = false: it already may (buffered).
  virtual int send_rendezvous(int dest, const WireHeader &h, const void *buf, int count, MPI_Datatype dtype,
                              SendMode mode, Pending *done, bool *pending) = 0;
  // Receiver: the payload of a rendezvous arrival into (buf, count, dtype);
  // done->on_complete gets the received byte count and MPI_ERR_TRUNCATE
  // when it did not fit.
  virtual int pull(const Arrival &a, void *buf, int count, MPI_Datatype dtype, Pending *done) = 0;
  // A rendezvous arrival that will never be received (communicator gone).
  virtual void discard(const Arrival &a) = 0;
  // An arrival with kFlagSyncAck was matched.
  virtual void matched(const Arrival &a) = 0;
  // The engine released an arrival's payload (Arrival::credit).
  virtual void consumed(int source, std::size_t credit) = 0;
  // A receive or probe waits: take in messages held back (back-pressure).
  virtual void want_more() = 0;
  // Whether synchronous sends may go eagerly with kFlagSyncAck.
  virtual bool eager_sync() const = 0;
  // Envelopes of this link that arrived and were handed up.
  virtual int poll() = 0;
};


// Set at MPI_Init from mpix::Config (defaults: src/config.cc alone).
struct TransportConfig {
  TransportKind kind = TransportKind::kAuto;
  std::size_t eager_limit = 0;
  std::size_t unexpected_limit = 0;
  int landing_slots = 0;
  int verbose = 0;
  std::string ofi_provider = "auto";  // MPIX_OFI_PROVIDER
  bool check_links = false;           // MPIX_LINK_CHECK=defer: links wrapped in a CheckLink
  bool shm_ring = true;               // MPIX_SHM_RING
  std::size_t shm_ring_bytes = 262144;    // MPIX_SHM_RING_BYTES
  std::size_t shm_ring_slot_bytes = 256;  // MPIX_SHM_RING_SLOT_BYTES
};

// MPI_Init: brings up the selected transport. An explicitly requested one
// that cannot start is an error (message in `why`); auto tries ucx and
// falls back to pmpi (never to ofi: the libfabric transport is asked for).
int transport_start(const TransportConfig &config, char *why, std::size_t why_len);
// MPI_Finalize. Envelopes this process handed to the transport and got
// from it, and operations of its own that will finish without a new receive
// (a pull, a copy waiting for room): when the sums over all ranks of the
// first two agree and nobody has the third, nothing is on the way anywhere
// (the engine drains with these before it releases requests).
struct TransportCounts {
  std::uint64_t sent = 0, arrived = 0, local = 0;
};
TransportCounts transport_counts();
// Then: what is left waits for receives that will never be posted; its
// completions are dropped (the requests behind them go away).
void transport_abandon();
// MPI_Finalize, after every link is gone: closes connections and shuts
// the transport down (collective over MPI_COMM_WORLD).
void transport_stop();
// The transport in use ("pmpi", "ucx", "ofi") and, for mpix_info, the
// compiled ones; the provider under it where it has one (ofi: "shm",
// "tcp;ofi_rxm"), else "".
const char *transport_name();
const char *transport_provider();
const char *transports_built();

// Everything a link needs from its communicator. ctrl/data: the shadow
// communicators (the pmpi link's channels).
struct LinkParams {
  MPI_Comm user = MPI_COMM_NULL;
  MPI_Comm ctrl = MPI_COMM_NULL;
  MPI_Comm data = MPI_COMM_NULL;
  ArrivalSink *sink = nullptr;
};
// Collective over params.user (attach), called with the engine lock held;
// the lock is released during the collective exchange (a peer may need
// this process's progress meanwhile). A communicator whose members the
// selected transport cannot reach (processes of another MPI_COMM_WORLD)
// gets a pmpi link.
int link_create(const LinkParams &params, EngineLock &lock, std::unique_ptr<Link> *out);

// One progress step of the transport (all links): returns events handled.
int transport_poll();
// Whether transfers of the transport are in flight or it moved something
// lately (the liveness thread keeps polling while so: a peer may need this
// process to move). From the liveness thread only, without the engine lock.
bool transport_busy();

// Whether messages of other processes of this node wait unread in this
// process's shared-memory rings (their senders may be waiting for room).
// Caller holds the engine lock (the rings' read positions are the engine's).
bool transport_inbound_waiting();

struct TransportStats {
  std::uint64_t eager_sent = 0, rendezvous_sent = 0, arrivals = 0, sync_acks = 0;
  std::uint64_t copied_sends = 0;       // eager sends that waited in a copy (no room on the wire)
  std::uint64_t credit_stalls = 0;      // eager sends turned rendezvous for lack of receiver credit
  std::uint64_t out_of_order = 0;       // arrivals held until their predecessors came
  std::uint64_t shm_ring = 0;           // messages and control frames sent through a shared-memory ring
  std::uint64_t peer_exits = 0;         // sends failed: their receiver, of this node, exited before acknowledging
  std::uint64_t endpoints = 0;
};
// Counters of this process's traffic (still readable after transport_stop).
TransportStats transport_stats();

}  // namespace mpix::progress

#endif
