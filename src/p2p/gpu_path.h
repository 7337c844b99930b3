// GPU-aware point-to-point: device buffers in any point-to-point call on a
// handled communicator, over an MPI library that is not CUDA-aware.
//
// The engine (engine.cc) calls the hooks below; the protocols live in
// gpu_send.cc (sender) and gpu_recv.cc (receiver), their shared state in
// gpu_ops.h, start-up and progress in gpu_path.cc, the CUDA work in device/
// (memtype: where a buffer lives, classified once per call; copy, ipc and
// kernel_copy: the copies).
//
// Protocols (S: send buffer, R: receive buffer):
// - S on the device, to a process of this node, from memory CUDA IPC maps:
//   a GPU rendezvous above MPIX_GPU_NODE_EAGER_LIMIT (default 0: every
//   size). The
//   envelope (kind kGpuRendezvous) carries a GpuRts: the sender's node,
//   process, allocation base and size, offset and CUDA-IPC handle. The
//   receiver, once matched, maps the allocation (cached) and copies from it
//   into R (host or device): small copies by the resident copy kernel
//   (device/kernel_copy.h; into device memory posted without waiting, so
//   that a window of arrivals costs the kernel one pickup), larger ones by
//   the copy engines; then answers "done" (kGpuReply, through the
//   transport). A send of at most MPIX_GPU_EAGER_LIMIT bytes that no receive
//   took within MPIX_GPU_BUFFER_AFTER_US sends its bytes after the
//   envelope (kGpuBuffered), and the receiver, if the envelope is still
//   unexpected, keeps them as an eager message in its place and answers
//   "done": such a send completes without its receive, as an eager one.
// - S on the device, otherwise: small (<= MPIX_GPU_EAGER_LIMIT, not
//   synchronous) copied to host memory and sent as an ordinary eager
//   message; larger or synchronous ones by GPU rendezvous, which a
//   receiver on another node answers "stage" with a chunk size: the sender
//   streams the data as chunks through pinned buffers (D2H of chunk k+1
//   overlapping the PMPI send of chunk k; on the receiver PMPI receives
//   overlap H2D copies). The answer ("done" or "stage") goes back through
//   the transport, in band (kGpuReply, naming the data tag), and the chunks
//   go as the transport's rendezvous messages (kFlagGpuChunk, same data
//   tag, never matched), which the receiver pulls in arrival order into its
//   pinned slots: UCX, libfabric or PMPI carry them like any message.
// - S on the host, R on the device: the engine's protocols unchanged; the
//   receiver lands the bytes in host memory and copies them up.
// - Non-contiguous datatypes on the device: the sender copies the buffer's
//   extent down and packs it on the host; the receiver unpacks into a host
//   image of the extent (read back first, so gaps keep their contents) and
//   copies it up.
//
// IPC safety: a mapping is keyed by (sender node, process, base, handle);
// a freed and reallocated buffer comes with a new handle, so a stale mapping
// is never used. A mapping keeps the sender's freed memory allocated until
// the receiver closes it: the cache is LRU-bounded (MPIX_GPU_IPC_CACHE; 0
// closes after each transfer) and emptied at MPI_Finalize. While a mapping
// of freed memory is open, the driver may refuse to map a new allocation at
// its addresses: the GpuRts carries the allocation's size, and an
// allocation that overlaps a cached mapping of its sender is staged without
// trying (gpu_cache.h says why the stale mapping is not closed instead).
//
// Without CUDA (--without-cuda, or no libcuda at run time) device memory
// cannot exist unless the application itself loaded the driver: then a
// device buffer is rejected with MPIX_ERR_NO_CUDA instead of crashing.
#ifndef MPIX_SRC_P2P_GPU_PATH_H
#define MPIX_SRC_P2P_GPU_PATH_H

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "device/memtype.h"
#include "progress/transport.h"
#include "request.h"

