// Device-initiated two-sided point-to-point (include/mpix_device.h):
//   latency  MPIX_Send/MPIX_Recv ping-pong, 8 B .. 16 MiB (one thread up to
//            1 KiB, MPIX_Send_block/MPIX_Recv_block of 512 threads above),
//            half round trip timed on the GPU (%globaltimer);
//   rate     every SM sending 8 B messages (a tag per thread), each matched
//            by a receiving thread in the receiver's message table;
//   bw16     16 MiB split over block pairs (one tag each), block variants,
//            against cudaMemcpy device-to-device (the copy ceiling here);
//   raw      what SMs' writes into another GPU's memory reach without the
//            protocol (grid-strided, or chunked per block as the rings are);
//   putsig   the floor: a one-sided put+signal ping-pong by hand (NVSHMEM's
//            put_signal + wait_until between GPUs of one node), with and
//            without a system fence before the flag;
//   call     what one thread's call costs when it has nothing to wait for:
//            an 8 B MPIX_Send into a ring with room, an MPIX_Recv of a
//            message already there (rank 0's ring to itself). Against the
//            latency rows, the rest of a half round trip is noticing.
// Two placements in one run: "ipc" = rank 0 <-> rank 1 through CUDA IPC
// (two processes; when both sit on one GPU without MPS their kernels are
// time-sliced, which this number then measures), and "self" = two groups of
// blocks of one kernel of rank 0 talking through its own mailbox (same
// protocol and memory traffic, no second context). "proxy"/"pxself": the
// same ping-pong through the proxy path (MPIX_DEVICE_PATH=proxy).
//   mpiexec -n 2 bench/bench_dev_p2p [CSV]
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdlib.h>
#include <vector>

#include "mpix.h"
#include "mpix_device.h"
#include "bench/gpu_span.h"
#include "test/gpu/gpu_common.h"

namespace {


__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

constexpr size_t kBlockAbove = 1024;

// The floor under any two-sided protocol here: a one-sided put+signal
// ping-pong by hand (what NVSHMEM's put_signal + wait_until does between
// GPUs of one node): 8 bytes and a flag written into the peer's word with a
// release store, the peer spinning on its own word with acquire loads.
// `fence` adds a __threadfence_system() before each flag (its cost).
struct PutSig {
  unsigned long long payload;
  unsigned flag;
};

__device__ void putsig_pingpong(PutSig *mine, PutSig *theirs, bool initiator, int iters, int warm, bool fence,
                                unsigned long long *ns) {
  unsigned long long t0 = 0;
  for (int i = 0; i < iters + warm; ++i) {
    if (i == warm) t0 = now_ns();
    const unsigned want = unsigned(i) + 1;
    if (!initiator) {
      while (mpixd_load_acquire(&mine->flag) != want) {
      }
    }
    theirs->payload = mine->payload + 1;
    if (fence) __threadfence_system();
    mpixd_store_release(&theirs->flag, want);
    if (initiator) {
      while (mpixd_load_acquire(&mine->flag) != want) {
      }
    }
  }
  if (initiator) *ns = now_ns() - t0;
}

__global__ void putsig_self(PutSig *a, PutSig *b, int iters, int warm, bool fence, unsigned long long *ns) {
  if (threadIdx.x == 0) putsig_pingpong(blockIdx.x == 0 ? a : b, blockIdx.x == 0 ? b : a, blockIdx.x == 0, iters,
                                        warm, fence, ns);
}

__global__ void putsig_ipc(PutSig *mine, PutSig *theirs, bool initiator, int iters, int warm, bool fence,
                           unsigned long long *ns) {
  putsig_pingpong(mine, theirs, initiator, iters, warm, fence, ns);
}

// What one memory operation of the protocol costs one thread here, each in
// a dependent chain (the next address or value waits for the last result),
// stores back to back: ns per operation, to split the per-call costs.
constexpr int kOps = 13;
const char *const kOpNames[kOps] = {"ld.volatile", "ld.acq.gpu", "ld.acq.sys", "atom.add", "cas.gpu", "cas.acq.sys",
                                    "st.rel.gpu", "st.rel.sys", "red.rel.gpu", "red.rel.sys", "fence.gpu",
                                    "fence.sys", "match.any"};
__global__ void op_costs(unsigned *w, int iters, unsigned long long *ns) {
  unsigned x = 0;
  for (int op = 0; op < kOps; ++op) {
    const unsigned long long t0 = now_ns();
    for (int i = 0; i < iters; ++i) {
      unsigned *p = w + (x >> 30);  // x stays small: always w, but after x is known
      switch (op) {
        case 0: asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(x) : "l"(p) : "memory"); break;
        case 1: asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(x) : "l"(p) : "memory"); break;
        case 2: asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(x) : "l"(p) : "memory"); break;
        case 3: x = atomicAdd(p, 0u); break;
        case 4: x = atomicCAS(p, 0u, 0u); break;
        case 5: asm volatile("atom.acquire.sys.global.cas.b32 %0, [%1], 0, 0;" : "=r"(x) : "l"(p) : "memory"); break;
        case 6: asm volatile("st.release.gpu.global.u32 [%0], 0;" ::"l"(p) : "memory"); break;
        case 7: asm volatile("st.release.sys.global.u32 [%0], 0;" ::"l"(p) : "memory"); break;
        case 8: asm volatile("red.release.gpu.global.and.b32 [%0], 0;" ::"l"(p) : "memory"); break;
        case 9: asm volatile("red.release.sys.global.and.b32 [%0], 0;" ::"l"(p) : "memory"); break;
        case 10: __threadfence(); break;
        case 11: __threadfence_system(); break;
        case 12: x = __match_any_sync(__activemask(), x) >> 1; break;
      }
    }
    ns[op] = now_ns() - t0;
  }
  if (x == 12345) *w = x;
}

