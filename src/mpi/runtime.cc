#include "runtime.h"

#include <cstdio>
#include <cstdlib>

#include "device/gpu.h"
#include "device/memtype.h"
#include "mpix.h"
#include "progress/single_copy.h"
#include "progress/thread.h"
#include "progress/transport.h"
#include "src/comm_table.h"
#include "src/errors.h"
#include "src/p2p/comms.h"
#include "src/p2p/engine.h"
#include "src/p2p/gpu_path.h"
#include "src/p2p/liveness.h"
#include "src/p2p/region_batch.h"
#include "src/p2p/stage_clock.h"
#include "src/p2p/staged_native.h"

namespace mpix {
namespace {

const char *thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "unknown";
  }
}

void print_configuration(const char *config_errors) {
  const Runtime &rt = runtime_mutable();
  char lib[MPIX_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPIX_Get_library_version(lib, &len);
  std::fprintf(stderr, "[mpix] %s\n", lib);
  std::fprintf(stderr, "[mpix] ranks %d, thread level %s (MPI library: %s)\n", rt.world_size,
               thread_level_name(rt.thread_provided), thread_level_name(rt.thread_underlying));
  const int ngpu = device::device_count();
  const char *provider = progress::transport_provider();
  std::fprintf(stderr, "[mpix] transport: %s%s%s (built: %s)\n", progress::transport_name(),
               provider[0] != '\0' ? ", provider " : "", provider, progress::transports_built());
  std::fprintf(stderr, "[mpix] GPUs visible to rank 0: %d\n", ngpu);
  for (int d = 0; d < ngpu; ++d) {
    char desc[256];
    device::describe(d, desc, sizeof desc);
    std::fprintf(stderr, "[mpix]   GPU %d: %s\n", d, desc);
  }
  config_print(stderr, "[mpix] ");
  if (config_errors[0] != '\0') std::fprintf(stderr, "[mpix] configuration errors:\n%s", config_errors);
  std::fflush(stderr);
}

// MPIX_VERBOSE statistics at MPI_Finalize: the transport's traffic, and one
// line per rank that used an unordered region.
void print_statistics(const char *transport, const progress::TransportStats &t) {
  const Runtime &rt = runtime_mutable();
  if (rt.config.verbose < 1) return;
  if (t.eager_sent + t.rendezvous_sent + t.arrivals > 0)
    std::fprintf(stderr,
                 "[mpix] rank %d: transport %s: eager %llu, rendezvous %llu, arrivals %llu, sync acks %llu, "
                 "copied %llu, credit stalls %llu, out of order %llu, endpoints %llu, shm ring %llu\n",
                 rt.world_rank, transport, static_cast<unsigned long long>(t.eager_sent),
                 static_cast<unsigned long long>(t.rendezvous_sent), static_cast<unsigned long long>(t.arrivals),
                 static_cast<unsigned long long>(t.sync_acks), static_cast<unsigned long long>(t.copied_sends),
                 static_cast<unsigned long long>(t.credit_stalls), static_cast<unsigned long long>(t.out_of_order),
                 static_cast<unsigned long long>(t.endpoints), static_cast<unsigned long long>(t.shm_ring));
  if (const std::uint64_t bad = progress::malformed_messages(); bad > 0)
    std::fprintf(stderr, "[mpix] rank %d: malformed messages dropped %llu\n", rt.world_rank,
                 static_cast<unsigned long long>(bad));
  const p2p::GpuStats g = p2p::gpu_stats();
  if (g.eager + g.ipc + g.staged + g.host_rendezvous > 0)
    std::fprintf(stderr,
                 "[mpix] rank %d: device-buffer sends eager %llu, ipc %llu, staged %llu, host rendezvous %llu; "
                 "pageable staging chunks %llu; kernel copies %llu (launches %llu); buffered after a wait %llu, "
                 "kept %llu; rendezvous received %llu, found waiting %llu\n",
                 rt.world_rank, static_cast<unsigned long long>(g.eager), static_cast<unsigned long long>(g.ipc),
                 static_cast<unsigned long long>(g.staged), static_cast<unsigned long long>(g.host_rendezvous),
                 static_cast<unsigned long long>(g.pageable), static_cast<unsigned long long>(g.kernel_copies),
                 static_cast<unsigned long long>(g.kernel_launches), static_cast<unsigned long long>(g.buffered),
                 static_cast<unsigned long long>(g.buffered_kept),
                 static_cast<unsigned long long>(g.rendezvous_received),
                 static_cast<unsigned long long>(g.found_waiting));
  if (const progress::SingleCopyStats sc = progress::single_copy_stats(); sc.reads + sc.writes + sc.failures > 0)
    std::fprintf(stderr, "[mpix] rank %d: single-copy reads %llu, split parts written %llu (%llu bytes), failed %llu\n",
                 rt.world_rank, static_cast<unsigned long long>(sc.reads),
                 static_cast<unsigned long long>(sc.writes), static_cast<unsigned long long>(sc.bytes),
                 static_cast<unsigned long long>(sc.failures));
  if (const std::uint64_t staged = p2p::staged_operations(); staged > 0)
    std::fprintf(stderr, "[mpix] rank %d: device buffers staged on communicators the MPI library matches %llu\n",
                 rt.world_rank, static_cast<unsigned long long>(staged));
  const StreamStats &st = stream_stats();
  if (st.gpu_run + st.host_driven > 0)
    std::fprintf(stderr,
                 "[mpix] rank %d: stream operations run by the GPU %llu, host-driven %llu (device data staged on "
                 "the stream %llu); GPU-run sends pulled by their receiver %llu\n",
                 rt.world_rank, static_cast<unsigned long long>(st.gpu_run.load()),
                 static_cast<unsigned long long>(st.host_driven.load()),
                 static_cast<unsigned long long>(st.host_staged.load()),
                 static_cast<unsigned long long>(st.pulled.load()));
  if (const progress::EngineMutex::Stats b = p2p::engine_mutex().stats(); b.fast_takes > 0)
    std::fprintf(stderr,
                 "[mpix] rank %d: engine lock taken by the application with a plain store %llu times (biased); "
                 "bias revoked by mpix's threads %llu times, earned back %llu times\n",
                 rt.world_rank, static_cast<unsigned long long>(b.fast_takes),
                 static_cast<unsigned long long>(b.revocations), static_cast<unsigned long long>(b.rebiases));
  if (const p2p::LockWaitStats w = p2p::lock_wait_stats(); w.waits > 0)
    std::fprintf(stderr, "[mpix] rank %d: engine lock found taken %llu times, %.3f ms waited in all (all threads)\n",
                 rt.world_rank, static_cast<unsigned long long>(w.waits), static_cast<double>(w.wait_ns) / 1e6);
  if (const p2p::MatchTotals m = [] { auto lock = p2p::engine_lock(); return p2p::match_totals(); }();
      m.lane_messages + m.lane_marks > 0)
    std::fprintf(stderr, "[mpix] rank %d: lanes: messages %llu, marks %llu\n", rt.world_rank,
                 static_cast<unsigned long long>(m.lane_messages), static_cast<unsigned long long>(m.lane_marks));
  const p2p::RegionBatchStats s = p2p::region_batch_stats();
  if (s.batches == 0 && s.sequential == 0 && s.direct == 0) return;
  std::fprintf(stderr,
               "[mpix] rank %d: region batches %llu (GPU %llu), pairs CPU %llu GPU %llu, sequential %llu, "
               "direct %llu, GPU failures %llu\n",
               rt.world_rank, static_cast<unsigned long long>(s.batches),
               static_cast<unsigned long long>(s.gpu_batches), static_cast<unsigned long long>(s.pairs_cpu),
               static_cast<unsigned long long>(s.pairs_gpu), static_cast<unsigned long long>(s.sequential),
               static_cast<unsigned long long>(s.direct), static_cast<unsigned long long>(s.gpu_errors));
  std::fflush(stderr);
}

// exit() without MPI_Finalize (a program's own early exit, or MPI_Abort,
// which exits): the progress and liveness threads must stop before the
// transports they poll are destroyed (namespace-scope objects, destroyed
// after this handler). The registries they touch are Immortal
// (progress/immortal.h), since a static made after MPI_Init is destroyed
// before this handler runs. Nothing else is torn down: MPI is not finalized.
void stop_threads_at_exit() {
  if (!runtime_active()) return;
  progress::thread_stop();
  p2p::liveness_stop();
}

// MPIX_LANES=auto. One thread gains from a lane what the engine lock and
// request table cost a small message (RESULTS.md, 25th-26th sessions);
// more lanes only give it more rings to poll. Threads need lanes of their
// own to match side by side: 4 carry 4 threads at 4.5x one (the threads
// benchmark), each lane a ring per peer. MPIX_SHM_RING=off asks for every
// message to go through the transport, so no lanes then.
long auto_lanes(const Config &c, int thread_provided) {
  if (!c.shm_ring) return 0;
  return thread_provided == MPI_THREAD_MULTIPLE ? 4 : 1;
}

}  // namespace