namespace mpix::p2p {

class P2PComm;
struct Message;

// Set at MPI_Init from mpix::Config (defaults: src/config.cc alone).
struct GpuConfig {
  bool enabled = false;        // MPIX_GPU
  bool force_staging = false;  // MPIX_GPU_PATH=staging
  std::size_t eager_limit = 0;  // MPIX_GPU_EAGER_LIMIT (capped by MPIX_EAGER_LIMIT)
  std::size_t chunk = 0;        // MPIX_GPU_CHUNK
  int depth = 0;                // MPIX_GPU_PIPELINE
  std::size_t ipc_cache = 0;    // MPIX_GPU_IPC_CACHE
  std::size_t pinned_slots = 0;  // MPIX_GPU_PINNED_SLOTS (0: no cap)
  bool host_ranges = true;           // MPIX_GPU_HOST_RANGES
  bool kernel_copy = false;          // MPIX_GPU_KERNEL_COPY
  std::size_t kernel_copy_max = 0;   // MPIX_GPU_KERNEL_COPY_MAX
  std::size_t kernel_copy_device_max = 0;  // MPIX_GPU_KERNEL_COPY_DEVICE_MAX
  unsigned kernel_copy_idle_us = 0;  // MPIX_GPU_KERNEL_COPY_IDLE_US
  std::size_t node_eager_limit = 0;  // MPIX_GPU_NODE_EAGER_LIMIT
  unsigned buffer_after_us = 0;      // MPIX_GPU_BUFFER_AFTER_US
};

// MPI_Init (after p2p_configure) and MPI_Finalize.
void gpu_start(const GpuConfig &config);
void gpu_stop();
const GpuConfig &gpu_config();

// Hooks of the engine. Each returns false, at the cost of one driver query,
// when no device memory is involved.
// P2PComm::transmit: sends from a device buffer; *rc is the MPI error code.
// Inline up to the driver check: a process without the CUDA driver has no
// device memory, and its host sends skip the call into the GPU path (its
// large frame was ~10% of an 8 B streaming sender's samples).
bool gpu_transmit_maybe_device(P2PComm &c, const void *buf, int count, MPI_Datatype dtype, int dest, int tag,
                               SendMode mode, Request *r, progress::EngineLock *lock, int *rc);
inline bool gpu_transmit(P2PComm &c, const void *buf, int count, MPI_Datatype dtype, int dest, int tag,
                         SendMode mode, Request *r, progress::EngineLock *lock, int *rc) {
  if (count == 0 || !device::memtype_driver_loaded()) return false;
  return gpu_transmit_maybe_device(c, buf, count, dtype, dest, tag, mode, r, lock, rc);
}
// P2PComm::deliver: a GPU rendezvous, or any message for a device buffer.
bool gpu_deliver(P2PComm &c, Request *r, Message &m);
// P2PComm::keep_arrival: an unexpected GPU rendezvous keeps its
// descriptor, and can be found by a kGpuBuffered arrival.
void gpu_keep_descriptor(P2PComm &c, Message &m);
// P2PComm::arrived: true (and taken) when the arrival belongs to a GPU
// transfer in flight and is never matched: a kGpuBuffered (the bytes of a
// rendezvous that waited: its envelope, if still unexpected, becomes an
// eager message), a kGpuReply (the answer to one of our sends), a chunk of
// a staged rendezvous (kRendezvous with kFlagGpuChunk: pulled by its
// receive or discarded).
// Inline: every arrival asks, and eager messages (most of them) never are.
bool gpu_control_arrival_of_kind(P2PComm &c, const progress::Arrival &a);
inline bool gpu_control_arrival(P2PComm &c, const progress::Arrival &a) {
  return a.h.kind != progress::kEager && gpu_control_arrival_of_kind(c, a);
}
// A Message so found is being destroyed (or delivered).
void gpu_forget(Message &m);
// progress_poll(): advances copies and pipelines; events handled.
int gpu_progress();
// Whether GPU transfers are in flight (no lock needed): a matched one still
// needs this process's progress (the receiver's replies, the sender's
// chunks), so the liveness thread polls while there are.
bool gpu_busy();
// Whether the liveness thread should poll now and then even with nothing
// pending here: small device sends within a node go by rendezvous and
// complete, when no receive takes them, only once this process reads the
// bytes they send after a wait (MPIX_GPU_BUFFER_AFTER_US), which it may
// be blocked elsewhere for (no lock needed).
bool gpu_wants_idle_polls();

// Counters (tests, MPIX_VERBOSE): transfers per path.
struct GpuStats {
  std::uint64_t eager = 0, ipc = 0, staged = 0, host_rendezvous = 0;
  std::uint64_t pageable = 0;  // staged chunks through pageable memory (no pinned slot)
  std::uint64_t kernel_copies = 0, kernel_launches = 0;  // device/kernel_copy.h
  // Rendezvous sends whose bytes followed after MPIX_GPU_BUFFER_AFTER_US
  // (sender), and such bytes kept as unexpected eager messages (receiver).
  std::uint64_t buffered = 0, buffered_kept = 0;
  // GPU rendezvous envelopes taken by receives (receiver), and those of them
  // that had arrived before their receive was posted: a receiver that falls
  // behind its sender takes the costlier path of an unexpected message.
  std::uint64_t rendezvous_received = 0, found_waiting = 0;
};
GpuStats gpu_stats();

}  // namespace mpix::p2p

#endif
