// What the GPU protocols share (internal to src/p2p): the engine's
// channels (GpuAccess), the process state set at MPI_Init, the operations
// in flight and their pipeline pieces. The protocols, by side:
// gpu_send.cc (eager sends from device buffers, the rendezvous sender),
// gpu_recv.cc (deliveries into device buffers, the rendezvous receiver,
// kGpuBuffered arrivals); gpu_path.cc starts, stops and progresses them.
#ifndef MPIX_SRC_P2P_GPU_OPS_H
#define MPIX_SRC_P2P_GPU_OPS_H

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "device/copy.h"
#include "engine.h"
#include "gpu_cache.h"
#include "gpu_path.h"
#include "gpu_wire.h"

namespace mpix::p2p {

// The engine's channels, for the GPU protocols (friend of P2PComm).
struct GpuAccess {
  static MPI_Comm ctrl(const P2PComm &c) { return c.ctrl_; }
  static int next_data_tag(P2PComm &c, int dest) { return c.next_data_tag(dest); }
  static int world(const P2PComm &c, int rank) { return c.world_[static_cast<std::size_t>(rank)]; }
  // Sends bytes of a host scratch buffer that the next send reuses: the
  // engine's host send itself, not transmit() again (the buffer's memory
  // type is known).
  static int transmit_scratch(P2PComm &c, const char *bytes, std::size_t n, int dest, int tag, SendMode mode,
                              Request *r, progress::EngineLock *lock) {
    return c.transmit_host(bytes, static_cast<int>(n), MPI_BYTE, dest, tag, mode, r, lock,
                           PayloadLife::kDuringCall);
  }
  // A GPU protocol message (a rendezvous envelope and its descriptor, the
  // bytes that follow it, the answer), in order with the communicator's
  // other messages (the transport's); the payload is copied or sent before
  // this returns.
  static int send_envelope(P2PComm &c, int dest, const WireHeader &h, const void *descriptor, std::size_t n) {
    bool pending = false;
    const int rc = c.link_->send_eager(dest, h, descriptor, n, nullptr, &pending);
    if (rc == MPI_SUCCESS) c.lane_mark_sent(dest, h);
    return rc;
  }
  // A staged transfer's chunk, through the transport's rendezvous (the
  // buffer stays in place until done, or *pending is false).
  static int send_chunk(P2PComm &c, int dest, int data_tag, const void *bytes, std::size_t n,
                        progress::Pending *done, bool *pending) {
    const WireHeader h{0, progress::kRendezvous, n, data_tag, progress::kFlagGpuChunk};
    return c.link_->send_rendezvous(dest, h, bytes, static_cast<int>(n), MPI_BYTE, SendMode::kStandard, done,
                                    pending);
  }
  static int pull_chunk(P2PComm &c, const progress::Arrival &a, void *into, std::size_t n, progress::Pending *done) {
    return c.link_->pull(a, into, static_cast<int>(n), MPI_BYTE, done);
  }
  static void discard(P2PComm &c, const progress::Arrival &a) { c.link_->discard(a); }
  // A host rendezvous's payload, received as packed bytes.
  static int pull(P2PComm &c, const Message &m, void *into, std::size_t bytes, progress::Pending *done) {
    return c.link_->pull(m.arrival(), into, static_cast<int>(bytes), MPI_PACKED, done);
  }
};


namespace gpu_detail {

// A transfer in flight, as both sides name it: (communicator, peer, data
// tag), unique while in flight (P2PComm::next_data_tag). The sender finds
// its send by the answer's, the receiver its envelope or staged receive by
// a kGpuBuffered arrival's or a chunk's.
struct TransferKey {
  const void *comm;
  int peer, data_tag;
  bool operator==(const TransferKey &o) const { return comm == o.comm && peer == o.peer && data_tag == o.data_tag; }
};
struct TransferKeyHash {
  std::size_t operator()(const TransferKey &k) const {
    return std::hash<const void *>()(k.comm) ^ (static_cast<std::size_t>(k.peer) * 0x9e3779b97f4a7c15ull) ^
           static_cast<std::size_t>(static_cast<unsigned>(k.data_tag));
  }
};
// Transfers by key, keeping erased nodes for the next insert: every GPU
// rendezvous puts one entry in a map on each side and takes it out again,
// which in a plain unordered_map is an allocation and a free per message.
template <class T>
class TransferMap {
  using Map = std::unordered_map<TransferKey, T *, TransferKeyHash>;

