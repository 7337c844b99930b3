#include "config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace mpix {
namespace {

const ConfigVar kVars[] = {
    {"MPIX_VERBOSE", "0",
     "0: silent; 1: print the configuration at MPI_Init on rank 0; 2: also per-rank details"},
    {"MPIX_INTERCEPT", "none",
     "none: only communicators with no-wildcard assertions use mpix's engine; all: every communicator does "
     "(full MPI semantics, wildcards included)"},
    {"MPIX_TRANSPORT", "auto",
     "what carries handled communicators' messages: ucx (UCP active messages, rendezvous by UCX; needs the "
     "UCX transport built and usable on every rank), pmpi (the MPI library underneath, a second time), auto "
     "(ucx when usable, else pmpi); an explicitly named transport that cannot start fails MPI_Init"},
    {"MPIX_EAGER_LIMIT", "8192",
     "largest message (bytes) sent eagerly with its envelope; larger ones use rendezvous"},
    {"MPIX_LANDING_SLOTS", "16",
     "pre-posted landing receives per handled communicator (each MPIX_EAGER_LIMIT bytes)"},
    {"MPIX_UNEXPECTED_LIMIT", "67108864",
     "unexpected eager bytes held per communicator before new messages are left in the MPI library's queue "
     "(back-pressure; a waiting receive always pulls more)"},
    {"MPIX_PROGRESS_THREAD", "auto",
     "auto or 1: initialise the MPI library at MPI_THREAD_MULTIPLE (the application still sees its own level) "
     "so that a progress thread drives GPU streams and keeps mpix's communicators moving while the application "
     "blocks in calls mpix does not intercept; 0: only when the application asks for MPI_THREAD_MULTIPLE (then "
     "a program that blocks in, e.g., MPI_Barrier while its peer waits in MPI_Ssend for a receive it posted "
     "may hang)"},
    {"MPIX_STREAM_QUEUE_DEPTH", "1024",
     "operations enqueued on one GPU stream and not yet triggered by it; a further *_enqueue waits for room"},
    {"MPIX_GPU", "on",
     "on: device buffers in point-to-point calls are recognised (one CUDA driver query per send and delivery); "
     "off: every buffer is taken for host memory (no query)"},
    {"MPIX_GPU_PATH", "auto",
     "auto: device data between GPUs of one node moves by CUDA IPC, otherwise staged through pinned host "
     "memory; staging: always staged (testing, or where IPC is unwanted)"},
    {"MPIX_GPU_EAGER_LIMIT", "8192",
     "device-buffer sends up to this many bytes (and at most MPIX_EAGER_LIMIT) go as eager messages through a "
     "pinned bounce buffer; larger ones by GPU rendezvous (CUDA IPC within a node: one copy, no host bounce)"},
    {"MPIX_GPU_CHUNK", "4194304",
     "bytes per chunk of the staged device-data pipeline (and size of each pinned staging buffer)"},
    {"MPIX_GPU_PIPELINE", "4", "chunks of one staged transfer in flight at once (copy/network overlap)"},
    {"MPIX_GPU_IPC_CACHE", "256",
     "peer GPU allocations kept mapped by CUDA IPC (least recently used closed beyond; 0: close after each "
     "transfer). A mapping keeps the sender's freed memory allocated until closed"},
    {"MPIX_GPU_MATCH_THRESHOLD", "131072",
     "entries (arrivals + receives) from which an unordered region's batch is matched on the GPU instead of the "
     "CPU (measured crossover on an H200: bench/RESULTS.md); 0: never on the GPU"},
    {"MPIX_DEVICE_PATH", "auto",
     "device-callable send/recv: auto: GPU to GPU through CUDA-IPC mailboxes when every rank of the "
     "communicator is on this node, else the proxy path; proxy: always through the progress thread and MPI "
     "(host MPI calls then match device calls)"},
    {"MPIX_DEVICE_TABLE", "8192",
     "device send/recv: message-table buckets per source (8 messages each) in the receiver's GPU memory; a "
     "full table makes sends wait"},
    {"MPIX_DEVICE_KEYS", "65536",
     "device send/recv: distinct (peer, tag) pairs with tags from 4096 on that a device handle can number on "
     "each side (smaller tags have counters of their own); beyond them calls return MPIX_DEVICE_ERR_KEYS"},
    {"MPIX_DEVICE_CHANNELS", "32",
     "device send/recv: payload rings per source (a tag's messages above 32 bytes use ring hash(tag))"},
    {"MPIX_DEVICE_RING", "64", "device send/recv: staging blocks per payload ring"},
    {"MPIX_DEVICE_SLOT_BYTES", "16384", "device send/recv: bytes per staging block (a multiple of 256)"},
    {"MPIX_DEVICE_PROXY_QUEUE", "4096",
     "device send/recv, proxy path: descriptors in the queue to the progress thread; size it above the receives "
     "a rank keeps outstanding"},
    {"MPIX_DEVICE_PROXY_INLINE", "256",
     "device send/recv, proxy path: messages up to this many bytes go through a bounce buffer per descriptor"},
    {"MPIX_DEVICE_PROXY_HOSTMEM", "0",
     "1: the proxy queue in plain host memory (host threads post: tests without a GPU)"},
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

void append(char *buf, int len, const char *name, const char *value, const char *expect) {
  const size_t used = std::strlen(buf);
  if (static_cast<int>(used) + 1 >= len) return;
  std::snprintf(buf + used, static_cast<size_t>(len) - used, "%s=\"%s\" is invalid (expected %s)\n", name,
                value, expect);
}

// A power of two in [lo, hi] (a value in range is rounded down to one).
void read_pow2(const char *name, long lo, long hi, long *out, char *errors, int errors_len) {
  const char *v = std::getenv(name);
  if (v == nullptr) return;
  long x = 0;
  if (!parse_int(v, lo, hi, &x)) {
    char expect[64];
    std::snprintf(expect, sizeof expect, "%ld .. %ld", lo, hi);
    append(errors, errors_len, name, v, expect);
    return;
  }
  long p = 1;
  while (p * 2 <= x) p *= 2;
  *out = p;
}

void read_flag(const char *name, const char *off, const char *on, bool *out, char *errors, int errors_len) {
  const char *v = std::getenv(name);
  if (v == nullptr) return;
  if (std::strcmp(v, on) == 0) *out = true;
  else if (std::strcmp(v, off) == 0) *out = false;
  else {
    char expect[64];
    std::snprintf(expect, sizeof expect, "%s or %s", off, on);
    append(errors, errors_len, name, v, expect);
  }
}

void read_device(Config &c, char *errors, int errors_len) {
  read_flag("MPIX_DEVICE_PATH", "auto", "proxy", &c.device_proxy, errors, errors_len);
  read_pow2("MPIX_DEVICE_TABLE", 1, 1L << 22, &c.device_table, errors, errors_len);
  read_pow2("MPIX_DEVICE_KEYS", 1, 1L << 26, &c.device_keys, errors, errors_len);
  read_pow2("MPIX_DEVICE_CHANNELS", 1, 1024, &c.device_channels, errors, errors_len);
  read_pow2("MPIX_DEVICE_RING", 1, 1L << 16, &c.device_ring, errors, errors_len);
  read_pow2("MPIX_DEVICE_SLOT_BYTES", 256, 1L << 24, &c.device_slot_bytes, errors, errors_len);
  read_pow2("MPIX_DEVICE_PROXY_QUEUE", 2, 1L << 20, &c.device_proxy_queue, errors, errors_len);
  read_pow2("MPIX_DEVICE_PROXY_INLINE", 32, 1L << 16, &c.device_proxy_inline, errors, errors_len);
  read_flag("MPIX_DEVICE_PROXY_HOSTMEM", "0", "1", &c.device_proxy_hostmem, errors, errors_len);
}

}  // namespace

const ConfigVar *config_vars(int *n) {
  *n = static_cast<int>(sizeof(kVars) / sizeof(kVars[0]));
  return kVars;
}

Config config_from_env(char *errors, int errors_len) {
  Config c;
  if (errors_len > 0) errors[0] = '\0';
  if (const char *v = std::getenv("MPIX_VERBOSE")) {
    if (!parse_int(v, 0, 2, &c.verbose)) append(errors, errors_len, "MPIX_VERBOSE", v, "0, 1 or 2");
  }
  if (const char *v = std::getenv("MPIX_INTERCEPT")) {
    if (std::strcmp(v, "all") == 0) c.intercept_all = true;
    else if (std::strcmp(v, "none") != 0) append(errors, errors_len, "MPIX_INTERCEPT", v, "none or all");
  }
  if (const char *v = std::getenv("MPIX_TRANSPORT")) {
    if (std::strcmp(v, "auto") == 0) c.transport = 0;
    else if (std::strcmp(v, "pmpi") == 0) c.transport = 1;
    else if (std::strcmp(v, "ucx") == 0) c.transport = 2;
    else append(errors, errors_len, "MPIX_TRANSPORT", v, "auto, pmpi or ucx");
  }
  if (const char *v = std::getenv("MPIX_EAGER_LIMIT")) {
    if (!parse_int(v, 0, 1L << 26, &c.eager_limit))
      append(errors, errors_len, "MPIX_EAGER_LIMIT", v, "0 .. 67108864");
  }
  if (const char *v = std::getenv("MPIX_LANDING_SLOTS")) {
    if (!parse_int(v, 1, 4096, &c.landing_slots)) append(errors, errors_len, "MPIX_LANDING_SLOTS", v, "1 .. 4096");
  }
  if (const char *v = std::getenv("MPIX_UNEXPECTED_LIMIT")) {
    if (!parse_int(v, 0, 1L << 40, &c.unexpected_limit))
      append(errors, errors_len, "MPIX_UNEXPECTED_LIMIT", v, "0 .. 2^40");
  }
  if (const char *v = std::getenv("MPIX_PROGRESS_THREAD")) {
    if (std::strcmp(v, "auto") == 0) c.progress_thread = -1;
    else if (!parse_int(v, 0, 1, &c.progress_thread))
      append(errors, errors_len, "MPIX_PROGRESS_THREAD", v, "auto, 0 or 1");
  }
  if (const char *v = std::getenv("MPIX_STREAM_QUEUE_DEPTH")) {
    if (!parse_int(v, 1, 1 << 20, &c.stream_queue_depth))
      append(errors, errors_len, "MPIX_STREAM_QUEUE_DEPTH", v, "1 .. 1048576");
  }
  if (const char *v = std::getenv("MPIX_GPU")) {
    if (std::strcmp(v, "off") == 0 || std::strcmp(v, "0") == 0) c.gpu = false;
    else if (std::strcmp(v, "on") != 0 && std::strcmp(v, "1") != 0) append(errors, errors_len, "MPIX_GPU", v, "on or off");
  }
  if (const char *v = std::getenv("MPIX_GPU_PATH")) {
    if (std::strcmp(v, "staging") == 0) c.gpu_force_staging = true;
    else if (std::strcmp(v, "auto") != 0 && std::strcmp(v, "ipc") != 0)
      append(errors, errors_len, "MPIX_GPU_PATH", v, "auto, ipc or staging");
  }
  if (const char *v = std::getenv("MPIX_GPU_EAGER_LIMIT")) {
    if (!parse_int(v, 0, 1L << 30, &c.gpu_eager_limit))
      append(errors, errors_len, "MPIX_GPU_EAGER_LIMIT", v, "0 .. 2^30");
  }
  if (const char *v = std::getenv("MPIX_GPU_CHUNK")) {
    if (!parse_int(v, 4096, 1L << 30, &c.gpu_chunk)) append(errors, errors_len, "MPIX_GPU_CHUNK", v, "4096 .. 2^30");
  }
  if (const char *v = std::getenv("MPIX_GPU_PIPELINE")) {
    if (!parse_int(v, 1, 64, &c.gpu_pipeline)) append(errors, errors_len, "MPIX_GPU_PIPELINE", v, "1 .. 64");
  }
  if (const char *v = std::getenv("MPIX_GPU_IPC_CACHE")) {
    if (!parse_int(v, 0, 1L << 20, &c.gpu_ipc_cache))
      append(errors, errors_len, "MPIX_GPU_IPC_CACHE", v, "0 .. 1048576");
  }
  if (const char *v = std::getenv("MPIX_GPU_MATCH_THRESHOLD")) {
    if (!parse_int(v, 0, 1L << 32, &c.gpu_match_threshold))
      append(errors, errors_len, "MPIX_GPU_MATCH_THRESHOLD", v, "0 .. 2^32");
  }
  read_device(c, errors, errors_len);
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
