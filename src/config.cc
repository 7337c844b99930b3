#include "config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace mpix {
namespace {

// The value in force as MPI_T shows it (ConfigVar::value).
ConfigValue num(long v) { return ConfigValue{false, v, nullptr}; }
ConfigValue word(const char *w) { return ConfigValue{true, 0, w}; }

const ConfigVar kVars[] = {
    {"MPIX_VERBOSE", "0",
     "0: silent; 1: print the configuration at MPI_Init on rank 0; 2: also per-rank details",
     [](const Config &c) { return num(c.verbose); }},
    {"MPIX_INTERCEPT", "none",
     "none: only communicators with no-wildcard assertions use mpix's engine; all: every communicator does "
     "(full MPI semantics, wildcards included)",
     [](const Config &c) { return word(c.intercept_all ? "all" : "none"); }},
    {"MPIX_TRANSPORT", "auto",
     "what carries handled communicators' messages: ucx (UCP active messages, rendezvous by UCX; needs the "
     "UCX transport built and usable on every rank), ofi (libfabric messages, rendezvous by fi_read; needs the "
     "libfabric transport built and a provider usable on every rank: MPIX_OFI_PROVIDER), pmpi (the MPI library "
     "underneath, a second time), auto (ucx when usable, else pmpi); an explicitly named transport that cannot "
     "start fails MPI_Init",
     [](const Config &c) {
       return word(c.transport == 1 ? "pmpi" : c.transport == 2 ? "ucx" : c.transport == 3 ? "ofi" : "auto");
     }},
    {"MPIX_OFI_PROVIDER", "auto",
     "the libfabric provider of MPIX_TRANSPORT=ofi, as fi_info names it (shm, tcp, tcp;ofi_rxm, verbs;ofi_rxm, "
     "efa, cxi...; a core provider alone matches it under a utility one); auto: shm when every rank is on one "
     "node, else the first network provider libfabric offers (FI_PROVIDER, libfabric's own variable, filters "
     "what it offers, for the MPI library too where it uses libfabric)",
     [](const Config &c) { return word(c.ofi_provider); }},
    {"MPIX_EAGER_LIMIT", "16384",
     "largest message (bytes) sent eagerly with its envelope; larger ones use rendezvous",
     [](const Config &c) { return num(c.eager_limit); }},
    {"MPIX_LANDING_SLOTS", "16",
     "pre-posted landing receives per handled communicator (each MPIX_EAGER_LIMIT bytes)",
     [](const Config &c) { return num(c.landing_slots); }},
    {"MPIX_UNEXPECTED_LIMIT", "67108864",
     "unexpected eager bytes held per communicator before new messages are left in the MPI library's queue "
     "(back-pressure; a waiting receive always pulls more)",
     [](const Config &c) { return num(c.unexpected_limit); }},
    {"MPIX_PROGRESS_THREAD", "auto",
     "auto or 1: initialise the MPI library at MPI_THREAD_MULTIPLE (the application still sees its own level) "
     "so that a progress thread drives GPU streams and keeps mpix's communicators moving while the application "
     "blocks in calls mpix does not intercept; 0: only when the application asks for MPI_THREAD_MULTIPLE (then "
     "a program that blocks in, e.g., MPI_Barrier while its peer waits in MPI_Ssend for a receive it posted "
     "may hang)",
     [](const Config &c) { return word(c.progress_thread < 0 ? "auto" : c.progress_thread == 0 ? "0" : "1"); }},
    {"MPIX_STREAM_QUEUE_DEPTH", "1024",
     "operations enqueued on one GPU stream and not yet triggered by it; a further *_enqueue waits for room",
     [](const Config &c) { return num(c.stream_queue_depth); }},
    {"MPIX_STREAM_PATH", "auto",
     "who runs the *_enqueue operations of a GPU stream communicator: auto: kernels on the stream itself move "
     "the data through CUDA-IPC mailboxes when every rank is on this node with a GPU stream (no host on the "
     "path; host MPI_Send/MPI_Recv on that communicator are refused), else the host-driven path; host: always "
     "the host-driven path (the progress thread, MPI underneath; host calls match enqueued ones)",
     [](const Config &c) { return word(c.stream_host_path ? "host" : "auto"); }},
    {"MPIX_STREAM_WIDE_BLOCKS", "64",
     "kernel path of *_enqueue: thread blocks that move one large message (at least two 256 KiB chunks) on "
     "each side; a stream communicator's ring holds as many chunks per channel (at least 16)",
     [](const Config &c) { return num(c.stream_wide_blocks); }},
    {"MPIX_GPU", "on",
     "on: device buffers in point-to-point calls are recognised (one CUDA driver query per send and delivery); "
     "off: every buffer is taken for host memory (no query)",
     [](const Config &c) { return word(c.gpu ? "on" : "off"); }},
    {"MPIX_GPU_PATH", "auto",
     "auto: device data between GPUs of one node moves by CUDA IPC, otherwise staged through pinned host "
     "memory; staging: always staged (testing, or where IPC is unwanted)",
     [](const Config &c) { return word(c.gpu_force_staging ? "staging" : "auto"); }},
    {"MPIX_GPU_EAGER_LIMIT", "8192",
     "device-buffer sends up to this many bytes (and at most MPIX_EAGER_LIMIT) go as eager messages through a "
     "pinned bounce buffer; larger ones by GPU rendezvous (CUDA IPC within a node: one copy, no host bounce)",
     [](const Config &c) { return num(c.gpu_eager_limit); }},
    {"MPIX_GPU_NODE_EAGER_LIMIT", "8192",
     "device-buffer sends to a process of this node, from a buffer CUDA IPC can map, go eagerly (two copies "
     "through host memory) only up to this size (and MPIX_GPU_EAGER_LIMIT); larger ones by GPU rendezvous: the "
     "receiver's GPU copies from the sender's buffer, one copy. 0 (experimental) is faster at every size (6 "
     "against 10 us at 8 B on two H200s, bench/RESULTS.md); such a send of at most MPIX_GPU_EAGER_LIMIT bytes "
     "still completes without its receive (MPIX_GPU_BUFFER_AFTER_US), but the device proxy path "
     "(MPIX_DEVICE_PATH=proxy) hung with it (mpix_gpu(7), BUGS)",
     [](const Config &c) { return num(c.gpu_node_eager_limit); }},
    {"MPIX_GPU_BUFFER_AFTER_US", "1000",
     "a device-buffer send of at most MPIX_GPU_EAGER_LIMIT bytes sent by rendezvous (not synchronous) that no "
     "receive has taken after this many microseconds sends its bytes after its envelope and completes once the "
     "receiver kept them, as an eager send would (two blocking sends facing each other then finish)",
     [](const Config &c) { return num(c.gpu_buffer_after_us); }},
    {"MPIX_GPU_CHUNK", "4194304",
     "bytes per chunk of the staged device-data pipeline (and size of each pinned staging buffer)",
     [](const Config &c) { return num(c.gpu_chunk); }},
    {"MPIX_GPU_PIPELINE", "4", "chunks of one staged transfer in flight at once (copy/network overlap)",
     [](const Config &c) { return num(c.gpu_pipeline); }},
    {"MPIX_GPU_PINNED_SLOTS", "0",
     "pinned staging buffers (MPIX_GPU_CHUNK bytes each) a rank may allocate per direction; 0: as many as the "
     "transfers in flight need. Beyond it, or when pinning fails, chunks are staged through pageable memory "
     "(slower, still correct)",
     [](const Config &c) { return num(c.gpu_pinned_slots); }},
    {"MPIX_GPU_IPC_CACHE", "256",
     "peer GPU allocations kept mapped by CUDA IPC (least recently used closed beyond; 0: close after each "
     "transfer). A mapping keeps the sender's freed memory allocated until closed",
     [](const Config &c) { return num(c.gpu_ipc_cache); }},
    {"MPIX_GPU_KERNEL_COPY", "on",
     "on: small copies of device-buffer messages (the eager path's device-to-host and host-to-device copies, up "
     "to MPIX_GPU_KERNEL_COPY_MAX) are done by a resident kernel of one thread block per GPU fed through pinned "
     "host memory, without a launch or copy-engine job each; off: by cudaMemcpyAsync and a synchronisation",
     [](const Config &c) { return word(c.gpu_kernel_copy ? "on" : "off"); }},
    {"MPIX_GPU_KERNEL_COPY_MAX", "8192",
     "largest copy the resident kernel takes (larger ones go to the copy engines); its pinned staging is 64 "
     "times this per GPU",
     [](const Config &c) { return num(c.gpu_kernel_copy_max); }},
    {"MPIX_GPU_KERNEL_COPY_DEVICE_MAX", "65536",
     "largest device-to-device copy the resident kernel takes: the receiver's copy of a GPU rendezvous by CUDA "
     "IPC (the sender's buffer mapped here) up to this size; larger ones go to the copy engines",
     [](const Config &c) { return num(c.gpu_kernel_copy_device_max); }},
    {"MPIX_GPU_KERNEL_COPY_IDLE_US", "100",
     "microseconds without a copy after which the resident kernel exits (the next copy starts it again, one "
     "launch); an application's cudaDeviceSynchronize or cudaFree waits at most this long for it",
     [](const Config &c) { return num(c.gpu_kernel_copy_idle_us); }},
    {"MPIX_GPU_MATCH_THRESHOLD", "131072",
     "entries (arrivals + receives) from which an unordered region's batch is matched on the GPU instead of the "
     "CPU (measured crossover on an H200: bench/RESULTS.md); 0: never on the GPU",
     [](const Config &c) { return num(c.gpu_match_threshold); }},
    {"MPIX_DEVICE_PATH", "auto",
     "device-callable send/recv: auto: GPU to GPU through CUDA-IPC mailboxes when every rank of the "
     "communicator is on this node, else the proxy path; proxy: always through the progress thread and MPI "
     "(host MPI calls then match device calls)",
     [](const Config &c) { return word(c.device_proxy ? "proxy" : "auto"); }},
    {"MPIX_DEVICE_TABLE", "8192",
     "device send/recv: message-table buckets per source (8 messages each) in the receiver's GPU memory; a "
     "full table makes sends wait",
     [](const Config &c) { return num(c.device_table); }},
    {"MPIX_DEVICE_KEYS", "65536",
     "device send/recv: distinct (peer, tag) pairs with tags from 4096 on that a device handle can number on "
     "each side (smaller tags have counters of their own); beyond them calls return MPIX_DEVICE_ERR_KEYS",
     [](const Config &c) { return num(c.device_keys); }},
    {"MPIX_DEVICE_LANE_TAGS", "64",
     "device send/recv: tags below this have lanes: 8 messages of each (peer, tag) in flight, each in a cell of "
     "its own, which costs a send one atomic instead of two (lower latency); larger tags use the table "
     "(thousands in flight); 0: no lanes. Stream communicators have none",
     [](const Config &c) { return num(c.device_lane_tags); }},
    {"MPIX_DEVICE_CHANNELS", "32",
     "device send/recv: payload rings per source (a tag's messages above 32 bytes use ring hash(tag))",
     [](const Config &c) { return num(c.device_channels); }},
    {"MPIX_DEVICE_RING", "64", "device send/recv: staging blocks per payload ring",
     [](const Config &c) { return num(c.device_ring); }},
    {"MPIX_DEVICE_SLOT_BYTES", "16384", "device send/recv: bytes per staging block (a multiple of 256)",
     [](const Config &c) { return num(c.device_slot_bytes); }},
    {"MPIX_DEVICE_PROXY_QUEUE", "4096",
     "device send/recv, proxy path: descriptors in the queue to the progress thread; size it above the receives "
     "a rank keeps outstanding",
     [](const Config &c) { return num(c.device_proxy_queue); }},
    {"MPIX_DEVICE_PROXY_INLINE", "256",
     "device send/recv, proxy path: messages up to this many bytes go through a bounce buffer per descriptor",
     [](const Config &c) { return num(c.device_proxy_inline); }},
    {"MPIX_DEVICE_FAR_CELLS", "1",
     "device send/recv: 1: messages of at most 8 bytes to a peer on another GPU go as one 16-byte atomic into "
     "its table, like those to peers on the same GPU, where the link carries native atomics; 0 (and links "
     "without them): as a table entry published by a release store",
     [](const Config &c) { return num(c.device_far_cells); }},
    {"MPIX_DEVICE_PROXY_HOSTMEM", "0",
     "1: the proxy queue in plain host memory (host threads post: tests without a GPU)",
     [](const Config &c) { return num(c.device_proxy_hostmem); }},
    {"MPIX_SINGLE_COPY", "auto",
     "auto: messages of at least MPIX_SINGLE_COPY_MIN bytes between processes of one node are read by the receiver straight "
     "from the sender's buffer (Linux cross-memory attach: one copy; used where every process can read its "
     "neighbour's memory, which ptrace rules decide); off: through the transport's rendezvous",
     [](const Config &c) { return word(c.single_copy ? "auto" : "off"); }},
    {"MPIX_SINGLE_COPY_MIN", "16385",
     "smallest message (bytes) that goes single-copy within a node (MPIX_SINGLE_COPY), below MPIX_EAGER_LIMIT "
     "too; smaller ones go eagerly (through the shared-memory rings: faster than single copy up to the eager "
     "limit, bench/RESULTS.md)",
     [](const Config &c) { return num(c.single_copy_min); }},
    {"MPIX_SHM_RING", "on",
     "ucx and ofi transports: on: eager messages up to a quarter of a ring and control frames between processes "
     "of one node go through single-producer rings in shared memory (one per pair); off: all through the "
     "transport",
     [](const Config &c) { return word(c.shm_ring ? "on" : "off"); }},
    {"MPIX_SHM_RING_BYTES", "262144",
     "bytes of each ring (MPIX_SHM_RING), from one process to another of its node; less where a process's rings "
     "from all the others would exceed 32 MiB. A message takes at most a quarter of its ring",
     [](const Config &c) { return num(c.shm_ring_bytes); }},
    {"MPIX_SHM_RING_SLOT_BYTES", "256",
     "bytes of a ring slot (MPIX_SHM_RING), a multiple of 64: a message takes as many consecutive slots as its "
     "16-byte head, 56-byte envelope and payload need",
     [](const Config &c) { return num(c.shm_ring_slot_bytes); }},
    {"MPIX_LINK_CHECK", "off",
     "testing: defer: every eager send handed to the transport with a completion is held and its payload read "
     "only at the next progress step, so code that reuses a send's memory before the send completed sends "
     "wrong bytes every time instead of under load only; off: sends go straight to the transport",
     [](const Config &c) { return word(c.link_check ? "defer" : "off"); }},
};

template <class T>
bool parse_int(const char *s, long lo, long hi, T *out) {
  char *end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<T>(v);
  return true;
}

// A power of two in [lo, hi] (a value in range is rounded down to one).
bool parse_pow2(const char *s, long lo, long hi, long *out) {
  long x = 0;
  if (!parse_int(s, lo, hi, &x)) return false;
  long p = 1;
  while (p * 2 <= x) p *= 2;
  *out = p;
  return true;
}

// A libfabric provider name as fi_info prints it ("tcp;ofi_rxm"). The
// pointer is kept: the environment's strings and the table's defaults
// outlive every Config.
bool parse_provider(const char *s, const char **out) {
  const std::size_t n = std::strlen(s);
  if (n == 0 || n > 31) return false;
  for (const char *p = s; *p != '\0'; ++p)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == ';')) return false;
  *out = s;
  return true;
}

