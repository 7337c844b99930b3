// GPU-aware point-to-point: device buffers in any point-to-point call on a
// handled communicator, over an MPI library that is not CUDA-aware.
//
// The engine (engine.cc) calls four hooks; everything else lives here and
// in device/ (memtype: where a buffer lives; copy/ipc: the CUDA work).
//
// Protocols (S: send buffer, R: receive buffer):
// - S on the device, small (<= eager limit, not synchronous): copied to
//   pinned host memory and sent as an ordinary eager message.
// - S on the device, larger or synchronous: a GPU rendezvous. The envelope
//   (kind kGpuRendezvous) carries a GpuRts: the sender's node, process,
//   allocation base and size, offset and CUDA-IPC handle. The receiver,
//   once matched, either maps the allocation (cached) and copies from it
//   with the copy engines into R (host or device), then answers "done"; or
//   answers "stage" with a chunk size, and the sender streams the data as
//   chunks through pinned buffers (D2H of chunk k+1 overlapping the PMPI
//   send of chunk k; on the receiver PMPI receives overlap H2D copies). The
//   answer goes back on the control shadow under tag 1 + (data_tag mod
//   tag_ub), which no other message uses; chunks go on the data shadow
//   under data_tag.
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
};

// MPI_Init (after p2p_configure) and MPI_Finalize.
void gpu_start(const GpuConfig &config);
void gpu_stop();
const GpuConfig &gpu_config();

// Hooks of the engine. Each returns false, at the cost of one driver query,
// when no device memory is involved.
// P2PComm::transmit: sends from a device buffer; *rc is the MPI error code.
bool gpu_transmit(P2PComm &c, const void *buf, int count, MPI_Datatype dtype, int dest, int tag, SendMode mode,
                  Request *r, std::unique_lock<std::mutex> *lock, int *rc);
// P2PComm::deliver: a GPU rendezvous, or any message for a device buffer.
bool gpu_deliver(P2PComm &c, Request *r, Message &m);
// P2PComm::on_arrival: an unexpected GPU rendezvous keeps its descriptor.
void gpu_keep_descriptor(Message &m);
// progress_poll(): advances copies and pipelines; events handled.
int gpu_progress();
// Whether GPU transfers are in flight (no lock needed): a matched one still
// needs this process's progress (the receiver's replies, the sender's
// chunks), so the liveness thread polls while there are.
bool gpu_busy();

// Counters (tests, MPIX_VERBOSE): transfers per path.
struct GpuStats {
  std::uint64_t eager = 0, ipc = 0, staged = 0, host_rendezvous = 0;
  std::uint64_t pageable = 0;  // staged chunks through pageable memory (no pinned slot)
};
GpuStats gpu_stats();

}  // namespace mpix::p2p

#endif
