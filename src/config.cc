#include "config.h"

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <type_traits>

namespace mpix {
namespace {

// The value in force as MPI_T shows it (ConfigVar::value).
ConfigValue num(long v) { return ConfigValue{false, v, nullptr}; }
ConfigValue word(const char *w) { return ConfigValue{true, 0, w}; }

bool parse_long(const char *s, long lo, long hi, long *out) {
  char *end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// How a row reads its field and shows it (ConfigVar::parse, ::value): made
// by the templates below from the field's member pointer, so that a row
// names its field once.
struct Field {
  bool (*parse)(Config &c, const char *s);
  ConfigValue (*value)(const Config &c);
};

// An integer in [Lo, Hi].
template <auto M, long Lo, long Hi>
constexpr Field integer() {
  return {[](Config &c, const char *s) {
            long v = 0;
            if (!parse_long(s, Lo, Hi, &v)) return false;
            c.*M = static_cast<std::remove_reference_t<decltype(c.*M)>>(v);
            return true;
          },
          [](const Config &c) { return num(static_cast<long>(c.*M)); }};
}

// A multiple of Step in [Lo, Hi].
template <auto M, long Lo, long Hi, long Step>
constexpr Field multiple_of() {
  return {[](Config &c, const char *s) {
            long v = 0;
            if (!parse_long(s, Lo, Hi, &v) || v % Step != 0) return false;
            c.*M = v;
            return true;
          },
          [](const Config &c) { return num(c.*M); }};
}

// A power of two in [Lo, Hi] (a value in range is rounded down to one).
template <auto M, long Lo, long Hi>
constexpr Field pow2() {
  return {[](Config &c, const char *s) {
            long v = 0;
            if (!parse_long(s, Lo, Hi, &v)) return false;
            long p = 1;
            while (p * 2 <= v) p *= 2;
            c.*M = p;
            return true;
          },
          [](const Config &c) { return num(c.*M); }};
}

// An integer in [Lo, Hi], or "auto" (stored as -1: resolved at MPI_Init,
// where the thread level is known).
template <auto M, long Lo, long Hi>
constexpr Field integer_or_auto() {
  return {[](Config &c, const char *s) {
            long v = 0;
            if (std::strcmp(s, "auto") == 0) v = -1;
            else if (!parse_long(s, Lo, Hi, &v)) return false;
            c.*M = static_cast<std::remove_reference_t<decltype(c.*M)>>(v);
            return true;
          },
          [](const Config &c) { return c.*M < 0 ? word("auto") : num(static_cast<long>(c.*M)); }};
}

// A setting spelled as words; aliases map to one value, which MPI_T shows
// as the first word naming it (or as the number, where the words are
// numbers).
struct Words {
  const char *word[6];
  long value[6];
  int n;
  bool as_number;
};

template <auto M, const Words &W>
constexpr Field words() {
  return {[](Config &c, const char *s) {
            for (int i = 0; i < W.n; ++i)
              if (std::strcmp(s, W.word[i]) == 0) {
                c.*M = static_cast<std::remove_reference_t<decltype(c.*M)>>(W.value[i]);
                return true;
              }
            return false;
          },
          [](const Config &c) {
            const long v = static_cast<long>(c.*M);
            if (W.as_number) return num(v);
            for (int i = 0; i < W.n; ++i)
              if (W.value[i] == v) return word(W.word[i]);
            return num(v);
          }};
}

// A libfabric provider name as fi_info prints it ("tcp;ofi_rxm"). The
// pointer is kept: the environment's strings and the table's defaults
// outlive every Config.
template <auto M>
constexpr Field provider() {
  return {[](Config &c, const char *s) {
            const std::size_t n = std::strlen(s);
            if (n == 0 || n > 31) return false;
            for (const char *p = s; *p != '\0'; ++p)
              if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == ';')) return false;
            c.*M = s;
            return true;
          },
          [](const Config &c) { return word(c.*M); }};
}

constexpr Words kOnOffWords{{"on", "1", "off", "0"}, {1, 1, 0, 0}, 4, false};
constexpr Words kZeroOneWords{{"0", "1"}, {0, 1}, 2, true};  // shown as numbers
constexpr Words kInterceptWords{{"none", "all"}, {0, 1}, 2, false};
using progress::TransportKind;
constexpr long kind(TransportKind k) { return static_cast<long>(k); }
constexpr Words kTransportWords{{"auto", "pmpi", "ucx", "ofi"},
                                {kind(TransportKind::kAuto), kind(TransportKind::kPmpi), kind(TransportKind::kUcx),
                                 kind(TransportKind::kOfi)},
                                4,
                                false};
constexpr Words kProgressThreadWords{{"auto", "0", "1"}, {-1, 0, 1}, 3, false};
constexpr Words kStreamPathWords{{"auto", "host"}, {0, 1}, 2, false};
constexpr Words kGpuPathWords{{"auto", "ipc", "staging"}, {0, 0, 1}, 3, false};
constexpr Words kDevicePathWords{{"auto", "proxy"}, {0, 1}, 2, false};
constexpr Words kSingleCopyWords{{"auto", "on", "1", "off", "0"}, {1, 1, 1, 0, 0}, 5, false};
constexpr Words kLinkCheckWords{{"off", "defer"}, {0, 1}, 2, false};

constexpr ConfigVar row(const char *name, const char *dflt, const char *expect, const char *help, Field f) {
  return ConfigVar{name, dflt, help, expect, f.parse, f.value};
}

// Every setting, one row each: name, default, what a valid value looks like,
// help, and its field with how it is read (the reader, MPIX_VERBOSE,
// mpix_info, MPI_T and the README check all come from here).
const ConfigVar kVars[] = {
    row("MPIX_VERBOSE", "0", "0, 1 or 2",
        "0: silent; 1: print the configuration at MPI_Init on rank 0; 2: also per-rank details",
        integer<&Config::verbose, 0, 2>()),
    row("MPIX_INTERCEPT", "none", "none or all",
        "none: only communicators with no-wildcard assertions use mpix's engine; all: every communicator does "
        "(full MPI semantics, wildcards included)",
        words<&Config::intercept_all, kInterceptWords>()),
    row("MPIX_TRANSPORT", "auto", "auto, pmpi, ucx or ofi",
        "what carries handled communicators' messages: ucx (UCP active messages, rendezvous by UCX; needs the "
        "UCX transport built and usable on every rank), ofi (libfabric messages, rendezvous by fi_read; needs the "
        "libfabric transport built and a provider usable on every rank: MPIX_OFI_PROVIDER), pmpi (the MPI library "
        "underneath, a second time), auto (ucx when usable, else pmpi); an explicitly named transport that cannot "
        "start fails MPI_Init",
        words<&Config::transport, kTransportWords>()),
    row("MPIX_OFI_PROVIDER", "auto", "auto or a libfabric provider name (a-z, 0-9, _ and ;)",
        "the libfabric provider of MPIX_TRANSPORT=ofi, as fi_info names it (shm, tcp, tcp;ofi_rxm, verbs;ofi_rxm, "
        "efa, cxi...; a core provider alone matches it under a utility one); auto: shm when every rank is on one "
        "node, else the first network provider libfabric offers (FI_PROVIDER, libfabric's own variable, filters "
        "what it offers, for the MPI library too where it uses libfabric)",
        provider<&Config::ofi_provider>()),
    row("MPIX_EAGER_LIMIT", "16384", "0 .. 67108864",
        "largest message (bytes) sent eagerly with its envelope; larger ones use rendezvous",
        integer<&Config::eager_limit, 0, 1L << 26>()),
    row("MPIX_LANDING_SLOTS", "16", "1 .. 4096",
        "pre-posted landing receives per handled communicator (each MPIX_EAGER_LIMIT bytes)",
        integer<&Config::landing_slots, 1, 4096>()),
    row("MPIX_UNEXPECTED_LIMIT", "67108864", "0 .. 2^40",
        "unexpected eager bytes held per communicator before new messages are left in the MPI library's queue "
        "(back-pressure; a waiting receive always pulls more)",
        integer<&Config::unexpected_limit, 0, 1L << 40>()),
    row("MPIX_PROGRESS_THREAD", "auto", "auto, 0 or 1",
        "auto or 1: initialise the MPI library at MPI_THREAD_MULTIPLE (the application still sees its own level) "
        "so that a progress thread drives GPU streams and keeps mpix's communicators moving while the application "
        "blocks in calls mpix does not intercept; 0: only when the application asks for MPI_THREAD_MULTIPLE (then "
        "a program that blocks in, e.g., MPI_Barrier while its peer waits in MPI_Ssend for a receive it posted "
        "may hang)",
        words<&Config::progress_thread, kProgressThreadWords>()),
    row("MPIX_STREAM_QUEUE_DEPTH", "1024", "1 .. 1048576",
        "operations enqueued on one GPU stream and not yet triggered by it; a further *_enqueue waits for room",
        integer<&Config::stream_queue_depth, 1, 1 << 20>()),
    row("MPIX_STREAM_PATH", "auto", "auto or host",
        "who runs the *_enqueue operations of a GPU stream communicator: auto: kernels on the stream itself move "
        "the data through CUDA-IPC mailboxes when every rank is on this node with a GPU stream (no host on the "
        "path; host MPI_Send/MPI_Recv on that communicator are refused), else the host-driven path; host: always "
        "the host-driven path (the progress thread, MPI underneath; host calls match enqueued ones)",
        words<&Config::stream_host_path, kStreamPathWords>()),
    row("MPIX_STREAM_WIDE_BLOCKS", "64", "1 .. 128",
        "kernel path of *_enqueue: thread blocks that move one large message (at least two 256 KiB chunks) on "
        "each side; a stream communicator's ring holds as many chunks per channel (at least 16)",
        pow2<&Config::stream_wide_blocks, 1, 128>()),
    row("MPIX_STREAM_PULL_MIN", "8193", "0 .. 2^40",
        "kernel path of *_enqueue: sends of at least this many bytes from device memory CUDA IPC can map "
        "(cudaMalloc, not pools) to another process are pulled: the receiving kernel copies straight from the "
        "send buffer (one copy instead of two through the ring), and the send completes once it has, as a "
        "rendezvous send would. A buffer's first such send to a peer goes by the ring while the hosts map it (up "
        "to 64 buffers per peer, kept mapped until the communicator is freed or a new allocation of the sender takes "
        "the address). 0: never",
        integer<&Config::stream_pull_min, 0, 1L << 40>()),
    row("MPIX_STREAM_PULL_NONBLOCKING", "on", "on or off",
        "on: nonblocking sends (MPIX_Isend_enqueue) of at least MPIX_STREAM_PULL_MIN bytes are pulled too, up to "
        "64 in flight per peer (each completes at its wait once received; the wait copies a pulled receive with "
        "a block per 128 KiB of its buffer, up to 32). off: only blocking sends are pulled. The bound 8193 "
        "(medium messages up to 8 KiB) and pulls of nonblocking sends by measurement: 12-16 KiB enqueue "
        "ping-pongs 9.0 us pulled instead of 9.6-10.8 as medium messages, 16 KiB - 1 MiB 10.0-18.5 us instead "
        "of 13.6-24.0 through the ring, Jacobi N=4096 on four H200s 124.7 instead of 139.7 us, a 4 MiB exchange "
        "29 us instead of 215 (bench/RESULTS.md)",
        words<&Config::stream_pull_nonblocking, kOnOffWords>()),
    row("MPIX_GPU", "on", "on or off",
        "on: device buffers in point-to-point calls are recognised (one CUDA driver query per send and delivery); "
        "off: every buffer is taken for host memory (no query)",
        words<&Config::gpu, kOnOffWords>()),
    row("MPIX_GPU_HOST_RANGES", "on", "on or off",
        "on: buffers in memory that stays host memory for the process's life (the program's static data, the brk "
        "heap, the main thread's stack, the calling thread's stack) are taken for host memory without the "
        "driver query, which costs ~93 ns per send and per receive once the application has a CUDA context "
        "(bench/RESULTS.md); off: every buffer is asked of the driver",
        words<&Config::gpu_host_ranges, kOnOffWords>()),
    row("MPIX_GPU_PATH", "auto", "auto, ipc or staging",
        "auto: device data between GPUs of one node moves by CUDA IPC, otherwise staged through pinned host "
        "memory; staging: always staged (testing, or where IPC is unwanted)",
        words<&Config::gpu_force_staging, kGpuPathWords>()),
    row("MPIX_GPU_EAGER_LIMIT", "8192", "0 .. 2^30",
        "device-buffer sends up to this many bytes (and at most MPIX_EAGER_LIMIT) go as eager messages through a "
        "pinned bounce buffer; larger ones by GPU rendezvous (CUDA IPC within a node: one copy, no host bounce)",
        integer<&Config::gpu_eager_limit, 0, 1L << 30>()),
    row("MPIX_GPU_NODE_EAGER_LIMIT", "0", "0 .. 2^30",
        "device-buffer sends to a process of this node, from a buffer CUDA IPC can map, go eagerly (two copies "
        "through host memory) only up to this size (and MPIX_GPU_EAGER_LIMIT); larger ones by GPU rendezvous: the "
        "receiver's GPU copies from the sender's buffer, one copy. 0: the rendezvous at every size (7.3-8.5 against "
        "13.4-13.7 us at 8 B and 0.7-1.0 against 0.13 M messages/s on two H200s, latency growing with size, "
        "bench/RESULTS.md); such a send of at most MPIX_GPU_EAGER_LIMIT bytes still completes without its receive "
        "(MPIX_GPU_BUFFER_AFTER_US)",
        integer<&Config::gpu_node_eager_limit, 0, 1L << 30>()),
    row("MPIX_GPU_BUFFER_AFTER_US", "1000", "1 .. 10000000",
        "a device-buffer send of at most MPIX_GPU_EAGER_LIMIT bytes sent by rendezvous (not synchronous) that no "
        "receive has taken after this many microseconds sends its bytes after its envelope and completes once the "
        "receiver kept them, as an eager send would (two blocking sends facing each other then finish)",
        integer<&Config::gpu_buffer_after_us, 1, 10000000>()),
    row("MPIX_GPU_CHUNK", "4194304", "4096 .. 2^30",
        "bytes per chunk of the staged device-data pipeline (and size of each pinned staging buffer)",
        integer<&Config::gpu_chunk, 4096, 1L << 30>()),
    row("MPIX_GPU_PIPELINE", "4", "1 .. 64",
        "chunks of one staged transfer in flight at once (copy/network overlap)",
        integer<&Config::gpu_pipeline, 1, 64>()),
    row("MPIX_GPU_PINNED_SLOTS", "0", "0 .. 1048576",
        "pinned staging buffers (MPIX_GPU_CHUNK bytes each) a rank may allocate per direction; 0: as many as the "
        "transfers in flight need. Beyond it, or when pinning fails, chunks are staged through pageable memory "
        "(slower, still correct)",
        integer<&Config::gpu_pinned_slots, 0, 1L << 20>()),
    row("MPIX_GPU_IPC_CACHE", "256", "0 .. 1048576",
        "peer GPU allocations kept mapped by CUDA IPC (least recently used closed beyond; 0: close after each "
        "transfer). A mapping keeps the sender's freed memory allocated until closed",
        integer<&Config::gpu_ipc_cache, 0, 1L << 20>()),
    row("MPIX_GPU_KERNEL_COPY", "on", "on or off",
        "on: small copies of device-buffer messages (the eager path's device-to-host and host-to-device copies, up "
        "to MPIX_GPU_KERNEL_COPY_MAX) are done by a resident kernel of one thread block per GPU fed through pinned "
        "host memory, without a launch or copy-engine job each; off: by cudaMemcpyAsync and a synchronisation",
        words<&Config::gpu_kernel_copy, kOnOffWords>()),
    row("MPIX_GPU_KERNEL_COPY_MAX", "8192", "0 .. 1048576",
        "largest copy the resident kernel takes (larger ones go to the copy engines); its pinned staging is 64 "
        "times this per GPU",
        integer<&Config::gpu_kernel_copy_max, 0, 1L << 20>()),
    row("MPIX_GPU_KERNEL_COPY_DEVICE_MAX", "65536", "0 .. 2^30",
        "largest device-to-device copy the resident kernel takes: the receiver's copy of a GPU rendezvous by CUDA "
        "IPC (the sender's buffer mapped here) up to this size; larger ones go to the copy engines",
        integer<&Config::gpu_kernel_copy_device_max, 0, 1L << 30>()),
    row("MPIX_GPU_KERNEL_COPY_IDLE_US", "100", "1 .. 10000000",
        "microseconds without a copy after which the resident kernel exits (the next copy starts it again, one "
        "launch); an application's cudaDeviceSynchronize or cudaFree waits at most this long for it",
        integer<&Config::gpu_kernel_copy_idle_us, 1, 10000000>()),
    row("MPIX_GPU_MATCH_THRESHOLD", "1048576", "0 .. 2^32",
        "entries (arrivals + receives) from which an unordered region's batch is matched on the GPU instead of the "
        "CPU (in the engine, where each pair's delivery costs more than its pairing, GPU batches gained nothing "
        "consistent over CPU ones up to 524288 entries on an H200 host: bench/RESULTS.md); 0: never on the GPU",
        integer<&Config::gpu_match_threshold, 0, 1L << 32>()),
    row("MPIX_REGION_BATCH_MIN", "16384", "0 .. 2^32",
        "messages and receives a communicator must hold waiting for a receive posted in an unordered region to "
        "start a batch (what follows joins it until it is matched); below, region entries are matched at once the "
        "ordered way, cheaper for shallow queues (measured crossover: bench/RESULTS.md); 0: always batch",
        integer<&Config::region_batch_min, 0, 1L << 32>()),
    row("MPIX_DEVICE_PATH", "auto", "auto or proxy",
        "device-callable send/recv: auto: GPU to GPU through CUDA-IPC mailboxes when every rank of the "
        "communicator is on this node, else the proxy path; proxy: always through the progress thread and MPI "
        "(host MPI calls then match device calls)",
        words<&Config::device_proxy, kDevicePathWords>()),
    row("MPIX_DEVICE_TABLE", "8192", "1 .. 2^22",
        "device send/recv: message-table buckets per source (8 messages each) in the receiver's GPU memory; a "
        "full table makes sends wait",
        pow2<&Config::device_table, 1, 1L << 22>()),
    row("MPIX_DEVICE_KEYS", "65536", "1 .. 2^26",
        "device send/recv: distinct (peer, tag) pairs with tags from 4096 on that a device handle can number on "
        "each side (smaller tags have counters of their own); beyond them calls return MPIX_DEVICE_ERR_KEYS",
        pow2<&Config::device_keys, 1, 1L << 26>()),
    row("MPIX_DEVICE_LANE_TAGS", "64", "0 .. 65536",
        "device send/recv: tags below this have lanes: 8 messages of each (peer, tag) in flight, each in a cell of "
        "its own, which costs a send one atomic instead of two (lower latency); larger tags use the table "
        "(thousands in flight); 0: no lanes. Stream communicators have none",
        integer<&Config::device_lane_tags, 0, 1L << 16>()),
    row("MPIX_DEVICE_CHANNELS", "32", "1 .. 1024",
        "device send/recv: payload rings per source (a tag's messages above 32 bytes use ring hash(tag))",
        pow2<&Config::device_channels, 1, 1024>()),
    row("MPIX_DEVICE_RING", "64", "1 .. 65536",
        "device send/recv: staging blocks per payload ring",
        pow2<&Config::device_ring, 1, 1L << 16>()),
    row("MPIX_DEVICE_SLOT_BYTES", "16384", "256 .. 2^24",
        "device send/recv: bytes per staging block (a multiple of 256)",
        pow2<&Config::device_slot_bytes, 256, 1L << 24>()),
    row("MPIX_DEVICE_MID_MAX", "16384", "0 .. 65536",
        "device send/recv and stream operations: messages above 32 bytes up to this many go as medium messages "
        "(flagged lines, no fence: one hand-over) to peers whose table takes 16-byte atomics; larger ones, or "
        "0, through the payload rings",
        integer<&Config::device_mid_max, 0, 1L << 16>()),
    row("MPIX_DEVICE_MID_RING", "128", "1 .. 4096",
        "device send/recv: slots (1 KiB, 512 payload bytes each) per medium ring (one per source and channel); "
        "MPIX_DEVICE_MID_MAX is cut to what one ring holds",
        pow2<&Config::device_mid_ring, 1, 4096>()),
    row("MPIX_DEVICE_PROXY_QUEUE", "4096", "2 .. 2^20",
        "device send/recv, proxy path: descriptors in the queue to the progress thread; size it above the receives "
        "a rank keeps outstanding",
        pow2<&Config::device_proxy_queue, 2, 1L << 20>()),
    row("MPIX_DEVICE_PROXY_INLINE", "256", "32 .. 65536",
        "device send/recv, proxy path: messages up to this many bytes go through a bounce buffer per descriptor",
        pow2<&Config::device_proxy_inline, 32, 1L << 16>()),
    row("MPIX_DEVICE_FAR_CELLS", "1", "0 or 1",
        "device send/recv: 1: messages of at most 8 bytes to a peer on another GPU go as one 16-byte atomic into "
        "its table, like those to peers on the same GPU, where the link carries native atomics; 0 (and links "
        "without them): as a table entry published by a release store",
        words<&Config::device_far_cells, kZeroOneWords>()),
    row("MPIX_DEVICE_PROXY_HOSTMEM", "0", "0 or 1",
        "1: the proxy queue in plain host memory (host threads post: tests without a GPU)",
        words<&Config::device_proxy_hostmem, kZeroOneWords>()),
    row("MPIX_SINGLE_COPY", "auto", "auto or off",
        "auto: messages of at least MPIX_SINGLE_COPY_MIN bytes between processes of one node are read by the receiver straight "
        "from the sender's buffer (Linux cross-memory attach: one copy; used where every process can read its "
        "neighbour's memory, which ptrace rules decide); off: through the transport's rendezvous",
        words<&Config::single_copy, kSingleCopyWords>()),
    row("MPIX_SINGLE_COPY_MIN", "16384", "1 .. 2^40",
        "smallest message (bytes) that goes single-copy within a node (MPIX_SINGLE_COPY), below MPIX_EAGER_LIMIT "
        "too; smaller ones go eagerly through the shared-memory rings (16 KiB: single copy 1.02x native on both "
        "machines measured, the ring 0.46x on the 2-core VM but 1.30x on a 16-core Xeon, bench/RESULTS.md)",
        integer<&Config::single_copy_min, 1, 1L << 40>()),
    row("MPIX_SINGLE_COPY_SPLIT", "65536", "0 .. 2^40",
        "single-copy messages of at least this many bytes (0: none) are copied by both processes: the receiver "
        "reads the first half and asks the sender to write the second into the receive buffer, two cores at "
        "once where one moved every byte (issue 30, bench/RESULTS.md)",
        integer<&Config::single_copy_split, 0, 1L << 40>()),
    row("MPIX_SHM_RING", "on", "on or off",
        "ucx and ofi transports: on: eager messages up to a quarter of a ring and control frames between processes "
        "of one node go through single-producer rings in shared memory (one per pair); off: all through the "
        "transport",
        words<&Config::shm_ring, kOnOffWords>()),
    row("MPIX_SHM_RING_BYTES", "262144", "4096 .. 2^30",
        "bytes of each ring (MPIX_SHM_RING), from one process to another of its node; less where a process's rings "
        "from all the others would exceed 32 MiB; rounded down to a power-of-two number of slots. A message takes at "
        "most a quarter of its ring",
        integer<&Config::shm_ring_bytes, 4096, 1L << 30>()),
    row("MPIX_SHM_RING_SLOT_BYTES", "256", "64 .. 65536, a multiple of 64",
        "bytes of a ring slot (MPIX_SHM_RING), a multiple of 64: a message takes as many consecutive slots as its "
        "16-byte head, 56-byte envelope and payload need",
        multiple_of<&Config::shm_ring_slot_bytes, 64, 1L << 16, 64>()),
    row("MPIX_LOCK_SPINS", "32", "0 .. 1048576",
        "tries (four pause instructions apart) a thread makes for mpix's engine lock before it yields its core (and, "
        "after 64 yields, naps 20 us at a time); 0: yield at once. Threads receiving side by side hand the lock over "
        "in well under a microsecond, giving the core up costs microseconds",
        integer<&Config::lock_spins, 0, 1L << 20>()),
    row("MPIX_LOCK_BIAS", "on", "on or off",
        "on: below MPI_THREAD_MULTIPLE the engine lock is biased to the application, which takes it with a plain "
        "store instead of an atomic exchange; mpix's own threads revoke the bias when they need the lock "
        "(membarrier(2), microseconds) and the application earns it back after 4096 acquisitions. Never biased "
        "where membarrier is refused or under ThreadSanitizer",
        words<&Config::lock_bias, kOnOffWords>()),
    row("MPIX_LANES", "auto", "auto or 0 .. 64",
        "lanes per no-wildcard communicator whose members share a node: each lane its own lock, matcher and "
        "shared-memory rings, so that small contiguous host messages are sent and matched without the engine lock "
        "and threads of an MPI_THREAD_MULTIPLE program whose tags fall in different lanes do so side by side; "
        "auto: 4 at MPI_THREAD_MULTIPLE, 1 below it, none where MPIX_SHM_RING is off; 0: off (one engine lock)",
        integer_or_auto<&Config::lanes, 0, 64>()),
    row("MPIX_LANE_TAG_SHIFT", "6", "0 .. 30",
        "a tag's lane is (tag >> this) % MPIX_LANES: blocks of 2^this consecutive tags share a lane, so a thread "
        "that uses its own block of tags keeps to its own lane",
        integer<&Config::lane_tag_shift, 0, 30>()),
    row("MPIX_LANE_EAGER_LIMIT", "1024", "0 .. 16376",
        "bytes up to which a standard send of contiguous host data goes through its lane's ring, and a receive "
        "into a contiguous host buffer is posted in its lane (MPIX_LANES); larger ones go through the engine, whose "
        "shared-memory rings stream 2-8 KiB messages faster (bench/RESULTS.md, 26th session)",
        integer<&Config::lane_eager_limit, 0, 16376>()),
    row("MPIX_LINK_CHECK", "off", "off or defer",
        "testing: defer: every eager send handed to the transport with a completion is held and its payload read "
        "only at the next progress step, so code that reuses a send's memory before the send completed sends "
        "wrong bytes every time instead of under load only; off: sends go straight to the transport",
        words<&Config::link_check, kLinkCheckWords>()),
};

}  // namespace

const ConfigVar *config_vars(int *n) {
  *n = static_cast<int>(sizeof(kVars) / sizeof(kVars[0]));
  return kVars;
}

Config config_from_env(char *errors, int errors_len) {
  Config c{};
  if (errors_len > 0) errors[0] = '\0';
  const auto report = [&](const ConfigVar &v, const char *value, const char *what) {
    const std::size_t used = std::strlen(errors);
    if (static_cast<int>(used) + 1 >= errors_len) return;
    std::snprintf(errors + used, static_cast<std::size_t>(errors_len) - used, "%s=\"%s\"%s is invalid (expected %s)\n",
                  v.name, value, what, v.expect);
  };
  // The value in force: the environment's, else the row's default, so that
  // what runs is what is documented. A malformed value is reported and the
  // default used instead; a default that does not parse is mpix's bug (a
  // unit test catches it).
  for (const ConfigVar &v : kVars) {
    const char *env = std::getenv(v.name);
    if (env != nullptr && v.parse(c, env)) continue;
    if (env != nullptr) report(v, env, "");
    if (!v.parse(c, v.default_value)) report(v, v.default_value, " (built-in default)");
  }
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