bool runtime_wants_thread_multiple() {
  char ignored[8];
  const Config c = config_from_env(ignored, sizeof ignored);
  // auto: always. mpix's communicators need progress while the application
  // blocks in calls mpix does not see (src/p2p/liveness.h), and GPU streams
  // need their progress thread; both call MPI from a thread of their own.
  return c.progress_thread != 0;
}

int runtime_start(int thread_provided, int thread_underlying) {
  Runtime &rt = runtime_mutable();
  char config_errors[1024];
  rt.config = config_from_env(config_errors, sizeof config_errors);
  rt.thread_provided = thread_provided;
  rt.thread_underlying = thread_underlying;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rt.world_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &rt.world_size);

  int rc = errors_init();
  if (rc == MPI_SUCCESS) rc = CommTable::init();
  if (rc != MPI_SUCCESS) return rc;
  p2p::P2PConfig p2p_config;
  p2p_config.eager_limit = static_cast<std::size_t>(rt.config.eager_limit);
  p2p_config.landing_slots = rt.config.landing_slots;
  p2p_config.unexpected_limit = static_cast<std::size_t>(rt.config.unexpected_limit);
  p2p_config.split_min = static_cast<std::size_t>(rt.config.single_copy_split);
  p2p_config.verbose = rt.config.verbose;
  p2p_config.lock_spins = static_cast<int>(rt.config.lock_spins);
  p2p::p2p_configure(p2p_config);
  p2p::region_batch_configure(static_cast<std::size_t>(rt.config.gpu_match_threshold),
                              static_cast<std::size_t>(rt.config.region_batch_min));
  p2p::GpuConfig gpu_config;
  gpu_config.enabled = rt.config.gpu;
  gpu_config.force_staging = rt.config.gpu_force_staging;
  gpu_config.eager_limit = static_cast<std::size_t>(rt.config.gpu_eager_limit);
  gpu_config.chunk = static_cast<std::size_t>(rt.config.gpu_chunk);
  gpu_config.depth = rt.config.gpu_pipeline;
  gpu_config.ipc_cache = static_cast<std::size_t>(rt.config.gpu_ipc_cache);
  gpu_config.pinned_slots = static_cast<std::size_t>(rt.config.gpu_pinned_slots);
  gpu_config.host_ranges = rt.config.gpu_host_ranges;
  gpu_config.kernel_copy = rt.config.gpu_kernel_copy;
  gpu_config.kernel_copy_max = static_cast<std::size_t>(rt.config.gpu_kernel_copy_max);
  gpu_config.kernel_copy_device_max = static_cast<std::size_t>(rt.config.gpu_kernel_copy_device_max);
  gpu_config.kernel_copy_idle_us = static_cast<unsigned>(rt.config.gpu_kernel_copy_idle_us);
  gpu_config.node_eager_limit = static_cast<std::size_t>(rt.config.gpu_node_eager_limit);
  gpu_config.buffer_after_us = static_cast<unsigned>(rt.config.gpu_buffer_after_us);
  p2p::gpu_start(gpu_config);
  progress::TransportConfig transport;
  transport.kind = rt.config.transport;
  transport.ofi_provider = rt.config.ofi_provider;
  transport.eager_limit = p2p_config.eager_limit;
  transport.unexpected_limit = p2p_config.unexpected_limit;
  transport.landing_slots = p2p_config.landing_slots;
  transport.verbose = rt.config.verbose;
  transport.check_links = rt.config.link_check;
  transport.shm_ring = rt.config.shm_ring;
  transport.shm_ring_bytes = static_cast<std::size_t>(rt.config.shm_ring_bytes);
  transport.shm_ring_slot_bytes = static_cast<std::size_t>(rt.config.shm_ring_slot_bytes);
  char why[256];
  rc = progress::transport_start(transport, why, sizeof why);
  if (rc != MPI_SUCCESS) {
    std::fprintf(stderr,
                 "[mpix] rank %d: MPI_Init fails: MPIX_TRANSPORT=%s cannot start (%s); MPIX_TRANSPORT=auto would "
                 "fall back to pmpi\n",
                 rt.world_rank, std::getenv("MPIX_TRANSPORT"), why);
    // MPI_Init fails as MPI functions do: through MPI_COMM_WORLD's handler
    // (fatal by default).
    const int code = error_code(Err::kTransportUnavailable);
    PMPI_Comm_call_errhandler(MPI_COMM_WORLD, code);
    return code;
  }
  if (why[0] != '\0' && rt.config.verbose >= 1 && rt.world_rank == 0)
    std::fprintf(stderr, "[mpix] transport: pmpi (UCX not used: %s)\n", why);
  if (rt.config.lanes < 0) rt.config.lanes = auto_lanes(rt.config, thread_provided);
  p2p::lanes_configure(static_cast<int>(rt.config.lanes), static_cast<unsigned>(rt.config.lane_tag_shift),
                       static_cast<std::size_t>(rt.config.lane_eager_limit));
  progress::single_copy_start(rt.config.single_copy, static_cast<std::size_t>(rt.config.single_copy_min),
                              rt.config.verbose);
  rc = p2p::p2p_start(rt.config.intercept_all);
  if (rc != MPI_SUCCESS) return rc;
  // One application thread at a time calls MPI: the lock can be theirs.
  p2p::engine_mutex().allow_bias(rt.config.lock_bias && thread_provided < MPI_THREAD_MULTIPLE);
  if (thread_underlying == MPI_THREAD_MULTIPLE && rt.config.progress_thread != 0 &&
      !p2p::liveness_start() && rt.world_rank == 0)
    std::fprintf(stderr, "[mpix] warning: no liveness thread (thread creation failed)\n");

  // A malformed variable is a user error worth seeing even when not verbose:
  // the default was used instead of what was asked for.
  if (config_errors[0] != '\0' && rt.world_rank == 0 && rt.config.verbose == 0)
    std::fprintf(stderr, "[mpix] warning: %s", config_errors);
  if (rt.config.verbose >= 1 && rt.world_rank == 0) print_configuration(config_errors);
  if (rt.config.verbose >= 2 && device::memtype_driver_loaded()) {
    char ranges[512];
    device::memtype_host_ranges_describe(ranges, sizeof ranges);
    std::fprintf(stderr, "[mpix] rank %d: memory taken for host memory without asking CUDA: %s\n", rt.world_rank,
                 ranges);
  }
  // atexit handlers run before the destructors of objects made earlier,
  // such as the transports' (namespace-scope, made at load).
  static const bool at_exit = [] { return std::atexit(stop_threads_at_exit) == 0; }();
  (void)at_exit;
  runtime_set_active(true);
  return MPI_SUCCESS;
}

int runtime_stop() {
  runtime_set_active(false);
  // Unbiased from here on: what runs after MPI_Finalize (MPI_T, exit
  // handlers) may come from any thread.
  p2p::engine_mutex().allow_bias(false);
  // First: the progress thread calls into the engine that p2p_stop tears down.
  progress::thread_stop();
  p2p::liveness_stop();
  const char *transport = progress::transport_name();
  p2p::p2p_stop();
  print_statistics(transport, progress::transport_stats());
#ifdef MPIX_STAGE_CLOCK
  p2p::stage_clock::print(runtime_mutable().world_rank);
#endif
  p2p::region_batch_release();
  p2p::gpu_stop();  // after the engine: no transfer uses the pools any more
  CommTable::finalize();
  return MPI_SUCCESS;
}

}  // namespace mpix
