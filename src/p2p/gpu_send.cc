// The sending side of the GPU protocols: eager sends from device buffers
// (through host memory) and the GPU rendezvous sender (gpu_path.h).
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "datatype.h"
#include "device/copy.h"
#include "device/gpu.h"
#include "device/ipc.h"
#include "device/kernel_copy.h"
#include "device/memtype.h"
#include "engine.h"
#include "gpu_cache.h"
#include "gpu_ops.h"
#include "gpu_pack.h"
#include "gpu_wire.h"
#include "stage_clock.h"
#include "progress/immortal.h"
#include "progress/single_copy.h"
#include "progress/wire.h"
#include "src/errors.h"

namespace mpix::p2p {
namespace gpu_detail {
namespace {

void *g_small = nullptr;  // pinned bounce buffer of eager device messages
std::size_t g_small_bytes = 0;
// Allocation id -> exported handle. Buffer ids are never reused within a
// process, so an entry can never describe another allocation; the table is
// only bounded for size.
std::unordered_map<std::uint64_t, std::array<unsigned char, device::kIpcHandleBytes>> g_exported;

struct SendOp;

// Sends waiting for their receiver's answer.
TransferMap<SendOp> &waiting_sends() {
  // Immortal: the map outlives every op (gpu_stop clears both).
  static Immortal<TransferMap<SendOp>> m;
  return m.get();
}

// Sender of a GPU rendezvous.
struct SendOp final : Op {
  std::shared_ptr<P2PComm> comm;
  Request *r = nullptr;       // nonblocking: the user's request
  bool *done_flag = nullptr;  // blocking: the caller's flag and code
  int *rc_out = nullptr;
  int dest = 0;
  int tag = 0;
  int data_tag = 0;
  int device = 0;
  // A send that may complete without its receive: after buffer_after_us
  // with no answer, its bytes follow the envelope (kGpuBuffered) and the
  // receiver, if it has not matched it yet, keeps them as an eager message.
  bool bufferable = false, buffered = false;
  std::chrono::steady_clock::time_point since;
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

  // The receiver's answer (n bytes).
  void answered(const void *payload, std::size_t n) {
    const WireError bad = decode_gpu_reply(payload, n, ipc_offered, &reply);
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
    bool pending = false;
    const int rc = GpuAccess::send_chunk(*comm, dest, data_tag, from, len, &p.done, &pending);
    if (rc != MPI_SUCCESS) error = rc;
    if (rc != MPI_SUCCESS || !pending) {
      p.state = Piece::kLanded;  // its buffer is free already
      return;
    }
    p.state = Piece::kNetwork;
    ++outstanding;
  }

