#include "gpu_path.h"

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

GpuConfig g_config;
GpuStats g_stats;
std::uint64_t g_host = 0;
std::int32_t g_pid = 0;
std::unique_ptr<SlotPool> g_send_slots, g_recv_slots;
std::unique_ptr<IpcCache> g_ipc;
std::chrono::steady_clock::time_point g_poll_now;

namespace {

std::vector<std::unique_ptr<Op>> &ops() {
  static Immortal<std::vector<std::unique_ptr<Op>>> v;
  return v.get();
}

// How many GPU transfers are in flight, for the liveness thread, which
// reads it without the engine lock.
std::atomic<std::size_t> g_ops_in_flight{0};

}  // namespace

int send_reply(P2PComm &c, int dest, int data_tag, std::uint32_t mode, std::uint64_t chunk) {
  GpuReply reply{};
  reply.mode = mode;
  reply.chunk = chunk;
  const WireHeader h{0, progress::kGpuReply, sizeof reply, data_tag, 0};
  return GpuAccess::send_envelope(c, dest, h, &reply, sizeof reply);
}

void PieceDone::on_complete(const MPI_Status &st) {
  --piece->op->outstanding;
  if (st.MPI_ERROR != MPI_SUCCESS) piece->error = st.MPI_ERROR;
  piece->state = Piece::kLanded;
}

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

Op *adopt(std::unique_ptr<Op> op) {
  ops().push_back(std::move(op));
  g_ops_in_flight.store(ops().size(), std::memory_order_relaxed);
  return ops().back().get();
}

}  // namespace gpu_detail

using namespace gpu_detail;

void gpu_start(const GpuConfig &config) {
  g_config = config;
  if (g_config.depth < 1) g_config.depth = 1;
  // Within what a reply may ask for (decode_gpu_reply).
  g_config.chunk = std::clamp<std::size_t>(g_config.chunk, kMinChunk, kMaxChunk);
  device::memtype_init(config.enabled, config.host_ranges);
  device::KernelCopyConfig kc;
  kc.enabled = config.enabled && config.kernel_copy;
  kc.max_bytes = config.kernel_copy_max;
  kc.device_max = config.kernel_copy_device_max;
  kc.idle_us = config.kernel_copy_idle_us;
  device::kernel_copy_configure(kc);
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
  free_bounce_buffer();
  clear_exported();
  clear_waiting_sends();
  clear_staging_receives();
  // Without the driver nothing was ever created: touch no CUDA.
  if (device::memtype_driver_loaded()) {
    device::kernel_copy_finalize();
    device::copy_finalize();
  }
}

const GpuConfig &gpu_config() { return g_config; }
GpuStats gpu_stats() {
  GpuStats s = g_stats;
  const device::KernelCopyStats k = device::kernel_copy_stats();
  s.kernel_copies = k.copies;
  s.kernel_launches = k.launches;
  return s;
}

int gpu_progress() {
  auto &v = ops();
  if (v.empty()) return 0;
  MPIX_STAGE(kGpuProgress);
  int events = 0;
  g_poll_now = std::chrono::steady_clock::now();
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

bool gpu_control_arrival_of_kind(P2PComm &c, const progress::Arrival &a) {
  if (a.h.kind == progress::kGpuBuffered) buffered_arrival(c, a);
  else if (a.h.kind == progress::kGpuReply) reply_arrival(c, a);
  else if (a.h.kind == progress::kRendezvous && (a.h.flags & progress::kFlagGpuChunk) != 0) chunk_arrival(c, a);
  else return false;
  return true;
}

bool gpu_wants_idle_polls() {
  return g_config.enabled && g_config.node_eager_limit < g_config.eager_limit && device::memtype_driver_loaded();
}

bool gpu_busy() { return g_ops_in_flight.load(std::memory_order_relaxed) > 0; }

}  // namespace mpix::p2p