// Per-call costs: batches of k sends to this rank's own ring (k <= slots,
// and at most MPIXD_LANE on a lane tag, so none waits for room), then k
// receives of them (all arrived).
__global__ void call_costs(MPIX_Device_comm c, int tag, int k, int batches, unsigned long long *send_ns,
                           unsigned long long *recv_ns, unsigned char *buf, size_t n) {
  unsigned long long ts = 0, tr = 0;
  for (int b = 0; b < batches; ++b) {
    const unsigned long long t0 = now_ns();
    for (int i = 0; i < k; ++i) MPIX_Send(buf, n, c.rank, tag, c);
    const unsigned long long t1 = now_ns();
    for (int i = 0; i < k; ++i) MPIX_Recv(buf, n, c.rank, tag, c, nullptr);
    ts += t1 - t0;
    tr += now_ns() - t1;
  }
  *send_ns = ts;
  *recv_ns = tr;
}

// Raw NVLink writes, no protocol: n bytes from src into the peer's memory,
// `rounds` times, either grid-strided (every thread kW 16-byte words in
// flight, the whole grid across the buffer) or chunked as the protocol
// copies (block b takes chunks b, b + gridDim.x, ... of `chunk` bytes, its
// threads across each: mpixd_copy). What the SMs' writes to another GPU can
// reach, against the protocol's bandwidth rows.
template <int kW>
__global__ void raw_put_strided(mpixd_w16 *dst, const mpixd_w16 *src, size_t words, int rounds) {
  const size_t lanes = size_t(gridDim.x) * blockDim.x;
  for (int r = 0; r < rounds; ++r) {
    size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; i + (kW - 1) * lanes < words; i += kW * lanes) {
      mpixd_w16 v[kW];
#pragma unroll
      for (int k = 0; k < kW; ++k) v[k] = src[i + k * lanes];
#pragma unroll
      for (int k = 0; k < kW; ++k) dst[i + k * lanes] = v[k];
    }
    for (; i < words; i += lanes) dst[i] = src[i];
  }
}

__global__ void raw_put_chunked(unsigned char *dst, const unsigned char *src, size_t n, size_t chunk, int rounds) {
  for (int r = 0; r < rounds; ++r)
    for (size_t off = size_t(blockIdx.x) * chunk; off < n; off += size_t(gridDim.x) * chunk)
      mpixd_copy(dst + off, src + off, n - off < chunk ? n - off : chunk, threadIdx.x, blockDim.x);
}

// Ping-pong: `initiator` sends first. With one kernel per side (ipc) every
// thread of block 0 takes part; in self mode block 0 pings, block 1 pongs.
__device__ void pingpong(MPIX_Device_comm c, int peer, bool initiator, unsigned char *buf, size_t n, int iters,
                         int warm, unsigned long long *ns) {
  unsigned long long t0 = 0;
  for (int i = 0; i < iters + warm; ++i) {
    if (i == warm) t0 = now_ns();
    if (n > kBlockAbove) {
      if (initiator) {
        MPIX_Send_block(buf, n, peer, 1, c);
        MPIX_Recv_block(buf, n, peer, 2, c, nullptr);
      } else {
        MPIX_Recv_block(buf, n, peer, 1, c, nullptr);
        MPIX_Send_block(buf, n, peer, 2, c);
      }
    } else if (threadIdx.x == 0) {
      if (initiator) {
        MPIX_Send(buf, n, peer, 1, c);
        MPIX_Recv(buf, n, peer, 2, c, nullptr);
      } else {
        MPIX_Recv(buf, n, peer, 1, c, nullptr);
        MPIX_Send(buf, n, peer, 2, c);
      }
    }
  }
  if (initiator && threadIdx.x == 0) *ns = now_ns() - t0;
}