  void poll() override {
    if (bufferable && !buffered && !staging && !finished) maybe_buffer();
    if (!staging || finished) return;
    // Retire landed pieces and advance finished copies.
    for (auto &pp : pieces) {
      Piece &p = *pp;
      if (p.state == Piece::kCopying) {
        const device::Status st = device::event_poll(p.event);
        if (st == device::Status::kNotReady) continue;
        if (st != device::Status::kOk) error = cuda_error(st, "copy to host");
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

  // Sends the bytes after the envelope once the receive has kept this send
  // waiting for buffer_after_us: two blocking sends facing each other
  // (legal for MPI, and what many programs do with small messages) must
  // not wait for each other's receive forever. The receiver's one answer
  // ("done") says that it either copied from this buffer or kept the bytes.
  void maybe_buffer() {
    if (g_poll_now - since < std::chrono::microseconds(g_config.buffer_after_us)) return;
    buffered = true;
    std::unique_ptr<char[]> host;
    const char *bytes_ptr = packed.get();
    if (!packed) {
      host = std::make_unique<char[]>(bytes);
      // On failure the receive's answer completes it still.
      if (copy_to_host(host.get(), src, bytes, device) != device::Status::kOk) return;
      bytes_ptr = host.get();
    }
    const WireHeader h{tag, progress::kGpuBuffered, bytes, data_tag, 0};
    if (GpuAccess::send_envelope(*comm, dest, h, bytes_ptr, bytes) == MPI_SUCCESS) ++g_stats.buffered;
  }

  void start_piece(Piece &p) {
    p.index = next++;
    p.error = MPI_SUCCESS;
    p.state = Piece::kReady;
    if (packed) return;
    const std::size_t off = plan.offset(p.index), len = plan.length(p.index);
    const device::Status st =
        device::copy_async(take_host_buffer(*g_send_slots, p, plan.chunk), src + off, len, device, &p.event);
    if (st != device::Status::kOk) {
      // Sent all the same (zeros): the receiver expects every chunk; the
      // error is reported.
      error = cuda_error(st, "copy to host");
      give_back_host_buffer(*g_send_slots, p);
      zeros.resize(plan.chunk);
      return;
    }
    p.state = Piece::kCopying;
  }

  std::vector<char> zeros;
};

std::array<unsigned char, device::kIpcHandleBytes> *exported_handle(const device::PtrInfo &info) {
  auto it = g_exported.find(info.buffer_id);
  if (it != g_exported.end()) return &it->second;
  std::array<unsigned char, device::kIpcHandleBytes> h{};
  if (device::ipc_export(reinterpret_cast<void *>(info.base), h.data()) != device::Status::kOk) return nullptr;
  if (g_exported.size() >= 4096) g_exported.clear();
  return &g_exported.emplace(info.buffer_id, h).first->second;
}

// The sender's side of a GPU rendezvous: complete once the receiver
// answered, after its match, so it serves every send mode but buffered.
int gpu_rendezvous(P2PComm &c, const void *buf, int count, MPI_Datatype dtype, const Layout &l,
                   const device::PtrInfo &info, int dest, int tag, bool bufferable, Request *r,
                   progress::EngineLock *lock) {
  auto op = std::make_unique<SendOp>();
  op->comm = c.self();
  op->dest = dest;
  op->tag = tag;
  op->bufferable = bufferable;
  op->since = std::chrono::steady_clock::now();
  op->bytes = static_cast<std::size_t>(l.bytes);
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

  // Findable by its answer before the envelope leaves (the answer comes
  // through the same transport, kGpuReply).
  const TransferKey key{&c, dest, op->data_tag};
  waiting_sends().put(key, op.get());
  const int rc = GpuAccess::send_envelope(c, dest, env.h, &env.rts, with_descriptor ? sizeof env.rts : 0);
  if (rc != MPI_SUCCESS) {
    waiting_sends().erase(key);
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
  adopt(std::move(op));
  if (r != nullptr) return MPI_SUCCESS;
  while (!done) progress_wait(*lock);
  return result;
}

// Eager-sized device data: through pinned memory into the engine's eager
// path (one short D2H copy beats any handshake at these sizes).
int gpu_eager(P2PComm &c, const void *buf, int count, MPI_Datatype dtype, const Layout &l,
              const device::PtrInfo &info, int dest, int tag, SendMode mode, Request *r,
              progress::EngineLock *lock) {
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
  int rc = pack_device(buf, count, dtype, l, info.device, out, bytes, GpuAccess::ctrl(c));
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

void clear_exported() { g_exported.clear(); }
void clear_waiting_sends() { waiting_sends().clear(); }

void free_bounce_buffer() {
  device::pinned_free(g_small);
  g_small = nullptr;
  g_small_bytes = 0;
}

}  // namespace gpu_detail

using namespace gpu_detail;

void gpu_detail::reply_arrival(P2PComm &c, const progress::Arrival &a) {
  auto &w = waiting_sends();
  const auto it = w.find(TransferKey{&c, a.source, a.h.data_tag});
  if (it == w.end()) {
    // No send of ours waits for it: a peer's bug or a forged message.
    progress::report_malformed("GPU rendezvous reply", a.source, progress::WireError::kBadDataTag);
    return;
  }
  SendOp *op = it->second;
  w.erase(it);
  op->answered(a.payload, a.payload_bytes);
}

bool gpu_transmit_maybe_device(P2PComm &c, const void *buf, int count, MPI_Datatype dtype, int dest, int tag,
                               SendMode mode, Request *r, progress::EngineLock *lock, int *rc) {
  MPIX_STAGE(kSend);
  // Classified once: every protocol below works from this. query's seven
  // attributes cost a host buffer ~0.07 us more than a short question
  // (0.27 against 0.20 us, bench_gpu_copy on an H200 host), and asking
  // both cost a device send two calls. So a process asks the short one
  // until it first sends from device memory, query alone from then on.
  static std::atomic<bool> device_sends{false};
  if (!device_sends.load(std::memory_order_relaxed)) {
    if (device::device_of(buf) < 0) return false;
    device_sends.store(true, std::memory_order_relaxed);
  }
  device::PtrInfo info = device::query(buf);
  if (info.kind != device::MemKind::kDevice) return false;
  const Layout l = layout_of(dtype, count);
  if (l.bytes == 0) return false;
  // A type whose data start elsewhere than buf (a lower bound) may start in
  // another allocation: describe where the bytes are.
  if (l.true_lb != 0) info = device::query(byte_at(buf, l.true_lb));
  if (!device::compiled_with_cuda()) {
    *rc = error_code(Err::kDeviceBufferNoCuda);
    if (r != nullptr) r->finish(MPI_PROC_NULL, MPI_ANY_TAG, *rc, 0);
    return true;
  }
  const std::size_t bytes = static_cast<std::size_t>(l.bytes);
  // Buffered sends keep the engine's semantics (a copy in the attached
  // buffer): any size goes through host memory first. Within a node, a
  // device buffer CUDA IPC can map goes by rendezvous above
  // MPIX_GPU_NODE_EAGER_LIMIT (one copy by the receiver's GPU beats two
  // through host memory at every size), buffered after a wait so that a
  // small one never waits for its receive forever (SendOp::maybe_buffer).
  const std::size_t eager = std::min(g_config.eager_limit, p2p_config().eager_limit);
  const bool near = g_config.node_eager_limit < eager && info.ipc_capable && !g_config.force_staging &&
                    progress::same_node(GpuAccess::world(c, dest));
  const std::size_t eager_here = near ? g_config.node_eager_limit : eager;
  if ((bytes <= eager_here && mode != SendMode::kSync) || mode == SendMode::kBuffered)
    *rc = gpu_eager(c, buf, count, dtype, l, info, dest, tag, mode, r, lock);
  else
    *rc = gpu_rendezvous(c, buf, count, dtype, l, info, dest, tag, bytes <= eager && mode != SendMode::kSync, r, lock);
  return true;
}

}  // namespace mpix::p2p
