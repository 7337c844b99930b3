// The receiving side of the GPU protocols: deliveries into device
// buffers, the GPU rendezvous receiver (IPC copy or staged chunks), and
// kGpuBuffered arrivals (gpu_path.h).
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

// Receiver side: GPU rendezvous envelopes no receive has taken yet, for a
// kGpuBuffered arrival to find.
TransferMap<Message> &waiting() {
  // Immortal: a Message destroyed during static destruction still looks.
  static Immortal<TransferMap<Message>> m;
  return m.get();
}

struct RecvOp;

// Staged receives waiting for chunks.
TransferMap<RecvOp> &staging() {
  static Immortal<TransferMap<RecvOp>> m;
  return m.get();
}

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
  device::KernelCopyTicket ticket;  // the resident kernel's copy (kernel_copying)
  bool kernel_copying = false;
  // kStage
  ChunkPlan plan;
  std::size_t next = 0, completed = 0;
  std::vector<std::unique_ptr<Piece>> pieces;
  // Arrived, not pulled yet (in order, from chunk_head): a vector, as a
  // deque allocates in its constructor, once per receive of any mode.
  std::vector<progress::Arrival> chunks;
  std::size_t chunk_head = 0;
  bool chunks_left() const { return chunk_head < chunks.size(); }
  bool registered = false;               // in staging()

  void complete() {
    if (finished) return;
    MPIX_STAGE(kComplete);
    finished = true;
    if (registered) {
      staging().erase(TransferKey{comm.get(), source, data_tag});
      registered = false;
    }
    if (packed && status != MPI_ERR_OTHER) {
      const int rc = unpack_anywhere(packed.get(), deliver, r->rbuf, r->count, r->dtype, GpuAccess::ctrl(*comm));
      if (rc != MPI_SUCCESS) status = rc;
    }
    if (mode == kIpc) {
      if (mapped) g_ipc->release(key);
      MPIX_STAGE(kReply);
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
      if (!copying && !kernel_copying) return;
      MPIX_STAGE(kPollIpc);
      const device::Status st = kernel_copying ? device::kernel_copy_test(ticket) : device::event_poll(event);
      if (st == device::Status::kNotReady) {
        MPIX_STAGE_COUNT(kPollNotDone);
        return;
      }
      copying = kernel_copying = false;
      if (st != device::Status::kOk) status = cuda_error(st, "IPC copy");
      complete();
      return;
    }
    if (mode != kStage) return;
    for (auto &pp : pieces) {
      Piece &p = *pp;
      if (p.state == Piece::kLanded && p.host != nullptr && p.event == nullptr) {
        // Landed in host memory: up to the device, buffer freed after.
        const std::size_t off = plan.offset(p.index), len = plan.length(p.index);
        const device::Status st = device::copy_async(dst + off, p.host, len, dst_device, &p.event);
        if (st != device::Status::kOk) {
          status = cuda_error(st, "copy to device");
          p.event = nullptr;
        } else {
          p.state = Piece::kCopying;
          continue;
        }
      }
      if (p.state == Piece::kCopying) {
        const device::Status st = device::event_poll(p.event);
        if (st == device::Status::kNotReady) continue;
        if (st != device::Status::kOk) status = cuda_error(st, "copy to device");
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
      if (next >= plan.count() || !chunks_left()) break;
      if (pp->state == Piece::kIdle) post_piece(*pp);
    }
    while (next < plan.count() && chunks_left() && pieces.size() < static_cast<std::size_t>(g_config.depth)) {
      pieces.push_back(std::make_unique<Piece>());
      pieces.back()->op = this;
      pieces.back()->done.piece = pieces.back().get();
      post_piece(*pieces.back());
    }
    if (completed == plan.count()) complete();
  }

  // Pulls the next chunk that arrived into the piece's memory.
  void post_piece(Piece &p) {
    const progress::Arrival a = chunks[chunk_head++];
    if (chunk_head == chunks.size()) chunks.clear(), chunk_head = 0;
    p.index = next++;
    p.error = MPI_SUCCESS;
    p.event = nullptr;
    const std::size_t off = plan.offset(p.index), len = plan.length(p.index);
    if (a.h.bytes != len) {
      // The sender cut its data otherwise than it was asked to.
      progress::report_malformed("GPU rendezvous chunk", source, progress::WireError::kBadSize);
      GpuAccess::discard(*comm, a);
      p.error = MPI_ERR_OTHER;
      p.state = Piece::kLanded;
      return;
    }
    char *into = nullptr;
    if (packed) into = packed.get() + off;
    else if (!dst_on_device) into = dst + off;
    else into = take_host_buffer(*g_recv_slots, p, plan.chunk);
    const int rc = GpuAccess::pull_chunk(*comm, a, into, len, &p.done);
    if (rc != MPI_SUCCESS) {
      p.error = rc;
      p.state = Piece::kLanded;
      return;
    }
    p.state = Piece::kNetwork;
    ++outstanding;
  }
};

