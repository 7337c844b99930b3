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

// The block copies n bytes. Loads bypass L1 (ld.global.cv): the kernel
// lives across many copies, and a source the application rewrote since the
// last one (or a staging slot the host refilled) must be read again.
__device__ void block_copy(char *dst, const char *src, std::uint32_t n) {
  const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src);
  std::uint32_t done = 0;
  if ((a & 15) == 0) {
    // Four loads in flight per thread before their stores (which the
    // compiler may not move above later loads: dst might alias src), so a
    // round trip to peer or host memory moves 16 KiB, not 4.
    const std::uint32_t m = n / 16, b = blockDim.x;
    const uint4 *from = reinterpret_cast<const uint4 *>(src);
    uint4 *to = reinterpret_cast<uint4 *>(dst);
    std::uint32_t i = threadIdx.x;
    for (; i + 3 * b < m; i += 4 * b) {
      const uint4 x0 = __ldcv(from + i), x1 = __ldcv(from + i + b), x2 = __ldcv(from + i + 2 * b),
                  x3 = __ldcv(from + i + 3 * b);
      to[i] = x0;
      to[i + b] = x1;
      to[i + 2 * b] = x2;
      to[i + 3 * b] = x3;
    }
    for (; i < m; i += b) to[i] = __ldcv(from + i);
    done = m * 16;
  } else if ((a & 7) == 0) {
    const std::uint32_t m = n / 8;
    for (std::uint32_t i = threadIdx.x; i < m; i += blockDim.x)
      reinterpret_cast<unsigned long long *>(dst)[i] = __ldcv(reinterpret_cast<const unsigned long long *>(src) + i);
    done = m * 8;
  }
  for (std::uint32_t i = done + threadIdx.x; i < n; i += blockDim.x)
    dst[i] = static_cast<char>(__ldcv(reinterpret_cast<const signed char *>(src) + i));
}

