// The libfabric transport's process state: one fabric, domain, completion
// queue, address vector and reliable-datagram endpoint (FI_EP_RDM), the
// peers (addresses inserted at MPI_Init, eager credit), the receive
// buffers kept posted, and the operations in flight. Frames (ofi_wire.h):
//
//   message     FI_MSG send of Envelope + eager payload into one of the
//               receive buffers; fi_inject when it fits the provider's
//               inject size (no completion, nothing kept), else a send
//               with a completion, from the caller's buffer when the
//               caller waits for it, else from a copy.
//   rendezvous  the Envelope alone, naming the sender's buffer registered
//               for FI_REMOTE_READ; after the match the receiver fi_reads
//               it straight into the user's buffer (chunks of the
//               provider's max_msg_size) and answers rendezvous-done,
//               which completes the send and closes the registration.
//   control     eager credit given back, an eager synchronous send's match
//               acknowledged, rendezvous done.
//
// Flow control is the UCX transport's (ucx_worker.h): a sender may have
// at most `window` bytes of eager payload (plus kArrivalOverhead each)
// unconsumed at a receiver, payloads of up to kTinyPayload bytes free;
// credit comes back piggy-backed on envelopes or by a control frame once
// half a window is owed; without credit an eager message goes as a
// rendezvous from a copy. A send the provider refuses for lack of room
// (-FI_EAGAIN) waits in a FIFO retried by poll(), behind which later sends
// queue up, so nothing is dropped and each peer's frames leave in order.
//
// Every call into libfabric happens under the engine lock (the domain is
// opened FI_THREAD_DOMAIN). Arrivals and completions are read from the
// completion queue by poll() only and handled after fi_cq_read returned:
// the engine's callbacks may start new operations at once, and nothing
// completes inside the call that started it (an operation that finished
// there waits for the next poll()).
#ifndef MPIX_PROGRESS_OFI_FABRIC_H
#define MPIX_PROGRESS_OFI_FABRIC_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "progress/link_core.h"
#include "progress/shm_ring.h"
#include "ofi_wire.h"
#include "progress/transport.h"

namespace mpix::progress::ofi {

constexpr std::size_t kTinyPayload = 64;

// libfabric objects close with their owner.
struct FidClose {
  template <class T>
  void operator()(T *p) const {
    if (p != nullptr) fi_close(&p->fid);
  }
};
template <class T>
using Fid = std::unique_ptr<T, FidClose>;
struct InfoFree {
  void operator()(fi_info *p) const { fi_freeinfo(p); }
};
using Info = std::unique_ptr<fi_info, InfoFree>;

class Op;

// What libfabric carries for one operation: fi_context2 first, for
// providers that ask for FI_CONTEXT or FI_CONTEXT2 room of their own.
struct Context {
  fi_context2 fi{};
  Op *op = nullptr;
};

// An operation of ours that libfabric runs, or that waits for a peer's
// control frame. Self-owned: it deletes itself once finished; the Fabric
// knows every one alive (MPI_Finalize's counts, abandon, stop).
class Op {
 public:
  Op();
  virtual ~Op();
  Op(const Op &) = delete;
  Op &operator=(const Op &) = delete;
  // One of its libfabric operations finished: err 0 or a libfabric error
  // number (positive, as in completion entries), length: bytes received.
  virtual void complete(int err, std::size_t length) = 0;
  // MPI_Finalize: the Pending behind it is about to go away.
  virtual void abandon() = 0;
  // Whether it can finish without a receive being posted at the peer
  // (MPI_Finalize waits for those).
  virtual bool local() const { return true; }
  // The peer's sync ack or rendezvous-done named its cookie.
  virtual void acknowledged() {}
  // Awaiting an acknowledgement from a process of this node that exited
  // (TransportCore::fail_acks_of_exited): no ack will come.
  virtual void peer_exited() {}
  int inflight = 0;  // its libfabric operations not completed yet
};

// Memory registered with the domain, closed with its owner.
struct Registration {
  Fid<fid_mr> mr;
  void *desc() const { return mr ? fi_mr_desc(mr.get()) : nullptr; }
};

struct Peer : Credit {
  fi_addr_t addr = FI_ADDR_UNSPEC;
  std::size_t max_frame = 0;  // the largest frame its receive buffers take
};

class OfiLink;

class Fabric : public TransportCore<OfiLink, Op, Peer> {
 public:
  Fabric() = default;
  ~Fabric();
  Fabric(const Fabric &) = delete;
  Fabric &operator=(const Fabric &) = delete;

  // MPI_Init, collective over MPI_COMM_WORLD (every rank makes the same
  // calls whatever fails where): picks the provider (requested:
  // MPIX_OFI_PROVIDER; rank 0 chooses, the others open the same one),
  // opens it, exchanges addresses. false with the reason in `why`; then
  // false on every rank.
  bool start(const TransportConfig &config, const std::string &requested, char *why, std::size_t why_len);
  // Collective, after start() succeeded everywhere: the shared-memory rings
  // to the processes of this node (MPIX_SHM_RING, as under UCX).
  void start_rings();

  const TransportConfig &config() const { return config_; }
  const char *provider() const { return provider_.c_str(); }
  std::size_t inject_size() const { return inject_size_; }
  std::size_t iov_limit() const { return iov_limit_; }

  // Ops alive (Op's constructor and destructor).
  void adopt(Op *op) { ops_.insert(op); }
  void forget(Op *op) { ops_.erase(op); }