// The GPU whose context maps the next allocation (the one that copies).
int g_open_device = 0;

}  // namespace

int ipc_open_key(const IpcKey &k, void **ptr) {
  static_assert(static_cast<int>(device::Status::kOk) == 0, "0 is success for IpcCache");
  return static_cast<int>(device::ipc_open(k.handle, g_open_device, ptr));
}

void clear_staging_receives() { staging().clear(); }

}  // namespace gpu_detail

using namespace gpu_detail;

void gpu_keep_descriptor(P2PComm &c, Message &m) {
  if (m.kind == kGpuRendezvous || m.kind == kGpuRendezvousBare) {
    waiting().put(TransferKey{&c, m.source, m.data_tag}, &m);
    m.gpu_waiting_on = &c;
  }
  if (m.kind != kGpuRendezvous || m.payload == nullptr) {
    m.payload = nullptr;
    return;
  }
  static_assert(sizeof(GpuRts) <= Message::kSmall, "the descriptor is kept in the message");
  std::memcpy(m.small, m.payload, sizeof(GpuRts));
  m.payload = m.small;
}

void gpu_detail::chunk_arrival(P2PComm &c, const progress::Arrival &a) {
  auto &s = staging();
  const auto it = s.find(TransferKey{&c, a.source, a.h.data_tag});
  if (it == s.end()) {
    // No staged receive of ours waits for it: a peer's bug or a forged message.
    progress::report_malformed("GPU rendezvous chunk", a.source, progress::WireError::kBadDataTag);
    GpuAccess::discard(c, a);
    return;
  }
  progress::Arrival kept = a;
  kept.payload = nullptr;  // none: the transport keeps the data until pulled
  kept.payload_bytes = 0;
  it->second->chunks.push_back(kept);
  it->second->poll();  // pulls it now if a piece is free
}


void gpu_forget(Message &m) {
  auto &w = waiting();
  const auto it = w.find(TransferKey{m.gpu_waiting_on, m.source, m.data_tag});
  if (it != w.end() && it->second == &m) w.erase(it);
  m.gpu_waiting_on = nullptr;
}

void gpu_detail::buffered_arrival(P2PComm &c, const progress::Arrival &a) {
  auto &w = waiting();
  const auto it = w.find(TransferKey{&c, a.source, a.h.data_tag});
  if (it == w.end()) return;  // a receive took the envelope: its answer completes the send
  Message &m = *it->second;
  if (m.bytes != a.h.bytes || m.tag != a.h.tag) {
    progress::report_malformed("GPU buffered send", a.source, progress::WireError::kBadSize);
    return;
  }
  w.erase(it);
  m.gpu_waiting_on = nullptr;
  // The envelope keeps its place among the unexpected messages, now an
  // eager message with its bytes.
  m.kind = kEager;
  m.keep_payload(a.payload);
  ++g_stats.buffered_kept;
  send_reply(c, a.source, a.h.data_tag, kReplyDone, 0);
}