// One of the words, by index into `values` (same length).
template <class T>
bool parse_word(const char *s, std::initializer_list<const char *> words, std::initializer_list<T> values, T *out) {
  auto v = values.begin();
  for (const char *w : words) {
    if (std::strcmp(s, w) == 0) {
      *out = *v;
      return true;
    }
    ++v;
  }
  return false;
}

class Reader {
 public:
  Reader(char *errors, int errors_len) : errors_(errors), len_(errors_len) {
    if (len_ > 0) errors_[0] = '\0';
  }

  // Parses the variable's value in force: the environment's, else the
  // table's default, so that every default lives in kVars alone and what
  // runs is what is documented. A malformed value is reported and the
  // default used instead.
  template <class Parse>
  void read(const char *name, const char *expect, Parse parse) {
    const ConfigVar *var = find(name);
    const char *dflt = var != nullptr ? var->default_value : "";
    const char *env = std::getenv(name);
    if (env != nullptr && parse(env)) return;
    if (env != nullptr) append(name, env, expect, "");
    // A default that does not parse is mpix's bug; a unit test catches it.
    if (!parse(dflt)) append(name, dflt, expect, " (built-in default)");
  }

 private:
  static const ConfigVar *find(const char *name) {
    for (const auto &v : kVars)
      if (std::strcmp(v.name, name) == 0) return &v;
    return nullptr;
  }