__global__ void __launch_bounds__(512) pp_ipc(MPIX_Device_comm c, int peer, bool initiator, unsigned char *buf, size_t n, int iters,
                       int warm, unsigned long long *ns) {
  pingpong(c, peer, initiator, buf, n, iters, warm, ns);
}

__global__ void __launch_bounds__(512) pp_self(MPIX_Device_comm c, unsigned char *a, unsigned char *b, size_t n, int iters, int warm,
                        unsigned long long *ns) {
  pingpong(c, c.rank, blockIdx.x == 0, blockIdx.x == 0 ? a : b, n, iters, warm, ns);
}

// Message rate: thread g of the senders sends `msgs` 8-byte messages with
// tag g to thread g of the receivers. first/last: global timer bounds.
__device__ void rate_body(MPIX_Device_comm c, int peer, bool sending, unsigned g, int msgs,
                          unsigned long long *first, unsigned long long *last, unsigned *bad) {
  const unsigned long long t0 = now_ns();
  atomicMin(first, t0);
  unsigned long long v = 0;
  for (int i = 0; i < msgs; ++i) {
    if (sending) {
      v = (unsigned long long)g << 32 | i;
      MPIX_Send(&v, 8, peer, (int)g, c);
    } else {
      MPIX_Recv(&v, 8, peer, (int)g, c, nullptr);
      if (v != ((unsigned long long)g << 32 | i)) atomicAdd(bad, 1u);
    }
  }
  atomicMax(last, now_ns());
}

__global__ void __launch_bounds__(256, 2) rate_ipc(MPIX_Device_comm c, int peer, bool sending, int msgs, unsigned long long *first,
                         unsigned long long *last, unsigned *bad) {
  rate_body(c, peer, sending, blockIdx.x * blockDim.x + threadIdx.x, msgs, first, last, bad);
}

// Senders and receivers must be co-resident (they wait on each other).
__global__ void __launch_bounds__(256, 2) rate_self(MPIX_Device_comm c, int msgs, unsigned long long *first, unsigned long long *last,
                          unsigned *bad) {
  const unsigned half = gridDim.x / 2;
  const bool sending = blockIdx.x < half;
  const unsigned g = (blockIdx.x % half) * blockDim.x + threadIdx.x;
  rate_body(c, c.rank, sending, g, msgs, first, last, bad);
}

// Bandwidth: block b moves its share of n bytes with tag 1000 + b.
__device__ void bw_body(MPIX_Device_comm c, int peer, bool sending, unsigned b, unsigned blocks, unsigned char *buf,
                        size_t n, int iters, unsigned long long *first, unsigned long long *last) {
  const size_t share = (n / blocks + 255) / 256 * 256;
  const size_t off = share * b;
  const size_t len = off >= n ? 0 : (n - off < share ? n - off : share);
  if (threadIdx.x == 0) atomicMin(first, now_ns());
  for (int i = 0; i < iters; ++i) {
    if (sending) MPIX_Send_block(buf + off, len, peer, 1000 + (int)b, c);
    else MPIX_Recv_block(buf + off, len, peer, 1000 + (int)b, c, nullptr);
  }
  if (threadIdx.x == 0) atomicMax(last, now_ns());
}

__global__ void __launch_bounds__(512) bw_ipc(MPIX_Device_comm c, int peer, bool sending, unsigned char *buf, size_t n, int iters,
                       unsigned long long *first, unsigned long long *last) {
  bw_body(c, peer, sending, blockIdx.x, gridDim.x, buf, n, iters, first, last);
}

__global__ void __launch_bounds__(512) bw_self(MPIX_Device_comm c, unsigned char *a, unsigned char *b, size_t n, int iters,
                        unsigned long long *first, unsigned long long *last) {
  const unsigned half = gridDim.x / 2;
  const bool sending = blockIdx.x < half;
  bw_body(c, c.rank, sending, blockIdx.x % half, half, sending ? a : b, n, iters, first, last);
}