bool gpu_deliver(P2PComm &c, Request *r, Message &m) {
  MPIX_STAGE(kDeliver);
  const bool gpu_rndv = m.kind == kGpuRendezvous || m.kind == kGpuRendezvousBare;
  if (gpu_rndv) ++g_stats.rendezvous_received;
  if (m.gpu_waiting_on != nullptr) {
    ++g_stats.found_waiting;
    gpu_forget(m);
  }
  const int rdevice = m.bytes > 0 || gpu_rndv ? rbuf_device_of(*r) : -1;
  const Layout l = gpu_rndv || (m.bytes > 0 && rdevice >= 0) ? layout_of(r->dtype, r->count) : Layout{};
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
  op->comm = c.self();
  op->r = r;
  op->source = m.source;
  op->tag = m.tag;
  op->data_tag = m.data_tag;
  op->bytes = static_cast<std::size_t>(m.bytes);
  op->deliver = deliver;
  op->status = status;
  const bool rdev = deliver > 0 && rdevice >= 0;
  if (rdev && !device::compiled_with_cuda()) op->status = error_code(Err::kDeviceBufferNoCuda);
  const bool direct = l.contiguous && m.bytes <= capacity && op->status == MPI_SUCCESS;
  if (direct) {
    op->dst = byte_at(r->rbuf, l.true_lb);
    op->dst_on_device = rdev;
    op->dst_device = rdev ? rdevice : 0;
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
      op->status != error_code(Err::kDeviceBufferNoCuda) && device::compiled_with_cuda()) {
    if (rts.pid == g_pid) {
      peer = reinterpret_cast<void *>(static_cast<std::uintptr_t>(rts.base));  // ourselves: same address space
    } else {
      op->key.host = rts.host;
      op->key.pid = rts.pid;
      op->key.base = rts.base;
      op->key.size = rts.size;
      std::memcpy(op->key.handle, rts.handle, sizeof op->key.handle);
      g_open_device = op->dst_on_device ? op->dst_device : device::current_device();
      MPIX_STAGE(kIpcAcquire);
      if (g_ipc->acquire(op->key, &peer) == 0) op->mapped = true;
      else peer = nullptr;  // a stale mapping lies there (gpu_cache.h), or the open failed: staged
    }
  }
  if (peer != nullptr) {
    op->mode = RecvOp::kIpc;
    char *to = op->packed ? op->packed.get() : op->dst;
    const std::size_t n = op->packed ? op->bytes : deliver;
    const int dev = op->dst_on_device ? op->dst_device : device::current_device();
    const char *from = byte_at(peer, static_cast<MPI_Aint>(rts.offset));
    // Small ones by the resident kernel: a copy-engine job and its event
    // cost more than the copy (device/kernel_copy.h). Into device memory
    // posted and tested later, so that the kernel takes a window of
    // arriving messages in one pickup; into host memory (read out of the
    // kernel's staging) at once. The rest, or where it cannot run, by the
    // copy engines.
    device::Status st = device::Status::kOk;
    if (n > 0) {
      const bool to_host = op->packed || !op->dst_on_device;
      if (to_host) {
        st = device::kernel_copy(to, true, from, false, n, dev);
      } else {
        MPIX_STAGE(kCopyPost);
        st = device::kernel_copy_post(to, from, false, n, dev, &op->ticket);
        if (st == device::Status::kOk) op->kernel_copying = true;
      }
      if (st == device::Status::kDeclined) {
        st = device::copy_async(to, from, n, dev, &op->event);
        if (st == device::Status::kOk) op->copying = true;
      }
    }
    if (st != device::Status::kOk) op->status = cuda_error(st, "IPC copy");
    RecvOp *raw = op.get();
    adopt(std::move(op));
    if (!raw->copying && !raw->kernel_copying) raw->complete();
    return true;
  }

  op->mode = RecvOp::kStage;
  op->plan = plan_chunks(op->bytes, g_config.chunk);
  RecvOp *raw = op.get();
  // Findable by its chunks before the answer that lets them come.
  staging().put(TransferKey{&c, m.source, m.data_tag}, raw);
  raw->registered = true;
  adopt(std::move(op));
  const int rc = send_reply(c, m.source, m.data_tag, kReplyStage, g_config.chunk);
  if (rc != MPI_SUCCESS) {
    raw->status = rc;
    raw->complete();  // no chunk will come
  }
  return true;
}

}  // namespace mpix::p2p
