#include "gpu_path.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "datatype.h"
#include "device/copy.h"
#include "device/gpu.h"
#include "device/ipc.h"
#include "device/memtype.h"
#include "engine.h"
#include "gpu_cache.h"
#include "gpu_pack.h"
#include "gpu_tags.h"
#include "gpu_wire.h"
#include "progress/immortal.h"
#include "progress/single_copy.h"
#include "src/errors.h"

namespace mpix::p2p {

// The engine's channels, for the GPU protocols (friend of P2PComm).
struct GpuAccess {
  static MPI_Comm ctrl(const P2PComm &c) { return c.ctrl_; }
  static MPI_Comm data(const P2PComm &c) { return c.data_; }
  static int next_data_tag(P2PComm &c, int dest) { return c.next_data_tag(dest); }
  // Sends bytes of a scratch buffer that the next send reuses.
  static int transmit_scratch(P2PComm &c, const char *bytes, std::size_t n, int dest, int tag, SendMode mode,
                              Request *r, std::unique_lock<std::mutex> *lock) {
    return c.transmit(bytes, static_cast<int>(n), MPI_BYTE, dest, tag, mode, r, lock, PayloadLife::kDuringCall);
  }
  // The envelope of a GPU rendezvous, in order with the communicator's
  // other messages (the transport's), descriptor after it.
  static int send_envelope(P2PComm &c, int dest, const WireHeader &h, const void *descriptor, std::size_t n) {
    bool pending = false;
    return c.link_->send_eager(dest, h, descriptor, n, nullptr, &pending);
  }
  // A host rendezvous's payload, received as packed bytes.
  static int pull(P2PComm &c, const Message &m, void *into, std::size_t bytes, progress::Pending *done) {
    return c.link_->pull(m.arrival(), into, static_cast<int>(bytes), MPI_PACKED, done);
  }
};

namespace {

// ---- process state ----

GpuConfig g_config;
GpuStats g_stats;
std::uint64_t g_host = 0;
std::int32_t g_pid = 0;

struct Op;
std::vector<std::unique_ptr<Op>> &ops() {
  static Immortal<std::vector<std::unique_ptr<Op>>> v;
  return v.get();
}

// Separate pools per direction: a send slot is released only when the
// peer received it, a receive slot when its H2D copy finished, which never
// waits on the network, so sends and receives cannot starve each other.
std::unique_ptr<SlotPool> g_send_slots, g_recv_slots;
std::unique_ptr<IpcCache> g_ipc;
void *g_small = nullptr;  // pinned bounce buffer of eager device messages
std::size_t g_small_bytes = 0;
// Sender side: allocation id -> exported handle. Buffer ids are never
// reused within a process, so an entry can never describe another
// allocation; the table is only bounded for size.
std::unordered_map<std::uint64_t, std::array<unsigned char, device::kIpcHandleBytes>> g_exported;

// An answer in flight; frees itself once sent.
struct ReplySend final : progress::Pending {
  GpuReply reply{};
  void on_complete(const MPI_Status &) override { delete this; }  // NOLINT: self-owned until completion
};

int send_reply(const P2PComm &c, int dest, int data_tag, std::uint32_t mode, std::uint64_t chunk) {
  auto s = std::make_unique<ReplySend>();
  s->reply.mode = mode;
  s->reply.chunk = chunk;
  MPI_Request req = MPI_REQUEST_NULL;
  const int rc = PMPI_Isend(&s->reply, sizeof s->reply, MPI_BYTE, dest, gpu_reply_tag(data_tag), GpuAccess::ctrl(c), &req);
  if (rc == MPI_SUCCESS) progress::inflight().add(req, s.release());
  return rc;
}

// ---- operations in flight ----

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

void PieceDone::on_complete(const MPI_Status &st) {
  --piece->op->outstanding;
  if (st.MPI_ERROR != MPI_SUCCESS) piece->error = st.MPI_ERROR;
  piece->state = Piece::kLanded;
}

// A staged piece's host memory: a pinned slot of the pool, or, when pinned
// memory runs out (or MPIX_GPU_PINNED_SLOTS caps it), pageable memory of the
// piece's own, which the copy engine reads and writes too, only slower.
char *take_host_buffer(SlotPool &pool, Piece &p, std::size_t bytes) {
  p.slot = pool.acquire();
  if (p.slot != nullptr) {
    p.host = static_cast<char *>(p.slot);
  } else {
    ++g_stats.pageable;
    p.pageable.resize(bytes);
    p.host = p.pageable.data();
  }
  return p.host;
}

void give_back_host_buffer(SlotPool &pool, Piece &p) {
  if (p.slot != nullptr) pool.release(p.slot);
  p.slot = nullptr;
  p.host = nullptr;  // the pageable vector stays for the piece's next chunk
}

// Sender of a GPU rendezvous.
struct SendOp final : Op, progress::Pending {
  std::shared_ptr<P2PComm> comm;
  Request *r = nullptr;       // nonblocking: the user's request
  bool *done_flag = nullptr;  // blocking: the caller's flag and code
  int *rc_out = nullptr;
  int dest = 0;
  int data_tag = 0;
  int device = 0;
  const char *src = nullptr;            // contiguous device data, or
  std::unique_ptr<char[]> packed;       // packed host copy (non-contiguous)
  std::size_t bytes = 0;
  GpuReply reply{};
  bool ipc_offered = false;  // what a "done" reply may answer
  bool staging = false;
  ChunkPlan plan;
  std::size_t next = 0, completed = 0;
  std::size_t sent_next = 0;  // the chunk that goes out next
  std::vector<std::unique_ptr<Piece>> pieces;
  int error = MPI_SUCCESS;

