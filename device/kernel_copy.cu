#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "copy.h"
#include "cuda_check.h"
#include "device_scope.h"
#include "kernel_copy.h"
#include "kernel_copy_desc.h"

namespace mpix::device {
namespace {

using kcopy::Descriptor;
using kcopy::kInlineFlag;
using kcopy::kSlots;
using kcopy::kValueMask;
using kcopy::lap_tag;
constexpr unsigned kThreads = 256;
// Descriptors read per round trip (eight threads each), and the largest
// copy one warp makes alone when several are taken at once.
constexpr unsigned kLook = 16;
constexpr std::uint32_t kWarpMax = 2048;
static_assert(kLook * 8 < kThreads && kLook < kSlots, "one round's readers (and the stop word's) are threads of the block");

// Where the kernel reads and writes in host memory.
struct alignas(64) Control {
  std::uint64_t stop;       // host: finalize
  std::uint64_t min_epoch;  // host: launches of an older epoch leave at once
  std::uint64_t pad[6];
  std::uint64_t done;       // kernel: the last descriptor copied
  std::uint64_t started;    // kernel: the epoch of the launch running
};

__device__ inline std::uint64_t now_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Threads [tid, tid + step, ...) of the caller's group copy the whole
// pieces (of T) of n bytes; returns the bytes they cover. Four loads in
// flight per thread before their stores (which the compiler may not move
// above later loads: dst might alias src), so a round trip to peer or host
// memory moves four pieces per thread, not one. The rest, at most three
// per thread, also loaded before any is stored: one at a time, 1 KiB by a
// warp (two each) and 8 KiB by the block took two round trips to the peer
// where 2 KiB and 16 KiB took one, and were ~1 us slower than those
// larger messages. Loads bypass L1 (ld.global.cv): the kernel lives across
// many copies, and a source the application rewrote since the last one
// (or a staging slot the host refilled) must be read again.
template <class T>
__device__ std::uint32_t copy_pieces(char *dst, const char *src, std::uint32_t n, unsigned tid, unsigned step) {
  const std::uint32_t m = n / sizeof(T), b = step;
  const T *from = reinterpret_cast<const T *>(src);
  T *to = reinterpret_cast<T *>(dst);
  std::uint32_t i = tid;
  for (; i + 3 * b < m; i += 4 * b) {
    const T x0 = __ldcv(from + i), x1 = __ldcv(from + i + b), x2 = __ldcv(from + i + 2 * b),
            x3 = __ldcv(from + i + 3 * b);
    to[i] = x0;
    to[i + b] = x1;
    to[i + 2 * b] = x2;
    to[i + 3 * b] = x3;
  }
  const bool r0 = i < m, r1 = i + b < m, r2 = i + 2 * b < m;
  T y0{}, y1{}, y2{};
  if (r0) y0 = __ldcv(from + i);
  if (r1) y1 = __ldcv(from + i + b);
  if (r2) y2 = __ldcv(from + i + 2 * b);
  if (r0) to[i] = y0;
  if (r1) to[i + b] = y1;
  if (r2) to[i + 2 * b] = y2;
  return m * static_cast<std::uint32_t>(sizeof(T));
}

// Threads [tid, tid + step, ...) of the caller's group copy n bytes: in
// 16-byte pieces where both ends allow, else 8-byte ones (a buffer one
// double in), then the bytes left.
__device__ void group_copy(char *dst, const char *src, std::uint32_t n, unsigned tid, unsigned step) {
  const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src);
  std::uint32_t done = 0;
  if ((a & 15) == 0) done = copy_pieces<uint4>(dst, src, n, tid, step);
  else if ((a & 7) == 0) done = copy_pieces<unsigned long long>(dst, src, n, tid, step);
  for (std::uint32_t i = done + tid; i < n; i += step)
    dst[i] = static_cast<char>(__ldcv(reinterpret_cast<const signed char *>(src) + i));
}

// One descriptor's copy (its tag-stripped words) by a group of threads.
__device__ void run_descriptor(const std::uint64_t *words, unsigned tid, unsigned step) {
  char *dst = reinterpret_cast<char *>(words[1]);
  const std::uint32_t n = static_cast<std::uint32_t>(words[2]);
  if (words[2] & kInlineFlag) {
    for (std::uint32_t i = tid; i < n; i += step) dst[i] = static_cast<char>(kcopy::inline_byte(words, i));
  } else {
    group_copy(dst, reinterpret_cast<const char *>(words[0]), n, tid, step);
  }
}

// One thread block. Each round, threads 0-127 read the next kLook
// descriptors' words (eight threads a descriptor, one PCIe round trip for
// all); the leading run of complete ones (every tag the expected lap's) is
// taken at once: those up to kWarpMax bytes a warp each, in parallel, the
// larger ones by the whole block, then thread 0 writes the number of the
// last one to host memory. So a window of messages whose descriptors the
// host wrote together costs one pickup and one signal, not one each (the
// first version read one slot per round trip and did 0.2 M copies/s).
__global__ void copy_kernel(const Descriptor *ring, Control *control, std::uint64_t seq, std::uint64_t idle_ns,
                            std::uint64_t epoch) {
  __shared__ std::uint64_t words[kLook][8];
  __shared__ bool ready[kLook];
  __shared__ int state;     // 0: nothing yet, 1: descriptors to run, 2: exit
  __shared__ unsigned take;  // state 1: how many
  __shared__ std::uint64_t stop;
  // A launch that started too late (the host gave its copies to the copy
  // engines meanwhile) must not copy: say it started, then look whether
  // the host gave up on it (each side writes, fences, then reads the
  // other's word, so at least one of them sees the other).
  if (threadIdx.x == 0) {
    *reinterpret_cast<volatile std::uint64_t *>(&control->started) = epoch;
    __threadfence_system();
    state = *reinterpret_cast<volatile std::uint64_t *>(&control->min_epoch) > epoch ? 2 : 0;
  }
  __syncthreads();
  if (state == 2) return;
  __syncthreads();
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  std::uint64_t last_work = now_ns();
  for (;;) {
    if (threadIdx.x < kLook * 8) {
      const unsigned d = threadIdx.x / 8, w = threadIdx.x % 8;
      const volatile std::uint64_t *p = ring[(seq + d) % kSlots].word;
      const std::uint64_t v = p[w];
      const unsigned all = __ballot_sync(0xffffffffu, kcopy::word_current(v, seq + d));
      words[d][w] = v & kValueMask;
      if (w == 0) ready[d] = ((all >> (lane & ~7u)) & 0xffu) == 0xffu;
    } else if (threadIdx.x == kLook * 8) {
      // Read beside the descriptors, not after them: a second PCIe round
      // trip per look made every copy wait ~1 us longer on average.
      stop = *reinterpret_cast<volatile std::uint64_t *>(&control->stop);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned k = 0;
      while (k < kLook && ready[k]) ++k;
      take = k;
      if (k > 0) state = 1;
      else if (stop != 0 || now_ns() - last_work > idle_ns) state = 2;
      else state = 0;
    }
    __syncthreads();
    const int s = state;
    if (s == 2) return;
    if (s == 1) {
      const unsigned k = take;
      for (unsigned d = warp; d < k; d += warps)
        if (static_cast<std::uint32_t>(words[d][2]) <= kWarpMax) run_descriptor(words[d], lane, 32);
      for (unsigned d = 0; d < k; ++d)
        if (static_cast<std::uint32_t>(words[d][2]) > kWarpMax) run_descriptor(words[d], threadIdx.x, blockDim.x);
      // The block's copies, then one release fence at system scope by the
      // thread that signals (the barrier puts every thread's stores before
      // it): a __threadfence_system (fence.sc) in each of the 256 threads
      // cost ~0.9 us per copy (8 B: 6.15 -> 5.29 us issue to done, H100).
      __syncthreads();
      if (threadIdx.x == 0) {
        asm volatile("fence.acq_rel.sys;" ::: "memory");
        *reinterpret_cast<volatile std::uint64_t *>(&control->done) = seq + k - 1;
      }
      seq += k;
      last_work = now_ns();
    }
    __syncthreads();  // `words`, `ready` and `state` are rewritten next round
  }
}

// A descriptor as the host wrote it, for the copy engines to run should
// the kernel not start (Ring::host_done).
struct Job {
  std::uint64_t src = 0, dst = 0, n = 0;
  bool inline_payload = false;
  unsigned char bytes[kcopy::kInlineBytes] = {};
};

// One GPU's kernel, ring and staging.
struct Ring {
  int device = 0;
  bool usable = false;
  cudaStream_t stream = nullptr;
  Descriptor *ring = nullptr;  // pinned: ring, control, staging in one allocation
  Control *control = nullptr;
  char *staging = nullptr;
  std::uint64_t next = 1;       // sequence number of the next descriptor
  std::uint64_t done_floor = 0;  // done() as last read by a post: never above it
  // Descriptors up to this one the host ran instead (copy engines); read
  // without the lock by kernel_copy_test's fast path.
  std::atomic<std::uint64_t> host_done{0};
  Job jobs[kSlots];
  bool running = false;
  std::uint64_t epoch = 0;  // of the last launch
  bool given_up = false;    // the last launch was slow to start: min_epoch raised
  bool stale = false;       // a launch given up on may still sit in the stream
  std::chrono::steady_clock::time_point launched{}, last_tend{};
  // Tests that found their copy not done, since one looked after the kernel
  // (kernel_copy_test; relaxed loads and stores, no read-modify-write: a
  // count lost to a race only delays the next look by a test).
  std::atomic<unsigned> untended{0};
  // When a copy was last seen done (steady_clock nanoseconds; written
  // without the lock too): a kernel idle longer may have exited.
  std::atomic<std::int64_t> last_done_ns{0};