// One thread block. Lanes 0-7 of warp 0 read the next descriptor's eight
// words in one PCIe round trip, again and again; when every tag is the
// expected lap's, the block copies, then thread 0 writes the descriptor's
// number to host memory. (Keeping several reads of the slot in flight,
// staggered, measured slower on H100: 7.3 against 4.9 us a copy.)
__global__ void copy_kernel(const Descriptor *ring, Control *control, std::uint64_t seq, std::uint64_t idle_ns,
                            std::uint64_t epoch) {
  __shared__ std::uint64_t words[8];
  __shared__ int state;  // 0: nothing yet, 1: a descriptor, 2: exit
  // A launch that started too late (the host gave its copy to the copy
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
  std::uint64_t last_work = now_ns();
  for (;;) {
    if (threadIdx.x < 8) {
      const volatile std::uint64_t *w = ring[seq % kSlots].word;
      const std::uint64_t v = w[threadIdx.x];
      const std::uint64_t stop = threadIdx.x == 0 ? *reinterpret_cast<volatile std::uint64_t *>(&control->stop) : 0;
      const unsigned all = __ballot_sync(0xffu, kcopy::word_current(v, seq));
      words[threadIdx.x] = v & kValueMask;
      if (threadIdx.x == 0) {
        if (all == 0xffu) state = 1;
        else if (stop != 0 || now_ns() - last_work > idle_ns) state = 2;
        else state = 0;
      }
    }
    __syncthreads();
    const int s = state;
    if (s == 2) return;
    if (s == 1) {
      char *dst = reinterpret_cast<char *>(words[1]);
      const std::uint32_t n = static_cast<std::uint32_t>(words[2]);
      if (words[2] & kInlineFlag) {
        for (std::uint32_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = static_cast<char>(kcopy::inline_byte(words, i));
      } else {
        block_copy(dst, reinterpret_cast<const char *>(words[0]), n);
      }
      __threadfence_system();
      __syncthreads();
      if (threadIdx.x == 0) *reinterpret_cast<volatile std::uint64_t *>(&control->done) = seq;
      ++seq;
      last_work = now_ns();
    }
    __syncthreads();  // `words` and `state` are rewritten next round
  }
}

// One GPU's kernel, ring and staging.
struct Ring {
  int device = 0;
  bool usable = false;
  cudaStream_t stream = nullptr;
  Descriptor *ring = nullptr;  // pinned: ring, control, staging in one allocation
  Control *control = nullptr;
  char *staging = nullptr;
  std::uint64_t next = 1;  // sequence number of the next descriptor
  bool running = false;
  std::uint64_t epoch = 0;  // of the last launch
  bool stale = false;       // a launch given up on may still sit in the stream
  std::chrono::steady_clock::time_point last_done{}, launched{};
};

// How long a launch may take to start before its copy goes to the copy
// engines: the application's kernels may hold every SM (a persistent kernel
// waiting for this very message through the device proxy), and the copy
// engines need none.
constexpr auto kStartTimeout = std::chrono::microseconds(200);

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
  const std::uint64_t s_addr = reinterpret_cast<std::uintptr_t>(src), d_addr = reinterpret_cast<std::uintptr_t>(dst);
  if ((s_addr | d_addr) > kValueMask) return Status::kDeclined;
  std::lock_guard<std::mutex> g(s.mutex);
  Ring *r = ring_of(s, device);
  if (r == nullptr) return Status::kDeclined;
  if (r->stale) {
    // Until the launch given up on has come and gone, copies go elsewhere.
    bool gone = false;
    if (const Status e = exited(*r, &gone); e != Status::kOk) return e;
    if (!gone) return Status::kDeclined;
    r->stale = false;
    r->running = false;
  }
  const std::uint64_t seq = r->next;
  const unsigned slot = static_cast<unsigned>(seq % kSlots);
  char *staging = r->staging + staging_bytes(s.config) * slot;
  const bool inline_payload = src_host && n <= kcopy::kInlineBytes && !dst_host;
  std::uint64_t from = s_addr, to = d_addr;
  if (src_host && !inline_payload) {
    std::memcpy(staging, src, n);
    from = reinterpret_cast<std::uintptr_t>(staging);
  }
  if (dst_host) to = reinterpret_cast<std::uintptr_t>(staging);
  write_descriptor(r->ring[slot], seq, from, to, n, inline_payload ? static_cast<const unsigned char *>(src) : nullptr);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  ++r->next;

  // A kernel idle for a while may have exited: look before waiting on it.
  const auto since = std::chrono::steady_clock::now() - r->last_done;
  if (r->running && since > std::chrono::microseconds(s.config.idle_us / 2)) {
    bool gone = false;
    if (const Status e = exited(*r, &gone); e != Status::kOk) return e;
    if (gone) r->running = false;
  }
  if (!r->running && !launch(s, *r, seq)) {
    r->usable = false;
    return Status::kDeclined;
  }
  const volatile std::uint64_t *done = &r->control->done;
  const volatile std::uint64_t *started = &r->control->started;
  volatile std::uint64_t *min_epoch = &r->control->min_epoch;
  bool given_up = false;
  for (unsigned spins = 1;; ++spins) {
    if (*done >= seq) break;
    if ((spins & 1023) != 0) continue;
    bool gone = false;
    if (const Status e = exited(*r, &gone); e != Status::kOk) return e;
    if (gone) {
      if (*done >= seq) break;
      r->running = false;
      if (given_up) return Status::kDeclined;  // it started, saw the host give up, and left
      // It left before this descriptor (idle): start it again here.
      if (!launch(s, *r, seq)) {
        r->usable = false;
        return Status::kDeclined;
      }
      continue;
    }
    if (!given_up && *started != r->epoch && std::chrono::steady_clock::now() - r->launched > kStartTimeout) {
      *min_epoch = r->epoch + 1;
      std::atomic_thread_fence(std::memory_order_seq_cst);
      given_up = true;
      if (*started != r->epoch) {
        // Not started, and it will leave without copying when it does.
        r->stale = true;
        r->running = false;
        return Status::kDeclined;
      }
      // It started meanwhile: it copies, or it saw min_epoch and leaves.
    }
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  if (dst_host) std::memcpy(dst, staging, n);
  r->last_done = std::chrono::steady_clock::now();
  s.copies.fetch_add(1, std::memory_order_relaxed);
  return Status::kOk;
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