  // The receiver's answer.
  void on_complete(const MPI_Status &st) override {
    --outstanding;
    if (st.MPI_ERROR != MPI_SUCCESS) {
      complete(st.MPI_ERROR);
      return;
    }
    int got = 0;
    PMPI_Get_count(&st, MPI_BYTE, &got);
    const WireError bad = decode_gpu_reply(&reply, got > 0 ? static_cast<std::size_t>(got) : 0, ipc_offered, &reply);
    if (bad != WireError::kOk) {
      // The receiver's state is unknown: this send fails rather than
      // guess whether the data moved.
      std::fprintf(stderr, "[mpix] GPU rendezvous: malformed reply from rank %d: %s\n", dest,
                   progress::wire_error_string(bad));
      complete(MPI_ERR_OTHER);
      return;
    }
    if (reply.mode == kReplyStage) {
      staging = true;
      plan = plan_chunks(bytes, static_cast<std::size_t>(reply.chunk));
      ++g_stats.staged;
      return;  // poll() runs the pipeline
    }
    ++g_stats.ipc;
    complete(MPI_SUCCESS);
  }

  void complete(int rc) {
    if (finished) return;
    finished = true;
    if (r != nullptr) {
      r->inner_busy = false;
      r->finish(MPI_PROC_NULL, MPI_ANY_TAG, rc, 0);
    } else {
      *rc_out = rc;
      *done_flag = true;
    }
  }

  // Chunks go out in index order: the receiver's receives match them in
  // the order they were posted, which is index order, so a chunk whose
  // copy finished first must wait (slots are reused, so the pieces' order
  // in `pieces` is no guide; out of order, a short last chunk met a full
  // chunk's receive and the transfer failed with MPI_ERR_TRUNCATE).
  void send_ready() {
    for (bool sent = true; sent;) {
      sent = false;
      for (auto &pp : pieces)
        if (pp->state == Piece::kReady && pp->index == sent_next) {
          start_network(*pp);
          ++sent_next;
          sent = true;
        }
    }
  }

  void start_network(Piece &p) {
    const std::size_t off = plan.offset(p.index), len = plan.length(p.index);
    // From its host buffer, the packed copy, or (the copy failed) zeros.
    const void *from = p.host != nullptr ? static_cast<const void *>(p.host)
                       : packed          ? static_cast<const void *>(packed.get() + off)
                                         : static_cast<const void *>(zeros.data());
    MPI_Request req = MPI_REQUEST_NULL;
    const int rc = PMPI_Isend(from, static_cast<int>(len), MPI_BYTE, dest, data_tag, GpuAccess::data(*comm), &req);
    if (rc != MPI_SUCCESS) {
      error = rc;
      p.state = Piece::kLanded;
      return;
    }
    p.state = Piece::kNetwork;
    ++outstanding;
    progress::inflight().add(req, &p.done);
  }