 public:
  using iterator = typename Map::iterator;
  iterator find(const TransferKey &k) { return map_.find(k); }
  iterator end() { return map_.end(); }
  void put(const TransferKey &k, T *v) {
    if (spare_.empty()) {
      map_[k] = v;
      return;
    }
    auto node = std::move(spare_.back());
    spare_.pop_back();
    node.key() = k;
    node.mapped() = v;
    auto r = map_.insert(std::move(node));
    if (!r.inserted) {
      r.position->second = v;
      spare_.push_back(std::move(r.node));
    }
  }
  void erase(iterator it) {
    auto node = map_.extract(it);
    if (spare_.size() < kSpares) spare_.push_back(std::move(node));
  }
  void erase(const TransferKey &k) {
    const auto it = map_.find(k);
    if (it != map_.end()) erase(it);
  }
  void clear() {
    map_.clear();
    spare_.clear();
  }

 private:
  static constexpr std::size_t kSpares = 1024;
  Map map_;
  std::vector<typename Map::node_type> spare_;
};

// ---- process state (gpu_path.cc; set by gpu_start) ----

extern GpuConfig g_config;
extern GpuStats g_stats;
extern std::uint64_t g_host;  // progress::node_identity()
extern std::int32_t g_pid;
// Separate pools per direction: a send slot is released only when the
// peer received it, a receive slot when its H2D copy finished, which never
// waits on the network, so sends and receives cannot starve each other.
extern std::unique_ptr<SlotPool> g_send_slots, g_recv_slots;
extern std::unique_ptr<IpcCache> g_ipc;
// Read once per gpu_progress() for every operation it polls (a window of
// sends would otherwise read the clock once each, every step).
extern std::chrono::steady_clock::time_point g_poll_now;

// An answer to a GPU rendezvous (kGpuReply naming data_tag).
int send_reply(P2PComm &c, int dest, int data_tag, std::uint32_t mode, std::uint64_t chunk);

// A GPU transfer in progress. Underlying PMPI requests are owned by small
// Pending members (the inflight set calls back into them); the op is
// destroyed by gpu_progress() once it is finished and none is outstanding.
struct Op {
  virtual ~Op() = default;
  virtual void poll() = 0;
  bool finished = false;
  int outstanding = 0;  // PMPI requests in the inflight set
};

struct Piece;  // one chunk of a pipeline

struct PieceDone final : progress::Pending {
  Piece *piece = nullptr;
  void on_complete(const MPI_Status &st) override;
};

struct Piece {
  // kReady: its bytes are on the host, waiting for the chunks before it to
  // go out first.
  enum State { kIdle, kCopying, kReady, kNetwork, kLanded } state = kIdle;
  Op *op = nullptr;
  std::size_t index = 0;
  void *slot = nullptr;         // a pinned slot, or
  std::vector<char> pageable;   // when none could be had: slower, still correct
  char *host = nullptr;         // the one of them in use (staged pieces)
  device::CopyEvent event = nullptr;
  PieceDone done;
  int error = MPI_SUCCESS;
};

// A staged piece's host memory: a pinned slot of the pool, or, when pinned
// memory runs out (or MPIX_GPU_PINNED_SLOTS caps it), pageable memory of the
// piece's own, which the copy engine reads and writes too, only slower.
char *take_host_buffer(SlotPool &pool, Piece &p, std::size_t bytes);
void give_back_host_buffer(SlotPool &pool, Piece &p);

// Hands an operation to gpu_progress(), which polls it until finished.
Op *adopt(std::unique_ptr<Op> op);

// gpu_control_arrival's cases: gpu_recv.cc (kGpuBuffered, chunks),
// gpu_send.cc (kGpuReply).
void buffered_arrival(P2PComm &c, const progress::Arrival &a);
void chunk_arrival(P2PComm &c, const progress::Arrival &a);
void reply_arrival(P2PComm &c, const progress::Arrival &a);

// gpu_send.cc: forgets exported IPC handles and the sends waiting for
// replies (MPI_Finalize).
void clear_exported();
void clear_waiting_sends();
// gpu_recv.cc: forgets the staged receives waiting for chunks (MPI_Finalize).
void clear_staging_receives();
// gpu_recv.cc: opens a peer's allocation for the IPC cache: 0, or the
// failed open's device::Status as a number (IpcCache's OpenFn convention).
int ipc_open_key(const IpcKey &k, void **ptr);
// gpu_send.cc / gpu_recv.cc: the eager bounce buffer, freed at finalize.
void free_bounce_buffer();

}  // namespace gpu_detail
}  // namespace mpix::p2p

#endif