  // Sends head and n payload bytes as one frame at once, without a
  // completion, if they fit the inject size and no refused send waits:
  // 0, -FI_EAGAIN (not sent: too large, no room, or a queue) or another
  // negative error.
  ssize_t inject(int world, const void *head, std::size_t head_bytes, const void *payload, std::size_t n);
  // Sends the iov (count entries, registered as `desc` says where the
  // provider needs it) for op, with a completion; behind the queue of
  // refused sends, or queued itself when refused. The iov's memory must
  // live until op->complete(); count is 1 or 2. MPI error code (op not posted: the caller
  // still owns it).
  int send(int world, const iovec *iov, void **desc, std::size_t count, Op *op, Context *ctx);
  // fi_read of n bytes from (addr, key) at world into local (desc) for op.
  int read(int world, void *local, std::size_t n, void *desc, std::uint64_t addr, std::uint64_t key, Op *op,
           Context *ctx);
  // A control frame (credit, sync ack, rendezvous done).
  void send_control(int world, FrameKind kind, std::uint32_t credit, std::uint64_t cookie);
  // An operation that finished inside the call that started it: reported
  // from the next poll().
  void complete_later(Op *op, int err, std::size_t length);
  // Rendezvous sources: registered for FI_REMOTE_READ, with the address
  // and key a peer reads them with. MPI error code.
  int expose(const void *buf, std::size_t n, Registration *out, std::uint64_t *addr, std::uint64_t *key);
  // Buffers the provider reads or writes locally: registered only where it
  // asks for it (FI_MR_LOCAL).
  int local(const void *buf, std::size_t n, std::uint64_t access, Registration *out);
  bool needs_local() const { return mr_local_; }
  // The largest single transfer (reads are split into chunks of it).
  std::size_t max_msg() const { return max_msg_; }

  // Transfers a peer needs this process for (a rendezvous source not read
  // yet): they keep the liveness thread polling.
  void hold() { outstanding_.fetch_add(1, std::memory_order_relaxed); }
  void release() { outstanding_.fetch_sub(1, std::memory_order_relaxed); }

  // Credit given back to `world` (piggy-backed, see take_owed(), or by
  // control frame).
  void consumed(int world, std::size_t credit);

  int poll();
  // From the liveness thread only, without the engine lock: operations in
  // flight, transfers a peer still needs, queued sends, or a poll that did
  // something lately (the providers here progress only when polled:
  // FI_PROGRESS_MANUAL, a peer's read of our memory included).
  bool busy();
  TransportCounts counts() const;
  void abandon();
  // After the links are gone: collective; closes everything.
  void stop();

 private:
  // A receive buffer: posted with its own Context (op == nullptr).
  struct RecvSlot : Context {
    char *mem = nullptr;
  };
  // Opens fabric, domain, queues and endpoint on info; posts receives.
  bool open(fi_info *info, char *why, std::size_t why_len);
  // false: the provider has no room now (kept for the next poll).
  bool post_receive(RecvSlot *slot);
  void arrived(const char *data, std::size_t length);
  // fi_cq_read's entries, then queued sends and later completions.
  int drain_queue();
  void handle(void *context, int err, std::size_t length);
  // Sends refused for lack of room, in order: each returns false while
  // the provider still refuses it.
  void queue(std::function<bool()> retry);
  // One libfabric operation for op (call: the fi_* call, -FI_EAGAIN when
  // refused), now or queued behind refused ones. MPI error code.
  template <class Call>
  int post(Call call, Op *op, const char *what);
  int retry_queued();
  bool progress_until(const std::function<bool()> &done, double seconds);
  void fence();

  TransportConfig config_;
  std::string provider_;
  std::size_t inject_size_ = 0;
  std::size_t max_msg_ = 0;
  std::size_t iov_limit_ = 1;
  bool mr_local_ = false, mr_virt_addr_ = false, mr_prov_key_ = false, mr_endpoint_ = false;
  std::uint64_t next_key_ = 1;
  Info info_;
  // Declared in opening order: closed the other way round.
  Fid<fid_fabric> fabric_;
  Fid<fid_domain> domain_;
  Fid<fid_cq> cq_;
  Fid<fid_av> av_;
  Fid<fid_ep> ep_;
  // Receive buffers: one slab, slot_bytes_ each.
  std::unique_ptr<char[]> slab_;
  Registration slab_mr_;
  std::size_t slot_bytes_ = 0;
  std::vector<std::unique_ptr<RecvSlot>> slots_;
  std::vector<RecvSlot *> unposted_;
  std::vector<char> scratch_;  // an injected frame
  // The fast lane within a node: frames that fit a ring go there instead of
  // fi_inject (inject()); a full ring sends them through the provider, and
  // the receiver's sequence numbers put them back in order.
  shm::Node rings_;
  std::unordered_set<Op *> ops_;
  std::deque<std::function<bool()>> queued_;
  struct Done {
    Op *op;
    int err;
    std::size_t length;
  };
  std::vector<Done> completed_;
  bool stopping_ = false;
  // outstanding_: libfabric operations in flight + queued sends + later
  // completions + held rendezvous sources.
};

// The process's fabric (nullptr unless the libfabric transport is in use).
Fabric *fabric();
// MPI error code for a libfabric error number (either sign), printing
// what failed.
int mpi_error(int err, const char *what);
}  // namespace mpix::progress::ofi

#endif