  void append(const char *name, const char *value, const char *expect, const char *what) {
    const size_t used = std::strlen(errors_);
    if (static_cast<int>(used) + 1 >= len_) return;
    std::snprintf(errors_ + used, static_cast<size_t>(len_) - used, "%s=\"%s\"%s is invalid (expected %s)\n", name,
                  value, what, expect);
  }

  char *errors_;
  int len_;
};

void read_device(Config &c, Reader &r) {
  r.read("MPIX_DEVICE_PATH", "auto or proxy",
         [&](const char *v) { return parse_word(v, {"auto", "proxy"}, {false, true}, &c.device_proxy); });
  r.read("MPIX_DEVICE_TABLE", "1 .. 2^22", [&](const char *v) { return parse_pow2(v, 1, 1L << 22, &c.device_table); });
  r.read("MPIX_DEVICE_KEYS", "1 .. 2^26", [&](const char *v) { return parse_pow2(v, 1, 1L << 26, &c.device_keys); });
  r.read("MPIX_DEVICE_LANE_TAGS", "0 .. 65536",
         [&](const char *v) { return parse_int(v, 0, 1L << 16, &c.device_lane_tags); });
  r.read("MPIX_DEVICE_CHANNELS", "1 .. 1024",
         [&](const char *v) { return parse_pow2(v, 1, 1024, &c.device_channels); });
  r.read("MPIX_DEVICE_RING", "1 .. 65536", [&](const char *v) { return parse_pow2(v, 1, 1L << 16, &c.device_ring); });
  r.read("MPIX_DEVICE_SLOT_BYTES", "256 .. 2^24",
         [&](const char *v) { return parse_pow2(v, 256, 1L << 24, &c.device_slot_bytes); });
  r.read("MPIX_DEVICE_PROXY_QUEUE", "2 .. 2^20",
         [&](const char *v) { return parse_pow2(v, 2, 1L << 20, &c.device_proxy_queue); });
  r.read("MPIX_DEVICE_PROXY_INLINE", "32 .. 65536",
         [&](const char *v) { return parse_pow2(v, 32, 1L << 16, &c.device_proxy_inline); });
  r.read("MPIX_DEVICE_FAR_CELLS", "0 or 1",
         [&](const char *v) { return parse_word(v, {"0", "1"}, {false, true}, &c.device_far_cells); });
  r.read("MPIX_DEVICE_PROXY_HOSTMEM", "0 or 1",
         [&](const char *v) { return parse_word(v, {"0", "1"}, {false, true}, &c.device_proxy_hostmem); });
}

}  // namespace

