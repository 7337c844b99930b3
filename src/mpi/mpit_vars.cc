#include "mpit_vars.h"

#include <mpi.h>

#include "progress/single_copy.h"
#include "progress/transport.h"
#include "progress/wire.h"
#include "src/p2p/engine.h"
#include "src/p2p/gpu_path.h"
#include "src/p2p/region_batch.h"
#include "src/p2p/staged_native.h"
#include "src/runtime_state.h"

namespace mpix::mpit {
namespace {

constexpr int kCounter = MPI_T_PVAR_CLASS_COUNTER;
constexpr int kLevel = MPI_T_PVAR_CLASS_LEVEL;
constexpr int kHigh = MPI_T_PVAR_CLASS_HIGHWATERMARK;

// Names are lowercase, unlike the MPIX_* control variables: a tool that
// lists both sees at once which are settings and which are measurements.
const Pvar kPvars[] = {
    {"mpix_matches", kCounter,
     "receives matched with messages by mpix's engine on handled communicators (hash-table matcher and "
     "unordered-region batches)",
     &Sample::matches},
    {"mpix_unexpected_depth", kLevel,
     "messages that arrived on handled communicators and wait for a receive, now, all communicators",
     &Sample::unexpected_now},
    {"mpix_posted_depth", kLevel, "receives posted on handled communicators that wait for a message, now",
     &Sample::posted_now},
    {"mpix_unexpected_depth_max", kHigh,
     "deepest unexpected-message queue one handled communicator has had since MPI_Init",
     &Sample::unexpected_max},
    {"mpix_unexpected_inline", kCounter,
     "unexpected messages of at most 8 bytes (eager, not synchronous) kept in the matcher of a no-wildcard "
     "communicator with no record of their own, so that their receive reads one cache line",
     &Sample::unexpected_inline},
    {"mpix_lane_messages", kCounter,
     "messages carried by the lanes of no-wildcard communicators (MPIX_LANES): sent through a lane's ring and "
     "matched under its lock, without the engine lock",
     &Sample::lane_messages},
    {"mpix_lane_marks", kCounter,
     "envelopes of lane communicators that went through the engine (larger, synchronous, derived types, device "
     "memory) and were ordered among their keys' lane messages by a mark",
     &Sample::lane_marks},
    {"mpix_eager_sends", kCounter,
     "messages sent eagerly (envelope and payload together; MPIX_EAGER_LIMIT), every transport",
     &Sample::eager_sent},
    {"mpix_rendezvous_sends", kCounter,
     "messages sent by rendezvous (payload moved after the match), every transport", &Sample::rendezvous_sent},
    {"mpix_arrivals", kCounter, "envelopes that arrived from the transport on handled communicators",
     &Sample::arrivals},
    {"mpix_shm_ring", kCounter,
     "ucx and ofi transports: messages and control frames sent through the shared-memory rings within a node "
     "(MPIX_SHM_RING)",
     &Sample::shm_ring},
    {"mpix_sync_acks", kCounter, "ucx and ofi transports: eager synchronous sends acknowledged at the match",
     &Sample::sync_acks},
    {"mpix_credit_stalls", kCounter,
     "ucx and ofi transports: eager sends turned rendezvous because the receiver held its window of unexpected "
     "data",
     &Sample::credit_stalls},
    {"mpix_region_batches", kCounter, "unordered-region batches matched (CPU and GPU)", &Sample::region_batches},
    {"mpix_region_gpu_batches", kCounter,
     "unordered-region batches matched on the GPU (MPIX_GPU_MATCH_THRESHOLD entries or more)",
     &Sample::region_gpu_batches},
    {"mpix_region_pairs_cpu", kCounter, "pairs matched by unordered-region batches on the CPU",
     &Sample::region_pairs_cpu},
    {"mpix_region_pairs_gpu", kCounter, "pairs matched by unordered-region batches on the GPU",
     &Sample::region_pairs_gpu},
    {"mpix_region_sequential", kCounter,
     "unordered-region entries matched one by one (their key already queued in the matcher)",
     &Sample::region_sequential},
    {"mpix_region_direct", kCounter,
     "unordered-region entries matched at once, the ordered way, because no batch was forming (fewer than "
     "MPIX_REGION_BATCH_MIN messages and receives waiting)",
     &Sample::region_direct},
    {"mpix_gpu_eager", kCounter,
     "device-buffer messages moved eagerly through host memory, counted where a device buffer was sent from or "
     "received into (MPIX_GPU_EAGER_LIMIT)",
     &Sample::gpu_eager},
    {"mpix_gpu_ipc", kCounter, "device-buffer rendezvous sends moved by CUDA IPC (GPUs of one node)",
     &Sample::gpu_ipc},
    {"mpix_gpu_staged", kCounter,
     "device-buffer rendezvous sends staged through host memory in chunks (MPIX_GPU_CHUNK)", &Sample::gpu_staged},
    {"mpix_gpu_host_rendezvous", kCounter, "host-buffer rendezvous messages received into a device buffer",
     &Sample::gpu_host_rendezvous},
    {"mpix_gpu_pageable_chunks", kCounter,
     "staged chunks that went through pageable memory (no pinned slot: MPIX_GPU_PINNED_SLOTS)",
     &Sample::gpu_pageable},
    {"mpix_gpu_kernel_copies", kCounter,
     "small device copies done by the resident copy kernel (MPIX_GPU_KERNEL_COPY)", &Sample::gpu_kernel_copies},
    {"mpix_single_copy_reads", kCounter,
     "messages received by reading the sender's buffer directly (cross-memory attach, MPIX_SINGLE_COPY)",
     &Sample::single_copy_reads},
    {"mpix_single_copy_writes", kCounter,
     "parts of split single-copy messages this process wrote into its receivers' buffers (MPIX_SINGLE_COPY_SPLIT)",
     &Sample::single_copy_writes},
    {"mpix_single_copy_bytes", kCounter, "bytes read or written so", &Sample::single_copy_bytes},
    {"mpix_single_copy_failures", kCounter,
     "single-copy reads that failed (the sender's process gone, or its buffer unmapped): the receive returned "
     "MPI_ERR_OTHER",
     &Sample::single_copy_failures},
    {"mpix_peer_exits", kCounter,
     "ucx and ofi transports: synchronous and single-copy sends failed with MPI_ERR_OTHER because their receiver, "
     "a process of this node, exited before acknowledging",
     &Sample::peer_exits},
    {"mpix_gpu_native_staged", kCounter,
     "device buffers of point-to-point calls on communicators the MPI library matches (not handled by mpix), "
     "staged through host memory: one per send and per receive",
     &Sample::gpu_native_staged},
    {"mpix_stream_ops_gpu", kCounter, "*_enqueue operations run by kernels on the GPU stream",
     &Sample::stream_gpu_run},
    {"mpix_stream_sends_pulled", kCounter,
     "blocking *_enqueue sends run by kernels whose receiver copied straight from the send buffer (one copy)",
     &Sample::stream_pulled},
    {"mpix_stream_ops_host", kCounter, "*_enqueue operations driven by the host progress thread",
     &Sample::stream_host_driven},
    {"mpix_malformed_dropped", kCounter,
     "messages from peers dropped because their envelope or descriptor did not decode", &Sample::malformed},
    {"mpix_lock_fast_takes", kCounter,
     "engine-lock acquisitions by the application with a plain store: the lock biased to the application below "
     "MPI_THREAD_MULTIPLE (MPIX_LOCK_BIAS)",
     &Sample::lock_fast_takes},
    {"mpix_lock_revocations", kCounter,
     "times mpix's own threads (liveness, progress) took the engine lock's bias from the application "
     "(MPIX_LOCK_BIAS)",
     &Sample::lock_revocations},
};

}  // namespace

const Pvar *pvars(int *n) {
  *n = static_cast<int>(sizeof(kPvars) / sizeof(kPvars[0]));
  return kPvars;
}

Sample sample_now() {
  Sample s{};
  // The counters are written under the engine lock (by the application's
  // calls, the liveness thread and the progress thread): read them there.
  // Any thread may read (MPI_T's thread level is its own): never the
  // application's side of the biased lock.
  const progress::InternalSide side;
  auto lock = p2p::engine_lock();
  const p2p::MatchTotals m = p2p::match_totals();
  const progress::TransportStats t = progress::transport_stats();
  const p2p::RegionBatchStats r = p2p::region_batch_stats();
  const p2p::GpuStats g = p2p::gpu_stats();
  const progress::EngineMutex::Stats b = p2p::engine_mutex().stats();
  lock.unlock();
  s.matches = m.matches + r.pairs_cpu + r.pairs_gpu;
  s.unexpected_now = m.unexpected_now;
  s.posted_now = m.posted_now;
  s.unexpected_max = m.unexpected_max;
  s.unexpected_inline = m.unexpected_inline;
  s.lane_messages = m.lane_messages;
  s.lane_marks = m.lane_marks;
  s.eager_sent = t.eager_sent;
  s.rendezvous_sent = t.rendezvous_sent;
  s.arrivals = t.arrivals;
  s.sync_acks = t.sync_acks;
  s.shm_ring = t.shm_ring;
  s.credit_stalls = t.credit_stalls;
  s.region_batches = r.batches;
  s.region_gpu_batches = r.gpu_batches;
  s.region_pairs_cpu = r.pairs_cpu;
  s.region_pairs_gpu = r.pairs_gpu;
  s.region_sequential = r.sequential;
  s.region_direct = r.direct;
  s.gpu_eager = g.eager;
  s.gpu_ipc = g.ipc;
  s.gpu_staged = g.staged;
  s.gpu_host_rendezvous = g.host_rendezvous;
  s.gpu_pageable = g.pageable;
  s.gpu_kernel_copies = g.kernel_copies;
  s.gpu_native_staged = p2p::staged_operations();
  s.single_copy_reads = progress::single_copy_stats().reads;
  s.single_copy_writes = progress::single_copy_stats().writes;
  s.single_copy_bytes = progress::single_copy_stats().bytes;
  s.single_copy_failures = progress::single_copy_stats().failures;
  s.peer_exits = t.peer_exits;
  s.stream_gpu_run = stream_stats().gpu_run.load(std::memory_order_relaxed);
  s.stream_host_driven = stream_stats().host_driven.load(std::memory_order_relaxed);
  s.stream_pulled = stream_stats().pulled.load(std::memory_order_relaxed);
  s.malformed = progress::malformed_messages();
  s.lock_fast_takes = b.fast_takes;
  s.lock_revocations = b.revocations;
  return s;
}

const char *class_name(int var_class) {
  switch (var_class) {
    case kCounter: return "counter";
    case kLevel: return "level";
    case kHigh: return "highwatermark";
    default: return "?";
  }
}

}  // namespace mpix::mpit