  void poll() override {
    if (!staging || finished) return;
    // Retire landed pieces and advance finished copies.
    for (auto &pp : pieces) {
      Piece &p = *pp;
      if (p.state == Piece::kCopying) {
        const int st = device::event_poll(p.event);
        if (st == 0) continue;
        if (st < 0) error = cuda_error(-st, "copy to host");
        p.state = Piece::kReady;  // sent even after an error: the receiver expects every chunk
      }
      if (p.state == Piece::kLanded) {
        if (p.error != MPI_SUCCESS) error = p.error;
        give_back_host_buffer(*g_send_slots, p);
        p.state = Piece::kIdle;
        ++completed;
      }
    }
    send_ready();
    // Start new chunks up to the pipeline depth (idle pieces are reused).
    for (auto &pp : pieces) {
      if (next >= plan.count()) break;
      if (pp->state == Piece::kIdle) start_piece(*pp);
    }
    while (next < plan.count() && pieces.size() < static_cast<std::size_t>(g_config.depth)) {
      pieces.push_back(std::make_unique<Piece>());
      pieces.back()->op = this;
      pieces.back()->done.piece = pieces.back().get();
      start_piece(*pieces.back());
    }
    send_ready();
    if (completed == plan.count()) complete(error);
  }

  void start_piece(Piece &p) {
    p.index = next++;
    p.error = MPI_SUCCESS;
    p.state = Piece::kReady;
    if (packed) return;
    const std::size_t off = plan.offset(p.index), len = plan.length(p.index);
    const int err = device::copy_async(take_host_buffer(*g_send_slots, p, plan.chunk), src + off, len, device,
                                       &p.event);
    if (err) {
      // Sent all the same (zeros): the receiver expects every chunk; the
      // error is reported.
      error = cuda_error(err, "copy to host");
      give_back_host_buffer(*g_send_slots, p);
      zeros.resize(plan.chunk);
      return;
    }
    p.state = Piece::kCopying;
  }

  std::vector<char> zeros;
};

// Receiver of a GPU rendezvous (IPC copy or staged chunks), or of a host
// rendezvous whose destination is on the device.
struct RecvOp final : Op, progress::Pending {
  enum Mode { kIpc, kStage, kHostRendezvous } mode = kStage;
  std::shared_ptr<P2PComm> comm;
  Request *r = nullptr;
  int source = 0, tag = 0, data_tag = 0;
  std::size_t bytes = 0;       // what the sender sends
  std::size_t deliver = 0;     // what fits (min(bytes, capacity))
  int status = MPI_SUCCESS;    // MPI_ERR_TRUNCATE or an error
  // Destination: contiguous (dst, on device dst_device or the host), or
  // the packed buffer unpacked at the end.
  char *dst = nullptr;
  bool dst_on_device = false;
  int dst_device = 0;
  std::unique_ptr<char[]> packed;
  // kIpc
  IpcKey key;
  bool mapped = false;
  device::CopyEvent event = nullptr;
  bool copying = false;
  // kStage
  ChunkPlan plan;
  std::size_t next = 0, completed = 0;
  std::vector<std::unique_ptr<Piece>> pieces;

  void complete() {
    if (finished) return;
    finished = true;
    if (packed && status != MPI_ERR_OTHER) {
      const int rc = unpack_anywhere(packed.get(), deliver, r->rbuf, r->count, r->dtype, GpuAccess::ctrl(*comm));
      if (rc != MPI_SUCCESS) status = rc;
    }
    if (mode == kIpc) {
      if (mapped) g_ipc->release(key);
      send_reply(*comm, source, data_tag, kReplyDone, 0);
    }
    r->inner_busy = false;
    r->finish(source, tag, status, static_cast<MPI_Count>(deliver));
  }

  // kHostRendezvous: the whole message landed in `packed`.
  void on_complete(const MPI_Status &st) override {
    --outstanding;
    if (st.MPI_ERROR != MPI_SUCCESS) status = st.MPI_ERROR;
    complete();
  }