  std::uint64_t done() const {
    const std::uint64_t k = *reinterpret_cast<const volatile std::uint64_t *>(&control->done);
    const std::uint64_t h = host_done.load(std::memory_order_acquire);
    return k > h ? k : h;
  }
  void saw_done() {
    last_done_ns.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  }
  std::chrono::nanoseconds since_done() const {
    return std::chrono::nanoseconds(std::chrono::steady_clock::now().time_since_epoch().count() -
                                    last_done_ns.load(std::memory_order_relaxed));
  }
};

// How long a launch may take to start before its copies go to the copy
// engines: the application's kernels may hold every SM (a persistent kernel
// waiting for this very message through the device proxy), and the copy
// engines need none.
constexpr auto kStartTimeout = std::chrono::microseconds(200);
// Not-done tests of a ring between two looks after its kernel.
constexpr unsigned kTestsPerTend = 16;

struct State {
  std::mutex mutex;
  KernelCopyConfig config;
  std::vector<std::unique_ptr<Ring>> rings;
  std::vector<bool> loaded;  // per device: kernel_copy_preload() done
  std::atomic<std::uint64_t> copies{0}, launches{0};
};

State &state() {
  static State s;
  return s;
}

std::size_t staging_bytes(const KernelCopyConfig &c) { return (c.max_bytes + 63) / 64 * 64; }

Ring *ring_of(State &s, int device) {
  if (device < 0) return nullptr;
  if (static_cast<std::size_t>(device) >= s.rings.size()) s.rings.resize(static_cast<std::size_t>(device) + 1);
  auto &slot = s.rings[static_cast<std::size_t>(device)];
  if (slot) return slot->usable ? slot.get() : nullptr;
  slot = std::make_unique<Ring>();
  Ring &r = *slot;
  r.device = device;
  DeviceScope scope(device);
  const std::size_t bytes = sizeof(Descriptor) * kSlots + sizeof(Control) + staging_bytes(s.config) * kSlots;
  void *mem = nullptr;
  if (!cuda_ok(cudaHostAlloc(&mem, bytes, cudaHostAllocPortable | cudaHostAllocMapped))) return nullptr;
  std::memset(mem, 0, bytes);
  void *dev = nullptr;
  // Under unified addressing the two pointers agree; asked all the same,
  // since the kernel must use the device's view.
  if (!cuda_ok(cudaHostGetDevicePointer(&dev, mem, 0)) || dev != mem) {
    cudaFreeHost(mem);
    return nullptr;
  }
  int lo = 0, hi = 0;
  cudaDeviceGetStreamPriorityRange(&lo, &hi);
  if (!cuda_ok(cudaStreamCreateWithPriority(&r.stream, cudaStreamNonBlocking, hi))) {
    cudaFreeHost(mem);
    return nullptr;
  }
  r.ring = static_cast<Descriptor *>(mem);
  r.control = reinterpret_cast<Control *>(r.ring + kSlots);
  r.staging = reinterpret_cast<char *>(r.control + 1);
  r.usable = true;
  return &r;
}

bool launch(State &s, Ring &r, std::uint64_t first) {
  DeviceScope scope(r.device);
  const std::uint64_t idle_ns = static_cast<std::uint64_t>(s.config.idle_us) * 1000;
  copy_kernel<<<1, kThreads, 0, r.stream>>>(r.ring, r.control, first, idle_ns, r.epoch + 1);
  if (!cuda_ok(cudaGetLastError())) return false;
  ++r.epoch;
  r.running = true;
  r.given_up = false;
  r.launched = std::chrono::steady_clock::now();
  s.launches.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// Whether the kernel has exited (its stream idle); an error ends the ring.
Status exited(Ring &r, bool *yes) {
  const cudaError_t e = cudaStreamQuery(r.stream);
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    *yes = false;
    return Status::kOk;
  }
  *yes = true;
  if (!cuda_ok(e)) {
    r.usable = false;
    return Status::kCudaError;
  }
  return Status::kOk;
}

void write_descriptor(Descriptor &d, std::uint64_t seq, std::uint64_t src, std::uint64_t dst, std::uint64_t n,
                      const unsigned char *inline_bytes) {
  std::uint64_t w[8];
  kcopy::encode(seq, src, dst, n, inline_bytes, w);
  volatile std::uint64_t *out = d.word;
  for (int i = 0; i < 8; ++i) out[i] = w[i];
}

// Whether copies of n bytes with a host side (or device to device) are
// the kernel's to make.
bool takes(std::size_t n, bool host_side) {
  const KernelCopyConfig &c = state().config;
  return c.enabled && n <= (host_side ? c.max_bytes : c.device_max) && n < (std::size_t{1} << 32);
}

// The descriptors the kernel has not run, run by the copy engines instead:
// its launch never started (the SMs are the application's), and it will
// leave without copying when it does (min_epoch).
Status run_on_host(Ring &r) {
  for (std::uint64_t q = r.done() + 1; q < r.next; ++q) {
    const Job &j = r.jobs[q % kSlots];
    const void *src = j.inline_payload ? static_cast<const void *>(j.bytes) : reinterpret_cast<const void *>(j.src);
    const Status st = copy_sync(reinterpret_cast<void *>(j.dst), src, j.n, r.device);
    if (st != Status::kOk) {
      r.usable = false;
      return st;
    }
  }
  r.host_done.store(r.next - 1, std::memory_order_release);
  return Status::kOk;
}

// One look after the kernel while descriptors wait: started again after an
// idle exit, given up on (its descriptors run by the copy engines) when a
// launch does not start within kStartTimeout.
Status tend(State &s, Ring &r) {
  if (r.done() + 1 >= r.next) return Status::kOk;
  bool gone = false;
  if (const Status e = exited(r, &gone); e != Status::kOk) return e;
  if (gone) {
    r.running = false;
    if (r.done() + 1 >= r.next) return Status::kOk;
    // It left (idle, or at its start because the host had given up on it)
    // before these descriptors: start it again at the first of them.
    if (!launch(s, r, r.done() + 1)) {
      r.usable = false;
      return run_on_host(r);
    }
    return Status::kOk;
  }
  const volatile std::uint64_t *started = &r.control->started;
  if (!r.given_up && *started != r.epoch && std::chrono::steady_clock::now() - r.launched > kStartTimeout) {
    *reinterpret_cast<volatile std::uint64_t *>(&r.control->min_epoch) = r.epoch + 1;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    r.given_up = true;
    if (*started != r.epoch) {
      // Not started, and it will leave without copying when it does.
      r.stale = true;
      r.running = false;
      return run_on_host(r);
    }
    // It started meanwhile: it copies, or it saw min_epoch and leaves
    // (then the next look starts it again).
  }
  return Status::kOk;
}

// Writes descriptor for a copy and makes sure a kernel will run it;
// *ticket is its number (kernel_copy_test). kDeclined: the ring is full,
// or a launch given up on has not left yet: copy elsewhere.
Status post_locked(State &s, Ring &r, void *dst, bool dst_host, const void *src, bool src_host, std::size_t n,
                   std::uint64_t *ticket) {
  if (r.stale) {
    // Until the launch given up on has come and gone, copies go elsewhere.
    bool gone = false;
    if (const Status e = exited(r, &gone); e != Status::kOk) return e;
    if (!gone) return Status::kDeclined;
    r.stale = false;
    r.running = false;
  }
  const std::uint64_t seq = r.next;
  // Whether the slot's last use is done, from the last done number read
  // while it says so: the done word is a line the GPU writes, a cache miss
  // at each read.
  if (seq - r.done_floor >= kSlots) {
    r.done_floor = r.done();
    if (seq - r.done_floor >= kSlots) return Status::kDeclined;
  }
  const unsigned slot = static_cast<unsigned>(seq % kSlots);
  char *staging = r.staging + staging_bytes(s.config) * slot;
  const bool inline_payload = src_host && n <= kcopy::kInlineBytes && !dst_host;
  std::uint64_t from = reinterpret_cast<std::uintptr_t>(src), to = reinterpret_cast<std::uintptr_t>(dst);
  if (src_host && !inline_payload) {
    std::memcpy(staging, src, n);
    from = reinterpret_cast<std::uintptr_t>(staging);
  }
  if (dst_host) to = reinterpret_cast<std::uintptr_t>(staging);
  Job &j = r.jobs[slot];
  j.src = from;
  j.dst = to;
  j.n = n;
  j.inline_payload = inline_payload;
  if (inline_payload) std::memcpy(j.bytes, src, n);
  // The staged bytes before the descriptor that names them. Nothing after
  // the descriptor needs it visible first (the kernel finds it when it
  // lands; a kernel that left is seen through its stream), so no full
  // fence: one made each post wait for the descriptor's line, which the
  // polling GPU holds (copy post 0.28-0.48 us, bench/RESULTS.md,
  // fifteenth session).
  std::atomic_thread_fence(std::memory_order_release);
  write_descriptor(r.ring[slot], seq, from, to, n, inline_payload ? static_cast<const unsigned char *>(src) : nullptr);
  ++r.next;
  *ticket = seq;

  // A kernel idle for a while may have exited: look before relying on it.
  if (r.running && r.since_done() > std::chrono::microseconds(s.config.idle_us / 2)) {
    bool gone = false;
    if (const Status e = exited(r, &gone); e != Status::kOk) return e;
    if (gone) r.running = false;
  }
  if (!r.running && !launch(s, r, r.done() + 1)) {
    r.usable = false;
    return run_on_host(r);
  }
  return Status::kOk;
}

// Spins until descriptor `ticket` is done (the engine lock's holder waits
// for one small copy: microseconds).
Status wait_locked(State &s, Ring &r, std::uint64_t ticket) {
  for (unsigned spins = 1; r.done() < ticket; ++spins) {
    if ((spins & 1023) != 0) continue;
    if (const Status e = tend(s, r); e != Status::kOk) return e;
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  r.saw_done();
  return Status::kOk;
}

bool addresses_fit(const void *a, const void *b) {
  return (reinterpret_cast<std::uintptr_t>(a) | reinterpret_cast<std::uintptr_t>(b)) <= kValueMask;
}

}  // namespace

void kernel_copy_configure(const KernelCopyConfig &config) {
  State &s = state();
  std::lock_guard<std::mutex> g(s.mutex);
  s.config = config;
  if (s.config.max_bytes > (std::uint64_t{1} << 30)) s.config.max_bytes = std::uint64_t{1} << 30;
}

Status kernel_copy(void *dst, bool dst_host, const void *src, bool src_host, std::size_t n, int device) {
  State &s = state();
  if (!takes(n, src_host || dst_host)) return Status::kDeclined;
  if (n == 0) return Status::kOk;
  if (!addresses_fit(src, dst)) return Status::kDeclined;
  std::lock_guard<std::mutex> g(s.mutex);
  Ring *r = ring_of(s, device);
  if (r == nullptr) return Status::kDeclined;
  std::uint64_t ticket = 0;
  if (const Status st = post_locked(s, *r, dst, dst_host, src, src_host, n, &ticket); st != Status::kOk) return st;
  if (const Status st = wait_locked(s, *r, ticket); st != Status::kOk) return st;
  if (dst_host) std::memcpy(dst, r->staging + staging_bytes(s.config) * (ticket % kSlots), n);
  s.copies.fetch_add(1, std::memory_order_relaxed);
  return Status::kOk;
}

Status kernel_copy_post(void *dst, const void *src, bool src_host, std::size_t n, int device, KernelCopyTicket *t) {
  State &s = state();
  if (!takes(n, src_host)) return Status::kDeclined;
  t->ring = nullptr;
  t->seq = 0;
  if (n == 0) return Status::kOk;
  if (!addresses_fit(src, dst)) return Status::kDeclined;
  std::lock_guard<std::mutex> g(s.mutex);
  Ring *r = ring_of(s, device);
  if (r == nullptr) return Status::kDeclined;
  const Status st = post_locked(s, *r, dst, false, src, src_host, n, &t->seq);
  if (st == Status::kOk) {
    t->ring = r;
    s.copies.fetch_add(1, std::memory_order_relaxed);
  }
  return st;
}

Status kernel_copy_test(const KernelCopyTicket &t) {
  if (t.seq == 0) return Status::kOk;
  Ring *r = static_cast<Ring *>(t.ring);
  if (r == nullptr) return Status::kCudaError;
  const auto finished = [&] {
    if (r->done() < t.seq) return false;
    std::atomic_thread_fence(std::memory_order_acquire);
    r->saw_done();
    return true;
  };
  // Without the lock first: a receiver with a window of copies in flight
  // tests each of them at every progress step. Only every
  // kTestsPerTend-th test that finds its copy not done looks after the
  // kernel (a lock, a clock read, at most every 20 us a driver call); the
  // rest cost one load of the done word.
  if (finished()) return Status::kOk;
  const unsigned untended = r->untended.load(std::memory_order_relaxed) + 1;
  r->untended.store(untended, std::memory_order_relaxed);
  if (untended % kTestsPerTend != 0) return Status::kNotReady;
  State &s = state();
  std::lock_guard<std::mutex> g(s.mutex);
  if (finished()) return Status::kOk;
  if (!r->usable) return Status::kCudaError;
  // Looking after the kernel queries its stream (a driver call): at most
  // every 20 us, not at every test.
  const auto now = std::chrono::steady_clock::now();
  if (now - r->last_tend < std::chrono::microseconds(20)) return Status::kNotReady;
  r->last_tend = now;
  if (const Status e = tend(s, *r); e != Status::kOk) return e;
  return finished() ? Status::kOk : Status::kNotReady;
}

void kernel_copy_preload() {
  State &s = state();
  std::lock_guard<std::mutex> g(s.mutex);
  if (!s.config.enabled) return;
  int device = -1;
  if (!cuda_ok(cudaGetDevice(&device)) || device < 0) return;
  if (static_cast<std::size_t>(device) >= s.loaded.size()) s.loaded.resize(static_cast<std::size_t>(device) + 1);
  if (s.loaded[static_cast<std::size_t>(device)]) return;
  cudaFuncAttributes attributes{};
  s.loaded[static_cast<std::size_t>(device)] = cuda_ok(cudaFuncGetAttributes(&attributes, copy_kernel));
}

KernelCopyStats kernel_copy_stats() {
  KernelCopyStats out;
  out.copies = state().copies.load(std::memory_order_relaxed);
  out.launches = state().launches.load(std::memory_order_relaxed);
  return out;
}

void kernel_copy_finalize() {
  State &s = state();
  std::lock_guard<std::mutex> g(s.mutex);
  for (auto &r : s.rings) {
    if (!r || r->ring == nullptr) continue;
    DeviceScope scope(r->device);
    *reinterpret_cast<volatile std::uint64_t *>(&r->control->stop) = 1;
    cudaStreamSynchronize(r->stream);
    (void)cudaGetLastError();
    cudaStreamDestroy(r->stream);
    cudaFreeHost(r->ring);
  }
  s.rings.clear();
}

}  // namespace mpix::device
