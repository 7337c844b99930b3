// Device-callable send/recv (include/mpix_device.h) between two ranks (or
// one rank to itself): every device call and its status codes, sizes 0 B ..
// 64 MiB (inline, staged, streamed through the ring), truncation, many
// threads/warps/blocks with randomised tags and multiplicities and
// checksummed payloads (FIFO per (source, tag) checked), back-pressure (a
// full message table leaves sends pending; with a one-bucket table exactly
// its ways' worth complete at once), and sender/receiver kernels launched
// separately (the sender spins on a full table before the receiver kernel
// exists). MPIX_DEVICE_TABLE etc. in the testlist shrink the queues;
// MPIX_DEVICE_PATH=proxy runs everything through the proxy path (host MPI
// on the progress thread). Skips without a GPU. A protocol bug shows as a
// device call spinning forever: a watchdog ends the process with the name
// of the phase that hung instead.
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "mpix.h"
#include "mpix_device.h"
#include "test/gpu/gpu_common.h"

namespace {

int g_rank = 0, g_size = 1, g_errors = 0;


// Each phase arms a deadline (DEV_P2P_TIMEOUT seconds, default 150: below
// the test runner's limit, so the message names the phase; far above what a
// working run takes, so this is no timing assertion). On expiry the process
// exits and mpiexec takes the other ranks down; a kernel spinning on the
// GPU dies with its process.
void dump_queues();

class Watchdog {
 public:
  Watchdog() : thread_([this] { run(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> g(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void arm(const char *phase) {
    const char *v = std::getenv("DEV_P2P_TIMEOUT");
    const int secs = v && std::atoi(v) > 0 ? std::atoi(v) : 150;
    std::lock_guard<std::mutex> g(m_);
    phase_ = phase;
    secs_ = secs;
    deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(secs);
    cv_.notify_all();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> g(m_);
    while (!stop_) {
      if (phase_ == nullptr) {
        cv_.wait(g);
      } else if (cv_.wait_until(g, deadline_) == std::cv_status::timeout && !stop_ &&
                 std::chrono::steady_clock::now() >= deadline_) {
        std::fprintf(stderr, "[%d] FAILED: hang: phase '%s' still running after %d s\n", g_rank, phase_, secs_);
        dump_queues();
        std::fflush(stderr);
        std::_Exit(3);
      }
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  const char *phase_ = nullptr;
  int secs_ = 0;
  std::chrono::steady_clock::time_point deadline_{};
  bool stop_ = false;
  std::thread thread_;
};
Watchdog *g_watchdog = nullptr;

// On a hang: the IPC queues' state as the GPU holds it (copied on a
// stream of its own, past the spinning kernel), so the report says which
// side waits for what.
std::atomic<const MPIX_Device_comm *> g_dump{nullptr};
void dump_queues() {
  const MPIX_Device_comm *h = g_dump.load();
  if (h == nullptr) return;
  cudaStream_t st;
  if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess) return;
  auto get = [&](const void *dev, size_t n) {
    std::vector<unsigned char> v(n);
    if (cudaMemcpyAsync(v.data(), dev, n, cudaMemcpyDeviceToHost, st) != cudaSuccess ||
        cudaStreamSynchronize(st) != cudaSuccess)
      v.clear();
    return v;
  };
  if (h->path == MPIXD_PATH_PROXY) {
    // Descriptors, completions and submissions are in mapped host memory;
    // the ticket counter and the slot bitmap on the GPU.
    auto tail = get(h->pq_tail, sizeof(uint32_t));
    auto pool = get(h->pq_pool, (h->pq_slots + 31) / 32 * sizeof(uint32_t));
    unsigned held = 0;
    for (size_t w = 0; w < pool.size() / 4; ++w) held += __builtin_popcount(reinterpret_cast<const uint32_t *>(pool.data())[w]);
    const uint32_t taken = mpixd_load_acquire(h->pq_credit);
    std::fprintf(stderr, "[%d] proxy queue: %u submitted, %u taken by the host, %u of %u slots held\n", g_rank,
                 tail.size() ? *reinterpret_cast<const uint32_t *>(tail.data()) : 0u, taken, held, h->pq_slots);
    cudaStreamDestroy(st);
    return;
  }
  // IPC path: per peer, the ways of its table this rank holds (sender
  // side) and the keys waiting in this rank's table from it, then the first
  // rings' tickets, credits and releases.
  for (int peer = 0; peer < h->size; ++peer) {
    auto claims = get(mpixd_claims(h, h->local, peer), sizeof(uint32_t) * h->buckets);
    auto keys = get(mpixd_mkeys(h, h->local, peer), 2 * sizeof(uint64_t) * h->buckets * MPIXD_WAYS);
    unsigned held = 0, waiting = 0;
    for (size_t b = 0; b < claims.size() / 4; ++b) held += __builtin_popcount(reinterpret_cast<const uint32_t *>(claims.data())[b]);
    for (size_t k = 0; k < keys.size() / 16; ++k) waiting += reinterpret_cast<const uint64_t *>(keys.data())[2 * k] != 0;
    std::fprintf(stderr, "[%d] to %d: %u ways held; from %d: %u messages in the table\n", g_rank, peer, held, peer,
                 waiting);
    for (uint32_t c = 0; c < h->channels && c < 4; ++c) {
      auto sc = get(mpixd_schan_of(h, h->local, peer, c), sizeof(mpixd_schan));
      auto rcb = get(mpixd_rchan_of(h, peer, c), h->rchan_bytes);
      if (sc.size() != sizeof(mpixd_schan) || rcb.size() != h->rchan_bytes) continue;
      const mpixd_schan *sp = reinterpret_cast<const mpixd_schan *>(sc.data());
      auto *rc = reinterpret_cast<mpixd_rchan *>(rcb.data());
      std::fprintf(stderr, "[%d]   ring %u: to %d tail %u credit %u; from %d lock %u lo %u, states:", g_rank, c, peer,
                   sp->tail, sp->credit, peer, rc->lock, rc->lo);
      const uint32_t *states = mpixd_slot_states(rc);
      for (uint32_t i = 0; i < h->slots && i < 64; ++i) std::fprintf(stderr, " %u", states[i]);
      std::fprintf(stderr, "\n");
    }
  }
  cudaStreamDestroy(st);
}
// DEV_P2P_VERBOSE=1: every phase (and message size) on stderr as it
// starts, so that a fault reported later names where it began.
void phase(const char *name, long n = -1) {
  if (g_watchdog) g_watchdog->arm(name);
  static const bool verbose = std::getenv("DEV_P2P_VERBOSE") != nullptr;
  if (verbose) {
    std::fprintf(stderr, "[%d] phase: %s, n = %ld\n", g_rank, name, n);
    std::fflush(stderr);
  }
}

// Senders and receivers of one process in one grid must all be resident at
// once (a receiver block waiting for a slot that only an unscheduled sender
// block frees never finishes). A cooperative launch guarantees that; where
// it is refused (e.g. not supported under MPS), a plain launch of the same
// small grid, which fits the GPU many times over.
template <class... KArgs, class... Args>
void launch_coresident(void (*k)(KArgs...), unsigned blocks, unsigned threads, Args &&...args) {
  std::tuple<KArgs...> a(std::forward<Args>(args)...);
  cudaError_t e = std::apply(
      [&](auto &...x) {
        void *argv[] = {static_cast<void *>(&x)...};
        return cudaLaunchCooperativeKernel(reinterpret_cast<const void *>(k), dim3(blocks), dim3(threads), argv, 0,
                                           cudaStream_t(0));
      },
      a);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    std::apply([&](auto &...x) { k<<<blocks, threads>>>(x...); }, a);
    e = cudaGetLastError();
  }
  if (e != cudaSuccess) {
    std::fprintf(stderr, "[%d] launch: %s\n", g_rank, cudaGetErrorString(e));
    std::exit(1);
  }
}

void expect(bool ok, const char *what, long a = 0, long b = 0) {
  if (!ok) {
    std::fprintf(stderr, "[%d] FAILED: %s (%ld vs %ld)\n", g_rank, what, a, b);
    ++g_errors;
  }
}

__host__ __device__ unsigned char pattern(size_t i, unsigned seed) {
  return static_cast<unsigned char>(((i + 1) * 2654435761u + seed * 40503u) >> 9);
}

__global__ void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = pattern(i, seed);
}

__global__ void verify(const unsigned char *p, size_t n, unsigned seed, unsigned long long *bad) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    if (p[i] != pattern(i, seed)) atomicAdd(bad, 1ull);
}

// ---- 1. every call, one thread per side ----

// Results: codes[i] written by the kernels, checked on the host.
__global__ void calls_send(MPIX_Device_comm c, int peer, const unsigned char *buf, size_t n, int tag, int *codes) {
  MPIX_Device_request r;
  // AGAIN is legitimate while the receiver still drains earlier messages.
  int rc0;
  while ((rc0 = MPIX_Isend(buf, n, peer, tag, c, &r)) == MPIX_DEVICE_AGAIN) {
  }
  codes[0] = rc0;
  codes[1] = MPIX_Wait(&r, c);
  codes[2] = MPIX_Test(&r, c);  // inactive now
  codes[3] = MPIX_Send(buf, n, peer, tag + 1, c);
  int rc = MPIX_Isend(buf, n, peer, tag + 2, c, &r);
  while (rc == MPIX_DEVICE_AGAIN) rc = MPIX_Isend(buf, n, peer, tag + 2, c, &r);
  codes[4] = rc;
  while ((rc = MPIX_Test(&r, c)) == MPIX_DEVICE_PENDING) {
  }
  codes[5] = rc;
  // Invalid arguments: nothing is sent.
  codes[6] = MPIX_Isend(buf, n, c.size, tag, c, &r);
  codes[7] = MPIX_Isend(buf, n, -1, tag, c, &r);
  codes[8] = MPIX_Isend(buf, n, MPI_ANY_SOURCE, tag, c, &r);
  codes[9] = MPIX_Isend(buf, n, peer, MPI_ANY_TAG, c, &r);
  codes[10] = MPIX_Isend(buf, n, peer, c.tag_ub + (c.tag_ub < 0x7fffffff ? 1 : 0) , c, &r);
  codes[11] = MPIX_Isend(buf, n, peer, tag, c, nullptr);
  codes[12] = MPIX_Isend(nullptr, 5, peer, tag, c, &r);
}

__global__ void calls_recv(MPIX_Device_comm c, int peer, unsigned char *b0, unsigned char *b1, unsigned char *b2,
                           size_t n, int tag, int *codes, size_t *got) {
  MPIX_Device_request r;
  // The last message's receive is posted first: matching is by tag, not
  // arrival. Then the receives in the order the sends block on them (a
  // request advances only while its owner tests or waits on it, so a
  // blocking receive ahead of the one a streaming send waits for would
  // deadlock, as in MPI).
  MPIX_Device_request r2;
  codes[0] = MPIX_Irecv(b2, n, peer, tag + 2, c, &r2);
  codes[2] = MPIX_Irecv(b0, n, peer, tag, c, &r);
  int rc;
  while ((rc = MPIX_Test(&r, c)) == MPIX_DEVICE_PENDING) {
  }
  codes[3] = rc;
  got[0] = r.msg_bytes;
  codes[1] = MPIX_Recv(b1, n, peer, tag + 1, c, &got[1]);
  codes[4] = MPIX_Wait(&r2, c);
  got[2] = r2.msg_bytes;
  codes[5] = MPIX_Wait(&r2, c);  // inactive
  codes[6] = MPIX_Irecv(b0, n, MPI_ANY_SOURCE, tag, c, &r);
  codes[7] = MPIX_Irecv(b0, n, peer, MPI_ANY_TAG, c, &r);
  codes[8] = MPIX_Irecv(b0, n, c.size, tag, c, &r);
  codes[9] = MPIX_Irecv(nullptr, 1, peer, tag, c, &r);
}

// Block-cooperative variants (large sizes: one thread would copy slowly).
__global__ void __launch_bounds__(512) block_send(MPIX_Device_comm c, int peer, const unsigned char *buf, size_t n, int tag, int *code) {
  const int rc = MPIX_Send_block(buf, n, peer, tag, c);
  if (threadIdx.x == 0) *code = rc;
}
__global__ void __launch_bounds__(512) block_recv(MPIX_Device_comm c, int peer, unsigned char *buf, size_t cap, int tag, int *code,
                           size_t *got) {
  const int rc = MPIX_Recv_block(buf, cap, peer, tag, c, got);
  if (threadIdx.x == 0) *code = rc;
}

// One rank alone: block 0 sends to itself, block 1 receives (co-resident).
__global__ void __launch_bounds__(256) self_pair(MPIX_Device_comm c, const unsigned char *src, unsigned char *dst, size_t n, int tag,
                          int *codes) {
  if (blockIdx.x == 0) {
    const int rc = MPIX_Send_block(src, n, c.rank, tag, c);
    if (threadIdx.x == 0) codes[0] = rc;
  } else {
    size_t got = 0;
    const int rc = MPIX_Recv_block(dst, n, c.rank, tag, c, &got);
    if (threadIdx.x == 0) codes[1] = rc == MPIX_DEVICE_SUCCESS && got == n ? 0 : 1;
  }
}

struct DevBuf {
  unsigned char *p = nullptr;
  size_t n;
  explicit DevBuf(size_t bytes) : n(bytes) { CHECK_CUDA(cudaMalloc(&p, bytes + 64)); CHECK_CUDA(cudaMemset(p, 0xEE, bytes + 64)); }
  ~DevBuf() { cudaFree(p); }
  DevBuf(const DevBuf &) = delete;
  DevBuf &operator=(const DevBuf &) = delete;
  unsigned long long bad(size_t len, unsigned seed) {
    unsigned long long *d = nullptr, h = 0;
    CHECK_CUDA(cudaMalloc(&d, sizeof h));
    CHECK_CUDA(cudaMemset(d, 0, sizeof h));
    if (len) verify<<<264, 256>>>(p, len, seed, d);
    CHECK_CUDA(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    cudaFree(d);
    return h;
  }
  // Bytes past len must be untouched (0xEE).
  bool guard_ok(size_t len) {
    std::vector<unsigned char> g(64);
    CHECK_CUDA(cudaMemcpy(g.data(), p + len, 64, cudaMemcpyDeviceToHost));
    for (unsigned char v : g)
      if (v != 0xEE) return false;
    return true;
  }
};

template <class T>
struct DevArr {
  T *p = nullptr;
  size_t n;
  explicit DevArr(size_t count) : n(count) { CHECK_CUDA(cudaMalloc(&p, count * sizeof(T))); CHECK_CUDA(cudaMemset(p, 0x7f, count * sizeof(T))); }
  ~DevArr() { cudaFree(p); }
  DevArr(const DevArr &) = delete;
  DevArr &operator=(const DevArr &) = delete;
  std::vector<T> get() {
    std::vector<T> h(n);
    CHECK_CUDA(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

// Tiny-queue runs (DEV_P2P_SMALL) stop at this size: two processes on one
// GPU are time-sliced, so every ring turn-around can cost a time slice.
bool too_big(size_t n) { return std::getenv("DEV_P2P_SMALL") && n > 16385; }

void test_calls(const MPIX_Device_comm &h) {
  const size_t sizes[] = {0, 1, 8, 32, 33, 4096, 16385, 1u << 20};
  int tag = 100;
  for (size_t n : sizes) {
    if (too_big(n)) continue;
    phase("every call (test_calls)", long(n));
    tag += 3;
    if (g_rank == 0) {
      DevBuf src(n);
      if (n) fill<<<264, 256>>>(src.p, n, unsigned(n));
      DevArr<int> codes(13);
      calls_send<<<1, 1>>>(h, 1, src.p, n, tag, codes.p);
      CHECK_CUDA(cudaDeviceSynchronize());
      auto c = codes.get();
      for (int i = 0; i <= 5; ++i)
        expect(c[i] == (i == 2 ? MPIX_DEVICE_ERR_REQUEST : MPIX_DEVICE_SUCCESS), "send call status", i, c[i]);
      expect(c[6] == MPIX_DEVICE_ERR_RANK && c[7] == MPIX_DEVICE_ERR_RANK && c[8] == MPIX_DEVICE_ERR_RANK,
             "bad rank rejected", c[6], c[8]);
      expect(c[9] == MPIX_DEVICE_ERR_TAG, "MPI_ANY_TAG rejected", c[9]);
      expect(h.tag_ub == 0x7fffffff || c[10] == MPIX_DEVICE_ERR_TAG, "tag above MPI_TAG_UB rejected", c[10]);
      expect(c[11] == MPIX_DEVICE_ERR_ARG && c[12] == MPIX_DEVICE_ERR_ARG, "null request/buffer rejected");
    } else if (g_rank == 1) {
      DevBuf b0(n), b1(n), b2(n);
      DevArr<int> codes(10);
      DevArr<size_t> got(3);
      calls_recv<<<1, 1>>>(h, 0, b0.p, b1.p, b2.p, n, tag, codes.p, got.p);
      CHECK_CUDA(cudaDeviceSynchronize());
      auto c = codes.get();
      auto g = got.get();
      for (int i = 0; i <= 4; ++i) expect(c[i] == MPIX_DEVICE_SUCCESS, "recv call status", i, c[i]);
      expect(c[5] == MPIX_DEVICE_ERR_REQUEST, "wait on inactive request", c[5]);
      expect(c[6] == MPIX_DEVICE_ERR_RANK && c[7] == MPIX_DEVICE_ERR_TAG && c[8] == MPIX_DEVICE_ERR_RANK &&
                 c[9] == MPIX_DEVICE_ERR_ARG,
             "bad receive arguments rejected");
      for (int i = 0; i < 3; ++i) expect(g[i] == n, "received size", long(g[i]), long(n));
      DevBuf *bufs[] = {&b0, &b1, &b2};
      for (DevBuf *b : bufs) {
        expect(b->bad(n, unsigned(n)) == 0, "payload intact", long(n));
        expect(b->guard_ok(n), "nothing written past the message", long(n));
      }
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Large sizes with the block variants, and truncation.
void test_sizes(const MPIX_Device_comm &h) {
  const size_t sizes[] = {0, 7, 100, 16384, 16385, 1u << 20, (3u << 20) + 5, 64u << 20};
  int tag = 7000;
  for (size_t n : sizes) {
    ++tag;
    if (too_big(n)) continue;
    phase("block variants, sizes (test_sizes)", long(n));
    DevArr<int> code(1);
    if (g_rank == 0) {
      DevBuf src(n);
      if (n) fill<<<264, 256>>>(src.p, n, unsigned(tag));
      block_send<<<1, 512>>>(h, 1, src.p, n, tag, code.p);
      CHECK_CUDA(cudaDeviceSynchronize());
      expect(code.get()[0] == MPIX_DEVICE_SUCCESS, "block send", long(n));
    } else if (g_rank == 1) {
      DevBuf dst(n);
      DevArr<size_t> got(1);
      block_recv<<<1, 512>>>(h, 0, dst.p, n, tag, code.p, got.p);
      CHECK_CUDA(cudaDeviceSynchronize());
      expect(code.get()[0] == MPIX_DEVICE_SUCCESS, "block recv", long(n));
      expect(got.get()[0] == n, "block recv size", long(got.get()[0]), long(n));
      expect(dst.bad(n, unsigned(tag)) == 0, "block payload intact", long(n));
      expect(dst.guard_ok(n), "block recv guard", long(n));
    }
  }
  // Truncation: 3 MiB into 1 MiB + 3, and 30 B into 10 B.
  const size_t tr[][2] = {{(3u << 20), (1u << 20) + 3}, {30, 10}};
  for (auto &t : tr) {
    ++tag;
    if (too_big(t[0])) continue;
    phase("truncation (test_sizes)", long(t[0]));
    DevArr<int> code(1);
    if (g_rank == 0) {
      DevBuf src(t[0]);
      fill<<<264, 256>>>(src.p, t[0], unsigned(tag));
      block_send<<<1, 256>>>(h, 1, src.p, t[0], tag, code.p);
      CHECK_CUDA(cudaDeviceSynchronize());
      expect(code.get()[0] == MPIX_DEVICE_SUCCESS, "send of truncated message");
    } else if (g_rank == 1) {
      DevBuf dst(t[1]);
      DevArr<size_t> got(1);
      block_recv<<<1, 256>>>(h, 0, dst.p, t[1], tag, code.p, got.p);
      CHECK_CUDA(cudaDeviceSynchronize());
      expect(code.get()[0] == MPIX_DEVICE_ERR_TRUNCATE, "truncation reported", code.get()[0]);
      // The proxy path reports what MPI delivered (the buffer's size).
      const size_t want = h.path == MPIXD_PATH_PROXY ? t[1] : t[0];
      expect(got.get()[0] == want, "truncated: size reported", long(got.get()[0]), long(want));
      expect(dst.bad(t[1], unsigned(tag)) == 0 && dst.guard_ok(t[1]), "truncated: buffer filled, not overrun");
    }
  }
  // Buffers off 16-byte alignment (send from +1, receive at +3): the copies
  // must fall back to narrower accesses (a 16-byte access there faults).
  for (size_t n : {size_t(31), size_t(5000), size_t(70001)}) {
    ++tag;
    phase("unaligned buffers (test_sizes)", long(n));
    DevArr<int> code(1);
    if (g_rank == 0) {
      DevBuf src(n + 1);
      fill<<<264, 256>>>(src.p + 1, n, unsigned(tag));
      block_send<<<1, 128>>>(h, 1, src.p + 1, n, tag, code.p);
      CHECK_CUDA(cudaDeviceSynchronize());
      expect(code.get()[0] == MPIX_DEVICE_SUCCESS, "unaligned send", long(n));
    } else if (g_rank == 1) {
      DevBuf dst(n + 3);
      DevArr<size_t> got(1);
      DevArr<unsigned long long> bad(1);
      CHECK_CUDA(cudaMemset(bad.p, 0, sizeof(unsigned long long)));
      block_recv<<<1, 128>>>(h, 0, dst.p + 3, n, tag, code.p, got.p);
      verify<<<264, 256>>>(dst.p + 3, n, unsigned(tag), bad.p);
      CHECK_CUDA(cudaDeviceSynchronize());
      expect(code.get()[0] == MPIX_DEVICE_SUCCESS && got.get()[0] == n, "unaligned recv", long(n));
      expect(bad.get()[0] == 0 && dst.guard_ok(n + 3), "unaligned payload", long(n));
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

__device__ unsigned rng(unsigned &s);

// ---- 1b. medium messages (issue 26): flagged lines, one hand-over ----

__global__ void thread_send(MPIX_Device_comm c, int peer, const unsigned char *buf, size_t n, int tag, int *code) {
  *code = MPIX_Send(buf, n, peer, tag, c);
}
__global__ void thread_recv(MPIX_Device_comm c, int peer, unsigned char *buf, size_t cap, int tag, int *code,
                            size_t *got) {
  *code = MPIX_Recv(buf, cap, peer, tag, c, got);
}

// Medium-ring tickets this rank has taken towards peer (all channels): a
// medium message's slots, so the test sees which path carried it.
unsigned long long mid_tickets(const MPIX_Device_comm &h, int peer) {
  if (h.path != MPIXD_PATH_IPC || h.mid_slots == 0) return 0;
  unsigned long long sum = 0;
  for (uint32_t c = 0; c < h.channels; ++c) {
    uint32_t t = 0;
    CHECK_CUDA(cudaMemcpy(&t, &mpixd_mid_schan_of(&h, h.local, peer, c)->tail, sizeof t, cudaMemcpyDeviceToHost));
    sum += t;
  }
  return sum;
}

// Thread g sends `msgs` messages of 33 .. 4128 bytes to thread g of the
// peer on tag 20000 + g (the table), each refilled right after its send
// returns; the receiver checks each against its pattern.
__global__ void __launch_bounds__(128) mid_many(MPIX_Device_comm c, int peer, bool sending, int msgs,
                                                unsigned char *scratch, unsigned *errors) {
  const unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned char *buf = scratch + size_t(g) * 4160;
  unsigned s = 99u + g;
  for (int i = 0; i < msgs; ++i) {
    const size_t n = 33 + rng(s) % 4096;
    const unsigned seed = g * 1000u + unsigned(i);
    if (sending) {
      for (size_t j = 0; j < n; ++j) buf[j] = pattern(j, seed);
      if (MPIX_Send(buf, n, peer, 20000 + int(g), c) != MPIX_DEVICE_SUCCESS) atomicAdd(errors, 1u);
    } else {
      size_t got = 0;
      if (MPIX_Recv(buf, 4160, peer, 20000 + int(g), c, &got) != MPIX_DEVICE_SUCCESS || got != n) {
        atomicAdd(errors, 1u);
        continue;
      }
      for (size_t j = 0; j < n; ++j)
        if (buf[j] != pattern(j, seed)) {
          atomicAdd(errors, 1u);
          break;
        }
    }
  }
}

void test_mid(const MPIX_Device_comm &h) {
  // Around the line (8 B), slot (512 B) and MPIX_DEVICE_MID_MAX (16 KiB by
  // default) boundaries, by one thread and by a block, at odd offsets.
  const size_t sizes[] = {33, 39, 40, 41, 100, 511, 512, 513, 1000, 2048, 4095, 8191, 8192, 8193, 9000, 16383, 16384, 16385};
  const bool cells = h.path == MPIXD_PATH_IPC && ((h.cell_peers >> (1 - g_rank)) & 1u) != 0;
  int tag = 15000;
  for (size_t n : sizes)
    for (int block = 0; block < 2; ++block)
      for (int lane_tag = 0; lane_tag < 2; ++lane_tag) {
        const int t = lane_tag ? 5 : ++tag;
        phase("medium messages (test_mid)", long(n));
        DevArr<int> code(1);
        if (g_rank == 0) {
          DevBuf src(n + 1);
          fill<<<264, 256>>>(src.p + 1, n, unsigned(n + 7 * block));
          const unsigned long long before = mid_tickets(h, 1);
          if (block) block_send<<<1, 256>>>(h, 1, src.p + 1, n, t, code.p);
          else thread_send<<<1, 1>>>(h, 1, src.p + 1, n, t, code.p);
          CHECK_CUDA(cudaDeviceSynchronize());
          expect(code.get()[0] == MPIX_DEVICE_SUCCESS, "medium send", long(n));
          const bool mid = cells && n > MPIXD_INLINE && n <= h.mid_max;
          expect(mid_tickets(h, 1) - before == (mid ? mpixd_mid_nslots(n) : 0), "medium ring carried it",
                 long(mid_tickets(h, 1) - before), long(n));
        } else if (g_rank == 1) {
          DevBuf dst(n + 3);
          DevArr<size_t> got(1);
          if (block) block_recv<<<1, 256>>>(h, 0, dst.p + 3, n + 1, t, code.p, got.p);
          else thread_recv<<<1, 1>>>(h, 0, dst.p + 3, n + 1, t, code.p, got.p);
          CHECK_CUDA(cudaDeviceSynchronize());
          expect(code.get()[0] == MPIX_DEVICE_SUCCESS && got.get()[0] == n, "medium recv", long(n));
          DevArr<unsigned long long> bad(1);
          CHECK_CUDA(cudaMemset(bad.p, 0, sizeof(unsigned long long)));
          verify<<<264, 256>>>(dst.p + 3, n, unsigned(n + 7 * block), bad.p);
          CHECK_CUDA(cudaDeviceSynchronize());
          expect(bad.get()[0] == 0, "medium payload intact", long(n));
          expect(dst.guard_ok(n + 3), "nothing past the medium message", long(n));
        }
      }
  // Truncated: 5000 B into 100 and into 0, by a thread and by a block.
  for (size_t cap : {size_t(100), size_t(0)})
    for (int block = 0; block < 2; ++block) {
      ++tag;
      phase("medium truncation (test_mid)", long(cap));
      DevArr<int> code(1);
      if (g_rank == 0) {
        DevBuf src(5000);
        fill<<<264, 256>>>(src.p, 5000, unsigned(tag));
        thread_send<<<1, 1>>>(h, 1, src.p, 5000, tag, code.p);
        CHECK_CUDA(cudaDeviceSynchronize());
        expect(code.get()[0] == MPIX_DEVICE_SUCCESS, "send of a truncated medium message");
      } else if (g_rank == 1) {
        DevBuf dst(cap + 1);
        DevArr<size_t> got(1);
        if (block) block_recv<<<1, 256>>>(h, 0, cap ? dst.p : nullptr, cap, tag, code.p, got.p);
        else thread_recv<<<1, 1>>>(h, 0, cap ? dst.p : nullptr, cap, tag, code.p, got.p);
        CHECK_CUDA(cudaDeviceSynchronize());
        expect(code.get()[0] == MPIX_DEVICE_ERR_TRUNCATE, "medium truncation reported", code.get()[0]);
        const size_t want = h.path == MPIXD_PATH_PROXY ? cap : 5000;
        expect(got.get()[0] == want, "medium truncated: size", long(got.get()[0]), long(want));
        expect(cap == 0 || dst.bad(cap, unsigned(tag)) == 0, "medium truncated: the buffer's bytes");
        expect(dst.guard_ok(cap), "medium truncated: nothing past the buffer");
      }
    }
  MPI_Barrier(MPI_COMM_WORLD);
  // Thousands in flight: 4096 threads a side, 6 messages each through 32
  // medium rings of 64 slots (back-pressure on every ring), buffers
  // refilled on return.
  const bool small = std::getenv("DEV_P2P_SMALL") != nullptr;
  const int blocks = small ? 4 : 32, msgs = small ? 3 : 6;
  phase("medium messages, thousands in flight (test_mid)");
  DevArr<unsigned> errors(1);
  CHECK_CUDA(cudaMemset(errors.p, 0, sizeof(unsigned)));
  DevBuf scratch(size_t(blocks) * 128 * 4160);
  const unsigned long long before = mid_tickets(h, 1);
  if (g_rank < 2) {
    mid_many<<<blocks, 128>>>(h, 1 - g_rank, g_rank == 0, msgs, scratch.p, errors.p);
    CHECK_CUDA(cudaDeviceSynchronize());
    expect(errors.get()[0] == 0, "medium, thousands in flight: statuses, sizes, payloads", errors.get()[0]);
    if (g_rank == 0 && cells && h.mid_max >= 4128)
      expect(mid_tickets(h, 1) - before >= unsigned(blocks * 128 * msgs), "medium ring carried them");
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// ---- 2. many threads: random tags, multiplicities, sizes ----

// Thread g of the sender talks to thread g of the receiver on its own tags
// (tag = g * 4 + k, k < 4); message m of a key carries (key, m) in its
// pattern seed, so the receiver checks FIFO order per key and content.
__device__ unsigned rng(unsigned &s) {
  s = s * 1664525u + 1013904223u;
  return s >> 8;
}

constexpr int kMaxMsg = 200;

// Buffers in global memory: the proxy path hands messages above 32 bytes
// to the host by address.
__device__ void many_body(MPIX_Device_comm c, int peer, bool sending, unsigned g, int msgs, unsigned seed,
                          unsigned *errors, unsigned char *scratch) {
  unsigned s = seed ^ (g * 7919u);
  unsigned count[4] = {0, 0, 0, 0};
  unsigned char *buf = scratch + size_t(g) * kMaxMsg;
  for (int i = 0; i < msgs; ++i) {
    const unsigned k = rng(s) % 4;
    // Mostly inline, some staged (above 32 B).
    const size_t n = (rng(s) % 8 == 0) ? 33 + rng(s) % (kMaxMsg - 33) : rng(s) % 33;
    const int tag = int(g * 4 + k);
    const unsigned key_seed = (g * 4 + k) * 131u + count[k]++;
    if (sending) {
      for (size_t j = 0; j < n; ++j) buf[j] = pattern(j, key_seed);
      const int rc = MPIX_Send(buf, n, peer, tag, c);
      if (rc != MPIX_DEVICE_SUCCESS) atomicAdd(errors, 1u);
    } else {
      size_t got = 0;
      const int rc = MPIX_Recv(buf, kMaxMsg, peer, tag, c, &got);
      if (rc != MPIX_DEVICE_SUCCESS || got != n) {
        atomicAdd(errors, 1u);
        continue;
      }
      for (size_t j = 0; j < n; ++j)
        if (buf[j] != pattern(j, key_seed)) {
          atomicAdd(errors, 1u);
          break;
        }
    }
  }
}

__global__ void __launch_bounds__(128) many(MPIX_Device_comm c, int peer, bool sending, int msgs, unsigned seed,
                                            unsigned *errors, unsigned char *scratch) {
  many_body(c, peer, sending, blockIdx.x * blockDim.x + threadIdx.x, msgs, seed, errors, scratch);
}

// Both directions in one grid: the first half of the blocks sends (seed
// send_seed), the second half receives what the peer's first half sends
// (seed recv_seed), each half with its own scratch.
__global__ void __launch_bounds__(128) many_both(MPIX_Device_comm c, int peer, int msgs, unsigned send_seed,
                                                 unsigned recv_seed, unsigned *errors, unsigned char *send_scratch,
                                                 unsigned char *recv_scratch) {
  const unsigned half = gridDim.x / 2;
  const bool sending = blockIdx.x < half;
  many_body(c, peer, sending, (blockIdx.x % half) * blockDim.x + threadIdx.x, msgs, sending ? send_seed : recv_seed,
            errors, sending ? send_scratch : recv_scratch);
}

void test_many(const MPIX_Device_comm &h) {
  const bool small = std::getenv("DEV_P2P_SMALL") != nullptr;
  // DEV_P2P_BLOCKS: fewer threads per side (an even count of blocks).
  const char *nb = std::getenv("DEV_P2P_BLOCKS");
  const int blocks = nb && std::atoi(nb) >= 2 ? std::atoi(nb) / 2 * 2 : small ? 8 : 66;
  const int threads = 128, msgs = small ? 10 : 60;
  phase("many threads, one direction (test_many)");
  DevArr<unsigned> errors(1);
  DevBuf scratch(size_t(2) * blocks * threads * kMaxMsg);
  unsigned char *other = scratch.p + size_t(blocks) * threads * kMaxMsg;
  CHECK_CUDA(cudaMemset(errors.p, 0, sizeof(unsigned)));
  if (g_rank < 2) {
    many<<<blocks, threads>>>(h, 1 - g_rank, g_rank == 0, msgs, 12345u, errors.p, scratch.p);
    CHECK_CUDA(cudaDeviceSynchronize());
    expect(errors.get()[0] == 0, "many threads: statuses, sizes, FIFO per key, payloads", errors.get()[0]);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // And both directions at once: each rank's blocks split into senders and
  // receivers in one grid. (Not two kernels on two streams: nothing makes
  // them run at once, and compute-sanitizer, CUDA_LAUNCH_BLOCKING or a busy
  // GPU serialise them: each rank's senders then wait for receivers that
  // never start.) On the proxy path a posted receive holds a
  // queue slot until it completes, so a queue smaller than the receives
  // outstanding on both sides could deadlock (documented): the grid then
  // shrinks to fit the queue (two blocks), so the case always runs.
  CHECK_CUDA(cudaMemset(errors.p, 0, sizeof(unsigned)));
  phase("many threads, both directions (test_many)");
  unsigned both_blocks = unsigned(blocks / 2) * 2, both_threads = unsigned(threads);
  if (h.path == MPIXD_PATH_PROXY && h.pq_slots < both_blocks * both_threads) {
    both_blocks = 2;
    both_threads = std::max(1u, std::min(both_threads, h.pq_slots / 2));
    if (g_rank == 0)
      std::printf("both directions at once: 2 blocks of %u threads (proxy queue of %u)\n", both_threads, h.pq_slots);
  }
  if (g_rank < 2) {
    launch_coresident(many_both, both_blocks, both_threads, h, 1 - g_rank, msgs, 777u + g_rank,
                      777u + (1 - g_rank), errors.p, scratch.p, other);
    CHECK_CUDA(cudaDeviceSynchronize());
    expect(errors.get()[0] == 0, "both directions at once", errors.get()[0]);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// ---- 3. back-pressure and separately launched kernels ----

// Isends of `total` 4-byte messages from vals (global memory: a pending
// send reads its buffer later), each tested once: how many completed at
// once (*placed); where the proxy queue says AGAIN, the rest is left to
// finish_sends (*issued).
__global__ void start_sends(MPIX_Device_comm c, int peer, int tag, int total, int *vals, MPIX_Device_request *reqs,
                            int *done, int *placed, int *issued, int *code) {
  int n = 0, i = 0, rc = MPIX_DEVICE_SUCCESS;
  for (; i < total; ++i) {
    vals[i] = i;
    rc = MPIX_Isend(&vals[i], sizeof(int), peer, tag, c, &reqs[i]);
    if (rc != MPIX_DEVICE_SUCCESS) break;
    done[i] = MPIX_Test(&reqs[i], c) == MPIX_DEVICE_SUCCESS;
    n += done[i];
  }
  *placed = n;
  *issued = i;
  *code = rc == MPIX_DEVICE_AGAIN ? MPIX_DEVICE_SUCCESS : rc;
}

// Completes the pending sends in order, then sends the rest blocking:
// launched before the receiver exists, so it spins on a full table.
__global__ void finish_sends(MPIX_Device_comm c, int peer, int tag, int total, int *vals, MPIX_Device_request *reqs,
                             const int *done, int issued, int *code) {
  int rc = MPIX_DEVICE_SUCCESS;
  for (int i = 0; i < issued && rc == MPIX_DEVICE_SUCCESS; ++i)
    if (!done[i]) rc = MPIX_Wait(&reqs[i], c);
  for (int i = issued; i < total && rc == MPIX_DEVICE_SUCCESS; ++i) {
    vals[i] = i;
    rc = MPIX_Send(&vals[i], sizeof(int), peer, tag, c);
  }
  *code = rc;
}

__global__ void recv_seq(MPIX_Device_comm c, int peer, int tag, int count, int *bad) {
  int errs = 0;
  for (int i = 0; i < count; ++i) {
    int v = -1;
    size_t got = 0;
    if (MPIX_Recv(&v, sizeof v, peer, tag, c, &got) != MPIX_DEVICE_SUCCESS || got != sizeof v || v != i) ++errs;
  }
  *bad = errs;
}

// Back-pressure: more sends than the receiver's table holds, the receiver
// launched only after the sender spins. With a table of one bucket
// (MPIX_DEVICE_TABLE=1) exactly MPIXD_WAYS sends complete at once; on a
// lane tag (below MPIX_DEVICE_LANE_TAGS) exactly MPIXD_LANE, whatever the
// table's size (the lane carried them).
void test_backpressure(const MPIX_Device_comm &h, int tag) {
  const int total = int(MPIXD_WAYS) * 4 + 17;
  phase("back-pressure, separate launches (test_backpressure)");
  DevArr<int> out(4), vals(total), done(total);
  DevArr<MPIX_Device_request> reqs(total);
  if (g_rank == 0) {
    start_sends<<<1, 1>>>(h, 1, tag, total, vals.p, reqs.p, done.p, out.p, out.p + 1, out.p + 2);
    CHECK_CUDA(cudaDeviceSynchronize());
    const auto o = out.get();
    expect(o[2] == MPIX_DEVICE_SUCCESS, "MPIX_Isend under back-pressure", o[2]);
    if (h.path == MPIXD_PATH_IPC && unsigned(tag) < h.lane_tags)
      expect(o[0] == int(MPIXD_LANE), "sends complete at once exactly while the lane has room", o[0], MPIXD_LANE);
    else if (h.path == MPIXD_PATH_IPC && h.buckets == 1)
      expect(o[0] == int(MPIXD_WAYS), "sends complete at once exactly while the table has room", o[0], MPIXD_WAYS);
    else if (h.path == MPIXD_PATH_IPC)
      expect(o[0] >= 1, "some sends complete at once", o[0]);
    else  // the host completes proxied sends: none at once, the queue takes some
      expect(o[1] >= 1, "the proxy queue takes some sends", o[1]);
    finish_sends<<<1, 1>>>(h, 1, tag, total, vals.p, reqs.p, done.p, o[1], out.p + 3);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_CUDA(cudaDeviceSynchronize());
    expect(out.get()[3] == MPIX_DEVICE_SUCCESS, "blocked sender completes once the receiver runs");
  } else if (g_rank == 1) {
    MPI_Barrier(MPI_COMM_WORLD);  // the sender kernel is already spinning
    recv_seq<<<1, 1>>>(h, 0, tag, total, out.p);
    CHECK_CUDA(cudaDeviceSynchronize());
    expect(out.get()[0] == 0, "all messages, in order, after back-pressure", out.get()[0]);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Proxy path: a kernel's MPIX_Send received by host MPI_Recv and a host
// MPI_Send received by a kernel's MPIX_Recv, on the same communicator.
__global__ void interop_kernel(MPIX_Device_comm c, int peer, bool sending, unsigned char *buf, size_t n, int tag,
                               int *code, size_t *got) {
  if (sending) *code = MPIX_Send(buf, n, peer, tag, c);
  else *code = MPIX_Recv(buf, n, peer, tag, c, got);
}

void test_interop(const MPIX_Device_comm &h, MPI_Comm comm) {
  for (size_t n : {size_t(0), size_t(8), size_t(32), size_t(4000), size_t(3u << 20)}) {
    phase("host/device interoperation (test_interop)", long(n));
    DevBuf buf(n);
    DevArr<int> code(1);
    DevArr<size_t> got(1);
    if (g_rank == 0) {  // device -> host, then host -> device
      if (n) fill<<<264, 256>>>(buf.p, n, 3u);
      CHECK_CUDA(cudaDeviceSynchronize());
      interop_kernel<<<1, 1>>>(h, 1, true, buf.p, n, 900, code.p, got.p);
      CHECK_CUDA(cudaDeviceSynchronize());
      expect(code.get()[0] == MPIX_DEVICE_SUCCESS, "device send to host receive", long(n));
      DevBuf in(n);
      interop_kernel<<<1, 1>>>(h, 1, false, in.p, n, 901, code.p, got.p);
      CHECK_CUDA(cudaDeviceSynchronize());
      expect(code.get()[0] == MPIX_DEVICE_SUCCESS && got.get()[0] == n, "device receive of host send", long(n));
      expect(in.bad(n, 4u) == 0, "host-to-device payload", long(n));
    } else if (g_rank == 1) {
      std::vector<unsigned char> host(n + 1);
      MPI_Status st;
      int count = -1;
      MPI_Recv(host.data(), int(n), MPI_BYTE, 0, 900, comm, &st);
      MPI_Get_count(&st, MPI_BYTE, &count);
      bool ok = count == int(n);
      for (size_t i = 0; i < n && ok; ++i) ok = host[i] == pattern(i, 3u);
      expect(ok, "host receive of device send", long(n));
      for (size_t i = 0; i < n; ++i) host[i] = pattern(i, 4u);
      MPI_Send(host.data(), int(n), MPI_BYTE, 0, 901, comm);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

void test_self(const MPIX_Device_comm &h) {
  for (size_t n : {size_t(0), size_t(20), size_t(5000), size_t(9u << 20)}) {
    phase("send to self (test_self)", long(n));
    DevBuf src(n), dst(n);
    if (n) fill<<<264, 256>>>(src.p, n, 99u);
    DevArr<int> codes(2);
    launch_coresident(self_pair, 2, 256, h, src.p, dst.p, n, 5, codes.p);
    CHECK_CUDA(cudaDeviceSynchronize());
    auto c = codes.get();
    expect(c[0] == 0 && c[1] == 0, "send to self", c[0], c[1]);
    expect(dst.bad(n, 99u) == 0 && dst.guard_ok(n), "self payload", long(n));
  }
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const int gpu = mpix_test::use_gpu_of_rank(g_rank);
  if (gpu < 0) {
    if (g_rank == 0) std::printf("skipped: no GPU\n");
    MPI_Finalize();
    return 77;
  }
  Watchdog watchdog;
  g_watchdog = &watchdog;
  phase("handle creation");

  // A communicator with wildcards allowed is refused with MPIX_ERR_WILDCARD.
  MPI_Comm plain;
  MPI_Comm_dup(MPI_COMM_WORLD, &plain);
  MPI_Comm_set_errhandler(plain, MPI_ERRORS_RETURN);
  MPIX_Device_comm h{};
  int rc = MPIX_Comm_device_handle(plain, &h);
  int cls = 0;
  MPI_Error_class(rc, &cls);
  expect(rc != MPI_SUCCESS && cls == MPIX_ERR_WILDCARD, "wildcard communicator refused", cls, MPIX_ERR_WILDCARD);
  rc = MPIX_Comm_device_handle(plain, nullptr);
  expect(rc != MPI_SUCCESS, "null handle refused");
  MPI_Comm_free(&plain);

  MPI_Comm comm;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &comm);
  // Truncation on the proxy path goes through MPI, hence the handler.
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  rc = MPIX_Comm_device_handle(comm, &h);
  expect(rc == MPI_SUCCESS, "MPIX_Comm_device_handle", rc);
  MPIX_Device_comm again{};
  MPIX_Comm_device_handle(comm, &again);
  expect(again.local == h.local && again.pq == h.pq, "one set of queues per communicator");
  if (rc == MPI_SUCCESS) {
    g_dump = &h;
    if (g_rank == 0)
      std::printf("%s path; table %u buckets x %u, %u keys; lanes for tags below %u; rings %u x %u slots x %u B; "
                  "proxy queue %u\n",
                  h.path == MPIXD_PATH_PROXY ? "proxy" : "ipc", h.buckets, MPIXD_WAYS, h.keys, h.lane_tags, h.channels,
                  h.slots, h.slot_bytes, h.pq_slots);
    if (g_size == 1) {
      test_self(h);
    } else {
      test_calls(h);
      test_sizes(h);
      test_mid(h);
      test_backpressure(h, 30000);
      test_backpressure(h, 3);
      test_many(h);
      if (h.path == MPIXD_PATH_PROXY) test_interop(h, comm);
    }
  }
  g_dump = nullptr;
  // Freeing the communicator releases the mailboxes (attribute callback);
  // a second communicator gets fresh ones that work.
  MPI_Comm_free(&comm);
  phase("free and re-create the handle");
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &comm);
  rc = MPIX_Comm_device_handle(comm, &h);
  expect(rc == MPI_SUCCESS, "handle on a second communicator", rc);
  if (rc == MPI_SUCCESS && g_size == 1) test_self(h);
  if (rc == MPI_SUCCESS && g_size > 1) test_backpressure(h, 3);
  phase("final free");
  MPI_Comm_free(&comm);

  int total = 0;
  MPI_Allreduce(&g_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0 && total == 0) std::fputs(" No Errors\n", stdout);  // one write: see test/mpi/mtest.h mtest_printf
  g_watchdog = nullptr;
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