  void poll() override {
    if (finished) return;
    if (mode == kIpc) {
      if (!copying) return;
      const int st = device::event_poll(event);
      if (st == 0) return;
      copying = false;
      if (st < 0) status = cuda_error(-st, "IPC copy");
      complete();
      return;
    }
    if (mode != kStage) return;
    for (auto &pp : pieces) {
      Piece &p = *pp;
      if (p.state == Piece::kLanded && p.host != nullptr && p.event == nullptr) {
        // Landed in host memory: up to the device, buffer freed after.
        const std::size_t off = plan.offset(p.index), len = plan.length(p.index);
        const int err = device::copy_async(dst + off, p.host, len, dst_device, &p.event);
        if (err) {
          status = cuda_error(err, "copy to device");
          p.event = nullptr;
        } else {
          p.state = Piece::kCopying;
          continue;
        }
      }
      if (p.state == Piece::kCopying) {
        const int st = device::event_poll(p.event);
        if (st == 0) continue;
        if (st < 0) status = cuda_error(-st, "copy to device");
        p.state = Piece::kLanded;
      }
      if (p.state == Piece::kLanded) {
        if (p.error != MPI_SUCCESS) status = p.error;
        give_back_host_buffer(*g_recv_slots, p);
        p.event = nullptr;
        p.state = Piece::kIdle;
        ++completed;
      }
    }
    for (auto &pp : pieces) {
      if (next >= plan.count()) break;
      if (pp->state == Piece::kIdle) post_piece(*pp);
    }
    while (next < plan.count() && pieces.size() < static_cast<std::size_t>(g_config.depth)) {
      pieces.push_back(std::make_unique<Piece>());
      pieces.back()->op = this;
      pieces.back()->done.piece = pieces.back().get();
      post_piece(*pieces.back());
    }
    if (completed == plan.count()) complete();
  }