const ConfigVar *config_vars(int *n) {
  *n = static_cast<int>(sizeof(kVars) / sizeof(kVars[0]));
  return kVars;
}

Config config_from_env(char *errors, int errors_len) {
  Config c{};
  Reader r(errors, errors_len);
  r.read("MPIX_VERBOSE", "0, 1 or 2", [&](const char *v) { return parse_int(v, 0, 2, &c.verbose); });
  r.read("MPIX_INTERCEPT", "none or all",
         [&](const char *v) { return parse_word(v, {"none", "all"}, {false, true}, &c.intercept_all); });
  r.read("MPIX_TRANSPORT", "auto, pmpi, ucx or ofi",
         [&](const char *v) { return parse_word(v, {"auto", "pmpi", "ucx", "ofi"}, {0, 1, 2, 3}, &c.transport); });
  r.read("MPIX_OFI_PROVIDER", "auto or a libfabric provider name (a-z, 0-9, _ and ;)",
         [&](const char *v) { return parse_provider(v, &c.ofi_provider); });
  r.read("MPIX_EAGER_LIMIT", "0 .. 67108864",
         [&](const char *v) { return parse_int(v, 0, 1L << 26, &c.eager_limit); });
  r.read("MPIX_LANDING_SLOTS", "1 .. 4096", [&](const char *v) { return parse_int(v, 1, 4096, &c.landing_slots); });
  r.read("MPIX_UNEXPECTED_LIMIT", "0 .. 2^40",
         [&](const char *v) { return parse_int(v, 0, 1L << 40, &c.unexpected_limit); });
  r.read("MPIX_PROGRESS_THREAD", "auto, 0 or 1", [&](const char *v) {
    return parse_word(v, {"auto", "0", "1"}, {-1, 0, 1}, &c.progress_thread);
  });
  r.read("MPIX_STREAM_QUEUE_DEPTH", "1 .. 1048576",
         [&](const char *v) { return parse_int(v, 1, 1 << 20, &c.stream_queue_depth); });
  r.read("MPIX_STREAM_PATH", "auto or host",
         [&](const char *v) { return parse_word(v, {"auto", "host"}, {false, true}, &c.stream_host_path); });
  r.read("MPIX_STREAM_WIDE_BLOCKS", "1 .. 128",
         [&](const char *v) { return parse_pow2(v, 1, 128, &c.stream_wide_blocks); });
  r.read("MPIX_GPU", "on or off",
         [&](const char *v) { return parse_word(v, {"on", "1", "off", "0"}, {true, true, false, false}, &c.gpu); });
  r.read("MPIX_GPU_PATH", "auto, ipc or staging", [&](const char *v) {
    return parse_word(v, {"auto", "ipc", "staging"}, {false, false, true}, &c.gpu_force_staging);
  });
  r.read("MPIX_GPU_EAGER_LIMIT", "0 .. 2^30",
         [&](const char *v) { return parse_int(v, 0, 1L << 30, &c.gpu_eager_limit); });
  r.read("MPIX_GPU_NODE_EAGER_LIMIT", "0 .. 2^30",
         [&](const char *v) { return parse_int(v, 0, 1L << 30, &c.gpu_node_eager_limit); });
  r.read("MPIX_GPU_BUFFER_AFTER_US", "1 .. 10000000",
         [&](const char *v) { return parse_int(v, 1, 10000000, &c.gpu_buffer_after_us); });
  r.read("MPIX_GPU_CHUNK", "4096 .. 2^30", [&](const char *v) { return parse_int(v, 4096, 1L << 30, &c.gpu_chunk); });
  r.read("MPIX_GPU_PIPELINE", "1 .. 64", [&](const char *v) { return parse_int(v, 1, 64, &c.gpu_pipeline); });
  r.read("MPIX_GPU_PINNED_SLOTS", "0 .. 1048576",
         [&](const char *v) { return parse_int(v, 0, 1L << 20, &c.gpu_pinned_slots); });
  r.read("MPIX_GPU_IPC_CACHE", "0 .. 1048576",
         [&](const char *v) { return parse_int(v, 0, 1L << 20, &c.gpu_ipc_cache); });
  r.read("MPIX_GPU_KERNEL_COPY", "on or off", [&](const char *v) {
    return parse_word(v, {"on", "1", "off", "0"}, {true, true, false, false}, &c.gpu_kernel_copy);
  });
  r.read("MPIX_GPU_KERNEL_COPY_MAX", "0 .. 1048576",
         [&](const char *v) { return parse_int(v, 0, 1L << 20, &c.gpu_kernel_copy_max); });
  r.read("MPIX_GPU_KERNEL_COPY_DEVICE_MAX", "0 .. 2^30",
         [&](const char *v) { return parse_int(v, 0, 1L << 30, &c.gpu_kernel_copy_device_max); });
  r.read("MPIX_GPU_KERNEL_COPY_IDLE_US", "1 .. 10000000",
         [&](const char *v) { return parse_int(v, 1, 10000000, &c.gpu_kernel_copy_idle_us); });
  r.read("MPIX_GPU_MATCH_THRESHOLD", "0 .. 2^32",
         [&](const char *v) { return parse_int(v, 0, 1L << 32, &c.gpu_match_threshold); });
  read_device(c, r);
  r.read("MPIX_SINGLE_COPY", "auto or off",
         [&](const char *v) { return parse_word(v, {"auto", "on", "1", "off", "0"}, {true, true, true, false, false}, &c.single_copy); });
  r.read("MPIX_SINGLE_COPY_MIN", "1 .. 2^40",
         [&](const char *v) { return parse_int(v, 1, 1L << 40, &c.single_copy_min); });
  r.read("MPIX_SHM_RING", "on or off",
         [&](const char *v) { return parse_word(v, {"on", "1", "off", "0"}, {true, true, false, false}, &c.shm_ring); });
  r.read("MPIX_SHM_RING_BYTES", "4096 .. 2^30",
         [&](const char *v) { return parse_int(v, 4096, 1L << 30, &c.shm_ring_bytes); });
  r.read("MPIX_SHM_RING_SLOT_BYTES", "64 .. 65536, a multiple of 64", [&](const char *v) {
    long bytes = 0;
    if (!parse_int(v, 64, 1L << 16, &bytes) || bytes % 64 != 0) return false;
    c.shm_ring_slot_bytes = bytes;
    return true;
  });
  r.read("MPIX_LINK_CHECK", "off or defer",
         [&](const char *v) { return parse_word(v, {"off", "defer"}, {false, true}, &c.link_check); });
  return c;
}

void config_print(std::FILE *out, const char *prefix) {
  for (const auto &v : kVars) {
    const char *cur = std::getenv(v.name);
    std::fprintf(out, "%s%-22s = %-8s (default %s) %s\n", prefix, v.name, cur ? cur : v.default_value,
                 v.default_value, v.help);
  }
}

}  // namespace mpix