struct Timers {
  unsigned long long *d = nullptr;
  Timers() { CHECK_CUDA(cudaMalloc(&d, 4 * sizeof(unsigned long long))); reset(); }
  ~Timers() { cudaFree(d); }
  void reset() {
    unsigned long long h[4] = {~0ull, 0, 0, 0};
    CHECK_CUDA(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
  }
  std::vector<unsigned long long> get() {
    std::vector<unsigned long long> h(4);
    CHECK_CUDA(cudaMemcpy(h.data(), d, 4 * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    return h;
  }
};

FILE *g_csv = nullptr;
int g_rank = 0;

// A run's time across ranks from Timers' first and last (gpu_span.h).
double span_ns(const std::vector<unsigned long long> &v, MPI_Comm comm) {
  return longest_span_ns(v[0], v[1], comm, "span");
}

// All-to-all: thread g of every rank sends an 8-byte message (tag g) to
// thread g of every other rank and receives theirs, `rounds` times; the
// receiver checks each payload (source, thread, round). `self`: each
// thread sends to itself instead, one message a round (one process, so
// Nsight Compute can replay the kernel: the instructions and memory
// operations a message costs, without a peer). Receives and sends
// are posted nonblocking and tested together: blocking sends before the
// receives are MPI's unsafe pattern, and deadlocked on four GPUs (every
// thread of a rank held in a send whose table way was full).
constexpr int kA2aPeers = 7;
__global__ void __launch_bounds__(256, 2) a2a_ipc(MPIX_Device_comm c, int rounds, unsigned long long *first,
                                                  unsigned long long *last, unsigned *bad, bool self) {
  const unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  const int peers = self ? 1 : c.size - 1;
  const auto from = [&](int p) { return self ? c.rank : (c.rank - p + c.size) % c.size; };
  const auto to = [&](int p) { return self ? c.rank : (c.rank + p) % c.size; };
  atomicMin(first, now_ns());
  MPIX_Device_request rq[2 * kA2aPeers];
  unsigned long long in[kA2aPeers];
  for (int r = 0; r < rounds; ++r) {
#if defined(A2A_SYNCWARP)
    __syncwarp();
#endif
    const unsigned long long v = (unsigned long long)c.rank << 48 | (unsigned long long)g << 20 | unsigned(r);
    int n = 0;
    for (int p = 1; p <= peers; ++p)
      if (MPIX_Irecv(&in[p - 1], 8, from(p), (int)g, c, &rq[n++]) != MPIX_DEVICE_SUCCESS) atomicAdd(bad, 1u);
    for (int p = 1; p <= peers; ++p)
      if (MPIX_Isend(&v, 8, to(p), (int)g, c, &rq[n++]) != MPIX_DEVICE_SUCCESS) atomicAdd(bad, 1u);
    unsigned open = (1u << n) - 1;
    while (open != 0)
      for (int i = 0; i < n; ++i)
        if (((open >> i) & 1u) != 0 && MPIX_Test(&rq[i], c) != MPIX_DEVICE_PENDING) open &= ~(1u << i);
    for (int p = 1; p <= peers; ++p) {
      const int src = from(p);
      if (in[p - 1] != ((unsigned long long)src << 48 | (unsigned long long)g << 20 | unsigned(r))) atomicAdd(bad, 1u);
    }
  }
  atomicMax(last, now_ns());
}

// BENCH_DEV_ONLY=a,b: only these parts (putsig, ops, call, latency,
// proxy, rate, a2a, allself, bw, raw); all by default.
bool want(const char *part) {
  const char *only = std::getenv("BENCH_DEV_ONLY");
  return only == nullptr || *only == '\0' || mpix_test::listed(only, part);
}

void row(const char *what, const char *path, size_t bytes, double value, const char *unit) {
  if (g_rank != 0) return;
  std::printf("%-10s %-5s %10zu %12.3f %s\n", what, path, bytes, value, unit);
  if (g_csv) std::fprintf(g_csv, "%s,%s,%zu,%.4f,%s\n", what, path, bytes, value, unit);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0, size = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int gpu = mpix_test::use_gpu_of_rank(g_rank);
  if (gpu < 0) {
    if (g_rank == 0) std::printf("skipped: no GPU\n");
    MPI_Finalize();
    return 77;
  }
  if (g_rank == 0 && argc > 1) {
    g_csv = std::fopen(argv[1], "w");
    if (g_csv) std::fprintf(g_csv, "test,path,bytes,value,unit\n");
  }
  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gpu));
  const int sharing = mpix_test::ranks_on_my_gpu(MPI_COMM_WORLD);
  MPI_Comm world, self;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &world);
  MPIX_Comm_dup_nowildcard(MPI_COMM_SELF, &self);
  MPIX_Device_comm hw{}, hs{};
  if (MPIX_Comm_device_handle(world, &hw) != MPI_SUCCESS || MPIX_Comm_device_handle(self, &hs) != MPI_SUCCESS) {
    std::fprintf(stderr, "MPIX_Comm_device_handle failed\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  // The same through the proxy path (descriptors to the progress thread).
  MPI_Comm pworld, pself;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &pworld);
  MPIX_Comm_dup_nowildcard(MPI_COMM_SELF, &pself);
  MPIX_Device_comm pw{}, ps{};
  setenv("MPIX_DEVICE_PATH", "proxy", 1);
  const bool proxy_ok = MPIX_Comm_device_handle(pworld, &pw) == MPI_SUCCESS &&
                        MPIX_Comm_device_handle(pself, &ps) == MPI_SUCCESS;
  unsetenv("MPIX_DEVICE_PATH");
  const size_t maxn = 16u << 20;
  unsigned char *a = nullptr, *b = nullptr;
  CHECK_CUDA(cudaMalloc(&a, maxn));
  CHECK_CUDA(cudaMalloc(&b, maxn));
  CHECK_CUDA(cudaMemset(a, 1, maxn));
  CHECK_CUDA(cudaMemset(b, 2, maxn));
  Timers t;
  unsigned *bad = nullptr;
  CHECK_CUDA(cudaMalloc(&bad, sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(bad, 0, sizeof(unsigned)));
  if (g_rank == 0)
    std::printf("# %d SMs; table %u x %u per source, %u keys; rings %u x %u x %u B\n%-10s %-5s %10s %12s unit\n", sms,
                hw.buckets, MPIXD_WAYS, hw.keys, hw.channels, hw.slots, hw.slot_bytes, "test", "path", "bytes",
                "value");
  const int ipc_iters = std::getenv("BENCH_DEV_IPC_ITERS") ? std::atoi(std::getenv("BENCH_DEV_IPC_ITERS")) : 1000;

  // ---- floor: one-sided put+signal by hand ----
  if (want("putsig")) {
    PutSig *ps_mem = nullptr;  // [0], [1]: self; [2]: this rank's word for the ipc pair
    CHECK_CUDA(cudaMalloc(&ps_mem, 3 * sizeof(PutSig)));
    PutSig *peer_word = nullptr;
    if (size >= 2) {
      cudaIpcMemHandle_t mine{}, all[2]{};
      CHECK_CUDA(cudaIpcGetMemHandle(&mine, ps_mem));
      if (g_rank < 2) {
        MPI_Comm pair;
        MPI_Comm_split(MPI_COMM_WORLD, 0, g_rank, &pair);
        MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, pair);
        MPI_Comm_free(&pair);
        void *p = nullptr;
        CHECK_CUDA(cudaIpcOpenMemHandle(&p, all[1 - g_rank], cudaIpcMemLazyEnablePeerAccess));
        peer_word = static_cast<PutSig *>(p) + 2;
      } else {
        MPI_Comm pair;
        MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, g_rank, &pair);
      }
    }
    for (bool fence : {false, true}) {
      const char *name = fence ? "putsig+f" : "putsig";
      if (g_rank == 0) {
        CHECK_CUDA(cudaMemset(ps_mem, 0, 3 * sizeof(PutSig)));
        t.reset();
        putsig_self<<<2, 32>>>(ps_mem, ps_mem + 1, 1000, 10, fence, t.d);
        CHECK_CUDA(cudaDeviceSynchronize());
        row(name, "self", 8, t.get()[0] / 1e3 / (2.0 * 1000), "us");
      }
      if (peer_word != nullptr) {
        CHECK_CUDA(cudaMemset(ps_mem, 0, 3 * sizeof(PutSig)));
        CHECK_CUDA(cudaDeviceSynchronize());
        MPI_Barrier(MPI_COMM_WORLD);
        t.reset();
        putsig_ipc<<<1, 1>>>(ps_mem + 2, peer_word, g_rank == 0, ipc_iters * 4, 10, fence, t.d);
        CHECK_CUDA(cudaDeviceSynchronize());
        if (g_rank == 0) row(name, "ipc", 8, t.get()[0] / 1e3 / (2.0 * ipc_iters * 4), "us");
      } else if (size >= 2) {
        MPI_Barrier(MPI_COMM_WORLD);
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }
    if (peer_word != nullptr) CHECK_CUDA(cudaIpcCloseMemHandle(peer_word - 2));
    cudaFree(ps_mem);
  }

  // ---- what single memory operations cost ----
  if (g_rank == 0 && want("ops")) {
    unsigned *w = nullptr;
    unsigned long long *ns = nullptr;
    CHECK_CUDA(cudaMalloc(&w, 256));
    CHECK_CUDA(cudaMemset(w, 0, 256));
    CHECK_CUDA(cudaMalloc(&ns, kOps * sizeof(unsigned long long)));
    const int iters = 2000;
    op_costs<<<1, 1>>>(w, 100, ns);  // warm-up
    op_costs<<<1, 1>>>(w, iters, ns);
    unsigned long long h[kOps];
    CHECK_CUDA(cudaMemcpy(h, ns, sizeof h, cudaMemcpyDeviceToHost));
    for (int op = 0; op < kOps; ++op) {
      char name[32];
      std::snprintf(name, sizeof name, "op/%s", kOpNames[op]);
      row(name, "gpu", 4, double(h[op]) / iters, "ns");
    }
    cudaFree(w);
    cudaFree(ns);
  }

  // ---- per-call costs ----
  if (g_rank == 0 && want("call")) {
    // A tag in the table and, where there are lanes, one in a lane.
    for (const int tag : {int(hs.lane_tags) + 5000, 3}) {
      const bool lane = unsigned(tag) < hs.lane_tags;
      if (tag == 3 && !lane) break;
      // 8 B in a cell; 128 B and 512 B medium (or staged) by one thread.
      for (size_t n : {size_t(8), size_t(128), size_t(512)}) {
        const int k = lane ? int(MPIXD_LANE) : hs.slots < 16 ? int(hs.slots) : 16, batches = 200;
        t.reset();
        call_costs<<<1, 1>>>(hs, tag, k, batches, t.d, t.d + 1, a, n);
        CHECK_CUDA(cudaDeviceSynchronize());
        const auto v = t.get();
        row("call/send", lane ? "lane" : "table", n, v[0] / 1e3 / (double(k) * batches), "us");
        row("call/recv", lane ? "lane" : "table", n, v[1] / 1e3 / (double(k) * batches), "us");
      }
    }
  }

  // ---- latency ----
  for (size_t n = 8; want("latency") && n <= maxn; n *= 4) {
    const int iters = n >= (1u << 20) ? 20 : 1000;
    if (g_rank == 0) {
      t.reset();
      pp_self<<<2, 512>>>(hs, a, b, n, iters, 10, t.d);
      CHECK_CUDA(cudaDeviceSynchronize());
      row("latency", "self", n, t.get()[0] / 1e3 / (2.0 * iters), "us");
    }
    if (size >= 2) {
      MPI_Barrier(MPI_COMM_WORLD);
      const int it = n >= (1u << 20) ? 5 : ipc_iters;
      if (g_rank < 2) {
        t.reset();
        // Warm-up rounds: the first messages to another GPU pay for its
        // TLB misses (8 B after 2 warm-up rounds read 14 us on two H200s,
        // 32 B after it 5.5 us).
        pp_ipc<<<1, 512>>>(hw, 1 - g_rank, g_rank == 0, a, n, it, n >= (1u << 20) ? 2 : 50, t.d);
        CHECK_CUDA(cudaDeviceSynchronize());
        if (g_rank == 0) row("latency", "ipc", n, t.get()[0] / 1e3 / (2.0 * it), "us");
      }
    }
  }

  // ---- proxy latency ----
  for (size_t n = 8; proxy_ok && want("proxy") && n <= maxn; n *= 16) {
    const int iters = n >= (1u << 20) ? 10 : 200;
    if (g_rank == 0) {
      t.reset();
      pp_self<<<2, 512>>>(ps, a, b, n, iters, 5, t.d);
      CHECK_CUDA(cudaDeviceSynchronize());
      row("latency", "pxself", n, t.get()[0] / 1e3 / (2.0 * iters), "us");
    }
    if (size >= 2) {
      MPI_Barrier(MPI_COMM_WORLD);
      const int it = n >= (1u << 20) ? 5 : ipc_iters;
      if (g_rank < 2) {
        t.reset();
        pp_ipc<<<1, 512>>>(pw, 1 - g_rank, g_rank == 0, a, n, it, 2, t.d);
        CHECK_CUDA(cudaDeviceSynchronize());
        if (g_rank == 0) row("latency", "proxy", n, t.get()[0] / 1e3 / (2.0 * it), "us");
      }
    }
  }

  // ---- message rate, 8 B ----
  if (want("rate")) {
    const int msgs = 200;
    if (g_rank == 0) {
      t.reset();
      rate_self<<<2 * sms, 256>>>(hs, msgs, t.d, t.d + 1, bad);
      CHECK_CUDA(cudaDeviceSynchronize());
      auto v = t.get();
      const double n = double(sms) * 256 * msgs;
      row("rate", "self", 8, n / ((v[1] - v[0]) / 1e9) / 1e6, "Mmsg/s");
    }
    if (size >= 2) {
      MPI_Barrier(MPI_COMM_WORLD);
      if (g_rank < 2) {
        t.reset();
        // Both sides' grids must be resident at once (senders wait for
        // room only receivers make): on a GPU the two ranks share, each gets
        // its share of the blocks the GPU holds.
        int per_sm = 0;
        CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rate_ipc, 256, 0));
        const int blocks = std::min(sms, sms * per_sm / sharing);
        rate_ipc<<<blocks, 256>>>(hw, 1 - g_rank, g_rank == 0, 20, t.d, t.d + 1, bad);
        CHECK_CUDA(cudaDeviceSynchronize());
        const double ns = span_ns(t.get(), MPI_COMM_WORLD);
        const double n = double(blocks) * 256 * 20;
        row("rate", "ipc", 8, n / (ns / 1e9) / 1e6, "Mmsg/s");
      }
    }
    unsigned hbad = 0;
    CHECK_CUDA(cudaMemcpy(&hbad, bad, sizeof hbad, cudaMemcpyDeviceToHost));
    if (hbad) std::fprintf(stderr, "[%d] rate: %u messages corrupted\n", g_rank, hbad);
  }

  // ---- all-to-all, 8 B messages, every rank ----
  if (want("a2a") && size >= 2 && size <= kA2aPeers + 1) {
    MPI_Barrier(MPI_COMM_WORLD);
    int per_sm = 0;
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, a2a_ipc, 256, 0));
    // Every rank's grid resident at once (threads wait on each other's).
    const int blocks = std::max(1, std::min(sms, sms * per_sm / sharing));
    const int rounds = 20;
    // Tags from MPIXD_DIRECT_TAGS on are numbered in the key tables: a call past their
    // room returns MPIX_DEVICE_ERR_KEYS, and its peer's receive would wait
    // forever (on four GPUs at the default 65536 keys).
    const unsigned long long keyed = (unsigned long long)(size - 1) * std::max(0, blocks * 256 - int(MPIXD_DIRECT_TAGS));
    const bool fits = keyed <= hw.keys;
    if (!fits && g_rank == 0)
      std::printf("a2a/%dgpu: skipped: %llu (peer, tag) pairs above MPIX_DEVICE_KEYS=%u\n", size, keyed, hw.keys);
    for (int rep = 0; fits && rep < 2; ++rep) {  // the first pays for TLB misses
      t.reset();
      MPI_Barrier(MPI_COMM_WORLD);
      a2a_ipc<<<blocks, 256>>>(hw, rounds, t.d, t.d + 1, bad, false);
      CHECK_CUDA(cudaDeviceSynchronize());
      const double ns = span_ns(t.get(), MPI_COMM_WORLD);
      const double msgs = double(blocks) * 256 * rounds * (size - 1) * size;  // received, all ranks
      char name[32];
      std::snprintf(name, sizeof name, "a2a/%dgpu", size);
      if (rep == 1) row(name, "ipc", 8, msgs / (ns / 1e9) / 1e6, "Mmsg/s");
    }
    unsigned hbad = 0;
    CHECK_CUDA(cudaMemcpy(&hbad, bad, sizeof hbad, cudaMemcpyDeviceToHost));
    if (hbad) std::fprintf(stderr, "[%d] a2a: %u messages corrupted\n", g_rank, hbad);
  }
  // The same kernel on one GPU, every thread to itself (rank 0).
  if (want("allself") && g_rank == 0) {
    int per_sm = 0;
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, a2a_ipc, 256, 0));
    const int blocks = std::max(1, sms * per_sm);
    const unsigned long long keyed = std::max(0, blocks * 256 - int(MPIXD_DIRECT_TAGS));
    if (keyed > hs.keys) std::printf("a2a/self: skipped: %llu tags above MPIX_DEVICE_KEYS=%u\n", keyed, hs.keys);
    CHECK_CUDA(cudaMemset(bad, 0, sizeof(unsigned)));
    for (int rep = 0; keyed <= hs.keys && rep < 2; ++rep) {
      t.reset();
      a2a_ipc<<<blocks, 256>>>(hs, 20, t.d, t.d + 1, bad, true);
      CHECK_CUDA(cudaDeviceSynchronize());
      const auto v = t.get();
      if (rep == 1) row("a2a/self", "self", 8, double(blocks) * 256 * 20 / ((v[1] - v[0]) / 1e9) / 1e6, "Mmsg/s");
    }
    unsigned hbad = 0;
    CHECK_CUDA(cudaMemcpy(&hbad, bad, sizeof hbad, cudaMemcpyDeviceToHost));
    if (hbad) std::fprintf(stderr, "[%d] a2a/self: %u messages corrupted\n", g_rank, hbad);
  }

  // ---- bandwidth at 16 MiB ----
  if (want("bw")) {
    const int iters = 10;
    if (g_rank == 0) {
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0);
      cudaEventCreate(&e1);
      CHECK_CUDA(cudaMemcpy(b, a, maxn, cudaMemcpyDeviceToDevice));
      cudaEventRecord(e0);
      for (int i = 0; i < iters; ++i) cudaMemcpyAsync(b, a, maxn, cudaMemcpyDeviceToDevice);
      cudaEventRecord(e1);
      CHECK_CUDA(cudaEventSynchronize(e1));
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      row("bw", "memcpy", maxn, double(maxn) * iters / (ms / 1e3) / 1e9, "GB/s");
      for (int blocks : {8, 32, sms / 2}) {
        t.reset();
        bw_self<<<2 * blocks, 512>>>(hs, a, b, maxn, iters, t.d, t.d + 1);
        CHECK_CUDA(cudaDeviceSynchronize());
        auto v = t.get();
        char name[32];
        std::snprintf(name, sizeof name, "bw/%dblk", blocks);
        row(name, "self", maxn, double(maxn) * iters / ((v[1] - v[0]) / 1e9) / 1e9, "GB/s");
      }
    }
    if (size >= 2) {
      MPI_Barrier(MPI_COMM_WORLD);
      if (g_rank < 2) {
        t.reset();
        const int blocks = sms / 2;
        bw_ipc<<<blocks, 512>>>(hw, 1 - g_rank, g_rank == 0, a, maxn, iters, t.d, t.d + 1);
        CHECK_CUDA(cudaDeviceSynchronize());
        const double ns = span_ns(t.get(), MPI_COMM_WORLD);
        char name[32];
        std::snprintf(name, sizeof name, "bw/%dblk", blocks);
        row(name, "ipc", maxn, double(maxn) * iters / (ns / 1e9) / 1e9, "GB/s");
      }
    }
  }

  // ---- raw NVLink writes (no protocol) into the peer's staging blocks ----
  if (want("raw") && size >= 2) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0) {
      char *bases[2] = {nullptr, nullptr};
      CHECK_CUDA(cudaMemcpy(bases, hw.bases, sizeof bases, cudaMemcpyDeviceToHost));
      // Rank 0's staging blocks at rank 1: channels x slots x slot_bytes.
      const size_t room = size_t(hw.channels) * hw.slots * hw.slot_bytes;
      const size_t n = std::min(maxn, room);
      unsigned char *dst = reinterpret_cast<unsigned char *>(bases[1]) + hw.off_staging;
      const int rounds = 10;
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0);
      cudaEventCreate(&e1);
      const auto timed = [&](const char *name, auto launch) {
        launch(1);  // warm-up
        CHECK_CUDA(cudaDeviceSynchronize());
        cudaEventRecord(e0);
        launch(rounds);
        cudaEventRecord(e1);
        CHECK_CUDA(cudaEventSynchronize(e1));
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        row(name, "ipc", n, double(n) * rounds / (ms / 1e3) / 1e9, "GB/s");
      };
      const auto *s16 = reinterpret_cast<const mpixd_w16 *>(a);
      auto *d16 = reinterpret_cast<mpixd_w16 *>(dst);
      for (int blocks : {sms / 2, sms, 2 * sms}) {
        char name[48];
        std::snprintf(name, sizeof name, "raw/%dx512/w4", blocks);
        timed(name, [&](int r) { raw_put_strided<4><<<blocks, 512>>>(d16, s16, n / 16, r); });
        std::snprintf(name, sizeof name, "raw/%dx512/w8", blocks);
        timed(name, [&](int r) { raw_put_strided<8><<<blocks, 512>>>(d16, s16, n / 16, r); });
        std::snprintf(name, sizeof name, "raw/%dx1024/chunk", blocks);
        timed(name, [&](int r) { raw_put_chunked<<<blocks, 1024>>>(dst, a, n, 256 * 1024, r); });
        std::snprintf(name, sizeof name, "raw/%dx1024/c64k", blocks);
        timed(name, [&](int r) { raw_put_chunked<<<blocks, 1024>>>(dst, a, n, 64 * 1024, r); });
      }
      cudaEventDestroy(e0);
      cudaEventDestroy(e1);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_csv) std::fclose(g_csv);
  cudaFree(a);
  cudaFree(b);
  cudaFree(bad);
  MPI_Comm_free(&world);
  MPI_Comm_free(&self);
  MPI_Comm_free(&pworld);
  MPI_Comm_free(&pself);
  MPI_Finalize();
  return 0;
}