  void post_piece(Piece &p) {
    p.index = next++;
    p.error = MPI_SUCCESS;
    p.event = nullptr;
    const std::size_t off = plan.offset(p.index), len = plan.length(p.index);
    char *into = nullptr;
    if (packed) into = packed.get() + off;
    else if (!dst_on_device) into = dst + off;
    else into = take_host_buffer(*g_recv_slots, p, plan.chunk);
    MPI_Request req = MPI_REQUEST_NULL;
    const int rc = PMPI_Irecv(into, static_cast<int>(len), MPI_BYTE, source, data_tag, GpuAccess::data(*comm), &req);
    if (rc != MPI_SUCCESS) {
      p.error = rc;
      p.state = Piece::kLanded;
      return;
    }
    p.state = Piece::kNetwork;
    ++outstanding;
    progress::inflight().add(req, &p.done);
  }
};

// How many GPU transfers are in flight, for the liveness thread, which
// reads it without the engine lock.
std::atomic<std::size_t> g_ops_in_flight{0};

Op *adopt(std::unique_ptr<Op> op) {
  ops().push_back(std::move(op));
  g_ops_in_flight.store(ops().size(), std::memory_order_relaxed);
  return ops().back().get();
}

std::array<unsigned char, device::kIpcHandleBytes> *exported_handle(const device::PtrInfo &info) {
  auto it = g_exported.find(info.buffer_id);
  if (it != g_exported.end()) return &it->second;
  std::array<unsigned char, device::kIpcHandleBytes> h{};
  if (device::ipc_export(reinterpret_cast<void *>(info.base), h.data()) != 0) return nullptr;
  if (g_exported.size() >= 4096) g_exported.clear();
  return &g_exported.emplace(info.buffer_id, h).first->second;
}

// The GPU whose context maps the next allocation (the one that copies).
int g_open_device = 0;

int ipc_open_key(const IpcKey &k, void **ptr) { return device::ipc_open(k.handle, g_open_device, ptr); }

// The sender's side of a GPU rendezvous: complete once the receiver
// answered, after its match, so it serves every send mode but buffered.
int gpu_rendezvous(P2PComm &c, const void *buf, int count, MPI_Datatype dtype, const Layout &l, int dest, int tag,
                   Request *r, std::unique_lock<std::mutex> *lock) {
  auto op = std::make_unique<SendOp>();
  op->comm = c.shared_from_this();
  op->dest = dest;
  op->bytes = static_cast<std::size_t>(l.bytes);
  const device::PtrInfo info = device::query(byte_at(buf, l.true_lb));
  op->device = info.device >= 0 ? info.device : device::current_device();

  struct {
    WireHeader h;
    GpuRts rts;
  } env{};
  const bool with_descriptor = p2p_config().eager_limit >= sizeof(GpuRts);
  if (l.contiguous) {
    op->src = byte_at(buf, l.true_lb);
    env.rts.base = info.base;
    env.rts.size = info.size;
    env.rts.offset = reinterpret_cast<std::uintptr_t>(op->src) - info.base;
    if (info.ipc_capable && !g_config.force_staging && with_descriptor) {
      if (auto *h = exported_handle(info)) {
        std::memcpy(env.rts.handle, h->data(), sizeof env.rts.handle);
        env.rts.flags = kRtsIpc;
        op->ipc_offered = true;
      }
    }
  } else {
    op->packed = std::make_unique<char[]>(op->bytes);
    const int rc = pack_device(buf, count, dtype, l, op->device, op->packed.get(), op->bytes, GpuAccess::ctrl(c));
    if (rc != MPI_SUCCESS) {
      if (r != nullptr) r->finish(MPI_PROC_NULL, MPI_ANY_TAG, rc, 0);
      return rc;
    }
  }
  env.rts.host = g_host;
  env.rts.pid = g_pid;
  env.rts.device = op->device;
  op->data_tag = GpuAccess::next_data_tag(c, dest);
  env.h = WireHeader{tag, with_descriptor ? kGpuRendezvous : kGpuRendezvousBare, op->bytes, op->data_tag, 0};

  // The answer's receive first, so that it never waits as unexpected.
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = PMPI_Irecv(&op->reply, sizeof op->reply, MPI_BYTE, dest, gpu_reply_tag(op->data_tag), GpuAccess::ctrl(c), &req);
  if (rc == MPI_SUCCESS) {
    rc = GpuAccess::send_envelope(c, dest, env.h, &env.rts, with_descriptor ? sizeof env.rts : 0);
    if (rc != MPI_SUCCESS) {
      PMPI_Cancel(&req);
      PMPI_Request_free(&req);
    }
  }
  if (rc != MPI_SUCCESS) {
    if (r != nullptr) r->finish(MPI_PROC_NULL, MPI_ANY_TAG, rc, 0);
    return rc;
  }
  bool done = false;
  int result = MPI_SUCCESS;
  if (r != nullptr) {
    op->r = r;
    r->inner_busy = true;
  } else {
    op->done_flag = &done;
    op->rc_out = &result;
  }
  op->outstanding = 1;
  SendOp *raw = op.get();
  adopt(std::move(op));
  progress::inflight().add(req, static_cast<progress::Pending *>(raw));
  if (r != nullptr) return MPI_SUCCESS;
  while (!done) progress_wait(*lock);
  return result;
}

// Eager-sized device data: through pinned memory into the engine's eager
// path (one short D2H copy beats any handshake at these sizes).
int gpu_eager(P2PComm &c, const void *buf, int count, MPI_Datatype dtype, const Layout &l, int dest, int tag,
              SendMode mode, Request *r, std::unique_lock<std::mutex> *lock) {
  const std::size_t bytes = static_cast<std::size_t>(l.bytes);
  // Pinned once, at the eager limit; larger (buffered) sends use pageable
  // memory rather than pinning per message.
  if (g_small == nullptr && bytes <= p2p_config().eager_limit) {
    g_small_bytes = p2p_config().eager_limit;
    g_small = device::pinned_alloc(g_small_bytes);
  }
  std::unique_ptr<char[]> pageable;
  char *out = bytes <= g_small_bytes ? static_cast<char *>(g_small) : nullptr;
  if (out == nullptr) {
    pageable = std::make_unique<char[]>(bytes);
    out = pageable.get();
  }
  const int dev = device::query(byte_at(buf, l.true_lb)).device;
  int rc = pack_device(buf, count, dtype, l, dev, out, bytes, GpuAccess::ctrl(c));
  if (rc != MPI_SUCCESS) {
    if (r != nullptr) r->finish(MPI_PROC_NULL, MPI_ANY_TAG, rc, 0);
    return rc;
  }
  ++g_stats.eager;
  // One bounce buffer serves every send: the engine hands it over as a
  // scratch payload, which the link sends or copies before this returns
  // (handed over with the request as its completion, a send queued on a
  // busy wire read it later, after other sends had overwritten it: issue 24).
  return GpuAccess::transmit_scratch(c, out, bytes, dest, tag, mode, r, lock);
}

}  // namespace

void gpu_start(const GpuConfig &config) {
  g_config = config;
  if (g_config.depth < 1) g_config.depth = 1;
  // Within what a reply may ask for (decode_gpu_reply).
  g_config.chunk = std::clamp<std::size_t>(g_config.chunk, kMinChunk, kMaxChunk);
  device::memtype_init(config.enabled);
  g_host = progress::node_identity();
  g_pid = static_cast<std::int32_t>(getpid());
  g_send_slots = std::make_unique<SlotPool>(g_config.chunk, device::pinned_alloc, device::pinned_free,
                                            g_config.pinned_slots);
  g_recv_slots = std::make_unique<SlotPool>(g_config.chunk, device::pinned_alloc, device::pinned_free,
                                            g_config.pinned_slots);
  g_ipc = std::make_unique<IpcCache>(g_config.ipc_cache, ipc_open_key, [](void *p) { device::ipc_close(p); });
}

void gpu_stop() {
  // Transfers still running at MPI_Finalize are erroneous programs; their
  // state is dropped with the pools.
  ops().clear();
  g_ops_in_flight.store(0, std::memory_order_relaxed);
  if (g_ipc) g_ipc->clear();
  g_ipc.reset();
  g_send_slots.reset();
  g_recv_slots.reset();
  device::pinned_free(g_small);
  g_small = nullptr;
  g_small_bytes = 0;
  g_exported.clear();
  // Without the driver nothing was ever created: touch no CUDA.
  if (device::memtype_driver_loaded()) device::copy_finalize();
}

const GpuConfig &gpu_config() { return g_config; }
GpuStats gpu_stats() { return g_stats; }

bool gpu_transmit(P2PComm &c, const void *buf, int count, MPI_Datatype dtype, int dest, int tag, SendMode mode,
                  Request *r, std::unique_lock<std::mutex> *lock, int *rc) {
  if (count == 0 || !device::is_device(buf)) return false;
  const Layout l = layout_of(dtype, count);
  if (l.bytes == 0) return false;
  if (!gpu::compiled_with_cuda()) {
    *rc = error_code(Err::kDeviceBufferNoCuda);
    if (r != nullptr) r->finish(MPI_PROC_NULL, MPI_ANY_TAG, *rc, 0);
    return true;
  }
  const std::size_t bytes = static_cast<std::size_t>(l.bytes);
  // Buffered sends keep the engine's semantics (a copy in the attached
  // buffer): any size goes through host memory first.
  const std::size_t eager = std::min(g_config.eager_limit, p2p_config().eager_limit);
  if ((bytes <= eager && mode != SendMode::kSync) || mode == SendMode::kBuffered)
    *rc = gpu_eager(c, buf, count, dtype, l, dest, tag, mode, r, lock);
  else
    *rc = gpu_rendezvous(c, buf, count, dtype, l, dest, tag, r, lock);
  return true;
}

void gpu_keep_descriptor(Message &m) {
  if (m.kind != kGpuRendezvous || m.payload == nullptr) {
    m.payload = nullptr;
    return;
  }
  m.descriptor = std::make_unique<char[]>(sizeof(GpuRts));
  std::memcpy(m.descriptor.get(), m.payload, sizeof(GpuRts));
  m.payload = m.descriptor.get();
}

bool gpu_deliver(P2PComm &c, Request *r, Message &m) {
  const bool gpu_rndv = m.kind == kGpuRendezvous || m.kind == kGpuRendezvousBare;
  const Layout l = gpu_rndv || (m.bytes > 0 && device::is_device(r->rbuf)) ? layout_of(r->dtype, r->count) : Layout{};
  if (!gpu_rndv && (m.bytes == 0 || l.bytes == 0)) return false;
  const std::size_t capacity = static_cast<std::size_t>(l.bytes);
  const std::size_t deliver = m.bytes < capacity ? static_cast<std::size_t>(m.bytes) : capacity;
  const int status = m.bytes > capacity ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
  r->queued = false;
  r->st_source = m.source;
  r->st_tag = m.tag;

  if (m.kind == kEager) {
    const int rc = unpack_anywhere(m.payload, deliver, r->rbuf, r->count, r->dtype, GpuAccess::ctrl(c));
    ++g_stats.eager;
    r->finish(m.source, m.tag, rc != MPI_SUCCESS ? rc : status, static_cast<MPI_Count>(deliver));
    return true;
  }

  auto op = std::make_unique<RecvOp>();
  op->comm = c.shared_from_this();
  op->r = r;
  op->source = m.source;
  op->tag = m.tag;
  op->data_tag = m.data_tag;
  op->bytes = static_cast<std::size_t>(m.bytes);
  op->deliver = deliver;
  op->status = status;
  const bool rdev = deliver > 0 && device::is_device(r->rbuf);
  if (rdev && !gpu::compiled_with_cuda()) op->status = error_code(Err::kDeviceBufferNoCuda);
  const bool direct = l.contiguous && m.bytes <= capacity && op->status == MPI_SUCCESS;
  if (direct) {
    op->dst = byte_at(r->rbuf, l.true_lb);
    op->dst_on_device = rdev;
    op->dst_device = rdev ? device::query(op->dst).device : 0;
  } else if (op->bytes > 0) {
    op->packed = std::make_unique<char[]>(op->bytes);
  }
  r->inner_busy = true;

  if (m.kind == kRendezvous) {
    // The engine's host rendezvous into a device buffer: the payload lands
    // in host memory (any send type may be received as MPI_PACKED) and goes
    // up in one copy.
    op->mode = RecvOp::kHostRendezvous;
    if (!op->packed) op->packed = std::make_unique<char[]>(op->bytes);
    ++g_stats.host_rendezvous;
    RecvOp *raw = op.get();
    const int rc = GpuAccess::pull(c, m, raw->packed.get(), raw->bytes, static_cast<progress::Pending *>(raw));
    if (rc != MPI_SUCCESS) {
      r->inner_busy = false;
      r->finish(m.source, m.tag, rc, 0);
      return true;
    }
    op->outstanding = 1;
    adopt(std::move(op));
    return true;
  }

  // A GPU rendezvous: IPC when the sender offered a handle, the data is on
  // this node, and it maps here; staging otherwise.
  GpuRts rts{};
  if (m.kind == kGpuRendezvous && m.payload != nullptr) std::memcpy(&rts, m.payload, sizeof rts);
  const bool same_node = m.kind == kGpuRendezvous && rts.host == g_host;
  void *peer = nullptr;
  if (same_node && (rts.flags & kRtsIpc) && !g_config.force_staging && op->status != MPI_ERR_OTHER &&
      op->status != error_code(Err::kDeviceBufferNoCuda) && gpu::compiled_with_cuda()) {
    if (rts.pid == g_pid) {
      peer = reinterpret_cast<void *>(static_cast<std::uintptr_t>(rts.base));  // ourselves: same address space
    } else {
      op->key.host = rts.host;
      op->key.pid = rts.pid;
      op->key.base = rts.base;
      op->key.size = rts.size;
      std::memcpy(op->key.handle, rts.handle, sizeof op->key.handle);
      g_open_device = op->dst_on_device ? op->dst_device : device::current_device();
      if (g_ipc->acquire(op->key, &peer) == 0) op->mapped = true;
      else peer = nullptr;  // a stale mapping lies there (gpu_cache.h), or the open failed: staged
    }
  }
  if (peer != nullptr) {
    op->mode = RecvOp::kIpc;
    char *to = op->packed ? op->packed.get() : op->dst;
    const std::size_t n = op->packed ? op->bytes : deliver;
    const int dev = op->dst_on_device ? op->dst_device : device::current_device();
    const int err = n == 0 ? 0 : device::copy_async(to, byte_at(peer, static_cast<MPI_Aint>(rts.offset)), n, dev, &op->event);
    if (err) {
      op->status = cuda_error(err, "IPC copy");
    } else if (n > 0) {
      op->copying = true;
    }
    RecvOp *raw = op.get();
    adopt(std::move(op));
    if (!raw->copying) raw->complete();
    return true;
  }

  op->mode = RecvOp::kStage;
  op->plan = plan_chunks(op->bytes, g_config.chunk);
  const int rc = send_reply(c, m.source, m.data_tag, kReplyStage, g_config.chunk);
  if (rc != MPI_SUCCESS) op->status = rc;
  RecvOp *raw = op.get();
  adopt(std::move(op));
  raw->poll();  // posts the first receives
  return true;
}

int gpu_progress() {
  auto &v = ops();
  if (v.empty()) return 0;
  int events = 0;
  // poll() may add operations (never remove): iterate by index.
  for (std::size_t i = 0; i < v.size(); ++i) v[i]->poll();
  for (std::size_t i = 0; i < v.size();) {
    if (v[i]->finished && v[i]->outstanding == 0) {
      v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
      ++events;
    } else {
      ++i;
    }
  }
  g_ops_in_flight.store(v.size(), std::memory_order_relaxed);
  return events;
}

bool gpu_busy() { return g_ops_in_flight.load(std::memory_order_relaxed) > 0; }

}  // namespace mpix::p2p
