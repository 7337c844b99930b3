// The NVSHMEM baseline of issue 6, in the same run as bench_dev_p2p: a
// device-initiated put+signal ping-pong between two PEs, one GPU thread per
// side, half round trip on the GPU clock (issue 6's anchor: 2.14 us between
// two H200s), for 8 B .. 32 KiB; and 16 MiB one way, every block putting
// its share (nvshmemx_putmem_nbi_block) and then a signal.
//
// Not part of the autotools build (NVSHMEM is not on the development
// machine): test/gpu/run.sh's bench-dev stage builds it on the GPU machine
// with nvcc -rdc=true against the NVSHMEM found there (NVSHMEM_HOME). The
// PEs bootstrap with a unique id broadcast over MPI; two PEs on one GPU
// need MPS (NVSHMEM's multiple-processes-per-GPU support).
//   mpiexec -n 2 bench_nvshmem [CSV]
#include <cuda_runtime.h>
#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "gpu_span.h"

namespace {

#define CHECK_CUDA(x)                                                                       \
  do {                                                                                      \
    const cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                         \
    }                                                                                       \
  } while (0)

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Thread 0 of each side; the initiator puts first and times iters rounds.
__global__ void pingpong(char *buf, uint64_t *sig, size_t n, int iters, int warm, int peer, bool initiator,
                         unsigned long long *ns) {
  if (threadIdx.x != 0) return;
  unsigned long long t0 = 0;
  for (int i = 0; i < iters + warm; ++i) {
    if (i == warm) t0 = now_ns();
    const uint64_t v = uint64_t(i) + 1;
    if (initiator) {
      nvshmem_putmem_signal(buf, buf, n, sig, v, NVSHMEM_SIGNAL_SET, peer);
      nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
    } else {
      nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
      nvshmem_putmem_signal(buf, buf, n, sig, v, NVSHMEM_SIGNAL_SET, peer);
    }
  }
  if (initiator) *ns = now_ns() - t0;
}

// The same with a whole block putting (nvshmemx_putmem_signal_block), as
// bench_dev_p2p's MPIX_Send_block above 1 KiB.
__global__ void pingpong_block(char *buf, uint64_t *sig, size_t n, int iters, int warm, int peer, bool initiator,
                               unsigned long long *ns) {
  unsigned long long t0 = 0;
  for (int i = 0; i < iters + warm; ++i) {
    if (i == warm) t0 = now_ns();
    const uint64_t v = uint64_t(i) + 1;
    if (initiator) {
      nvshmemx_putmem_signal_block(buf, buf, n, sig, v, NVSHMEM_SIGNAL_SET, peer);
      if (threadIdx.x == 0) nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
      __syncthreads();
    } else {
      if (threadIdx.x == 0) nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
      __syncthreads();
      nvshmemx_putmem_signal_block(buf, buf, n, sig, v, NVSHMEM_SIGNAL_SET, peer);
    }
  }
  if (initiator && threadIdx.x == 0) *ns = now_ns() - t0;
}

// All-to-all, the put+signal equivalent of bench_dev_p2p's a2a rows: thread
// g puts 8 bytes with a signal into its slot at every other PE, then waits
// for every other PE's signal in its own slot (no matching, no flow
// control: the signal orders each put).
__global__ void a2a(uint64_t *data, uint64_t *sig, uint64_t *src, int rounds, int me, int npes,
                    unsigned long long *first, unsigned long long *last) {
  const unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned T = gridDim.x * blockDim.x;
  atomicMin(first, now_ns());
  for (int r = 0; r < rounds; ++r) {
    src[g] = (uint64_t)me << 48 | (uint64_t)g << 20 | unsigned(r);
    for (int p = 1; p < npes; ++p)
      nvshmem_putmem_signal(&data[(size_t)me * T + g], &src[g], 8, &sig[(size_t)me * T + g], uint64_t(r) + 1,
                            NVSHMEM_SIGNAL_SET, (me + p) % npes);
    for (int p = 1; p < npes; ++p)
      nvshmem_signal_wait_until(&sig[(size_t)((me - p + npes) % npes) * T + g], NVSHMEM_CMP_GE, uint64_t(r) + 1);
  }
  atomicMax(last, now_ns());
}

// One way, n bytes per round: block b puts its share; after the last round
// every block's thread 0 quiets and adds 1 to the receiver's signal, which
// waits for gridDim.x.
__global__ void stream(char *buf, uint64_t *sig, size_t n, int rounds, int peer, bool sending,
                       unsigned long long *ns) {
  const size_t share = (n / gridDim.x + 255) / 256 * 256;
  const size_t off = share * blockIdx.x;
  const size_t len = off >= n ? 0 : (n - off < share ? n - off : share);
  const unsigned long long t0 = now_ns();
  if (sending) {
    for (int r = 0; r < rounds; ++r)
      if (len) nvshmemx_putmem_nbi_block(buf + off, buf + off, len, peer);
    __syncthreads();
    if (threadIdx.x == 0) {
      nvshmem_quiet();
      nvshmemx_signal_op(sig, 1, NVSHMEM_SIGNAL_ADD, peer);
    }
  } else if (blockIdx.x == 0 && threadIdx.x == 0) {
    nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, gridDim.x);
    *ns = now_ns() - t0;
  }
}

FILE *g_csv = nullptr;

void row(const char *what, size_t bytes, double value, const char *unit) {
  std::printf("%-10s %-8s %10zu %12.3f %s\n", what, "nvshmem", bytes, value, unit);
  if (g_csv) std::fprintf(g_csv, "%s,nvshmem,%zu,%.4f,%s\n", what, bytes, value, unit);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, ndev = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0 || size < 2) {
    if (rank == 0) std::printf("skipped: %s\n", size < 2 ? "needs 2 ranks" : "no GPU");
    MPI_Finalize();
    return 77;
  }
  CHECK_CUDA(cudaSetDevice(rank % ndev));
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (rank == 0) nvshmemx_get_uniqueid(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  nvshmemx_set_attr_uniqueid_args(rank, size, &id, &attr);
  nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
  // Ping-pong and bandwidth between PEs 0 and 1; the all-to-all on all.
  const int me = nvshmem_my_pe(), peer = me < 2 ? 1 - me : me;
  if (me == 0 && argc > 1) {
    g_csv = std::fopen(argv[1], "w");
    if (g_csv) std::fprintf(g_csv, "test,path,bytes,value,unit\n");
  }
  const size_t maxn = size_t(16) << 20;
  char *buf = static_cast<char *>(nvshmem_malloc(maxn));
  uint64_t *sig = static_cast<uint64_t *>(nvshmem_calloc(1, sizeof(uint64_t)));
  unsigned long long *ns = nullptr;
  CHECK_CUDA(cudaMalloc(&ns, sizeof *ns));
  if (buf == nullptr || sig == nullptr) {
    std::fprintf(stderr, "nvshmem_malloc failed\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (me == 0)
    std::printf("# NVSHMEM %d.%d, %d PEs on %d GPU(s)\n%-10s %-8s %10s %12s unit\n", NVSHMEM_VENDOR_MAJOR_VERSION,
                NVSHMEM_VENDOR_MINOR_VERSION, size, ndev, "test", "path", "bytes", "value");
  const int iters = 1000, warm = 20;
  // One thread's put at every size, a block's from 128 B (the sizes of
  // bench_dev_p2p's latency rows).
  for (int block = 0; block < 2; ++block)
    for (size_t n = block ? 128 : 8; n <= 32768; n *= 4) {
      CHECK_CUDA(cudaMemset(sig, 0, sizeof(uint64_t)));
      CHECK_CUDA(cudaDeviceSynchronize());
      nvshmem_barrier_all();
      // PEs 0 and 1 only (the all-to-all below takes every PE).
      if (me < 2 && block) pingpong_block<<<1, 512>>>(buf, sig, n, iters, warm, peer, me == 0, ns);
      else if (me < 2) pingpong<<<1, 32>>>(buf, sig, n, iters, warm, peer, me == 0, ns);
      CHECK_CUDA(cudaDeviceSynchronize());
      unsigned long long t = 0;
      CHECK_CUDA(cudaMemcpy(&t, ns, sizeof t, cudaMemcpyDeviceToHost));
      if (me == 0) row(block ? "putsig_block" : "putsig", n, t / 1e3 / (2.0 * iters), "us");
    }
  {
    // All-to-all as bench_dev_p2p's a2a rows: as many threads (256-thread
    // blocks, every PE's grid resident at once), 20 rounds, second run.
    int sms = 0, per_sm = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, rank % ndev));
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, a2a, 256, 0));
    const int sharing = (size + ndev - 1) / ndev;
    const int blocks = std::max(1, std::min(sms, sms * std::min(per_sm, 2) / sharing));
    const size_t T = size_t(blocks) * 256;
    uint64_t *data = static_cast<uint64_t *>(nvshmem_calloc(T * size, sizeof(uint64_t)));
    uint64_t *asig = static_cast<uint64_t *>(nvshmem_calloc(T * size, sizeof(uint64_t)));
    uint64_t *src = nullptr;
    unsigned long long *tt = nullptr;
    CHECK_CUDA(cudaMalloc(&src, T * sizeof(uint64_t)));
    CHECK_CUDA(cudaMalloc(&tt, 2 * sizeof(unsigned long long)));
    const int rounds = 20;
    for (int rep = 0; rep < 2 && data && asig; ++rep) {
      CHECK_CUDA(cudaMemset(asig, 0, T * size * sizeof(uint64_t)));
      const unsigned long long init[2] = {~0ull, 0};
      CHECK_CUDA(cudaMemcpy(tt, init, sizeof init, cudaMemcpyHostToDevice));
      CHECK_CUDA(cudaDeviceSynchronize());
      nvshmem_barrier_all();
      a2a<<<blocks, 256>>>(data, asig, src, rounds, me, size, tt, tt + 1);
      CHECK_CUDA(cudaDeviceSynchronize());
      unsigned long long v[2];
      CHECK_CUDA(cudaMemcpy(v, tt, sizeof v, cudaMemcpyDeviceToHost));
      const double ns = longest_span_ns(v[0], v[1], MPI_COMM_WORLD, "a2a span");
      char name[32];
      std::snprintf(name, sizeof name, "a2a/%dgpu", size);
      const double msgs = double(T) * rounds * (size - 1) * size;
      if (me == 0 && rep == 1) row(name, 8, msgs / (ns / 1e9) / 1e6, "Mmsg/s");
    }
    nvshmem_barrier_all();
    if (data) nvshmem_free(data);
    if (asig) nvshmem_free(asig);
    cudaFree(src);
    cudaFree(tt);
  }
  {
    int sms = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, rank % ndev));
    const int rounds = 20;
    CHECK_CUDA(cudaMemset(sig, 0, sizeof(uint64_t)));
    CHECK_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    if (me < 2) stream<<<sms, 512>>>(buf, sig, maxn, rounds, peer, me == 0, ns);
    CHECK_CUDA(cudaDeviceSynchronize());
    unsigned long long t = 0;
    CHECK_CUDA(cudaMemcpy(&t, ns, sizeof t, cudaMemcpyDeviceToHost));
    // The receiver's clock runs from its own launch: an upper bound on the
    // time, so a lower bound on the bandwidth.
    double gbs = double(maxn) * rounds / (t / 1e9) / 1e9;
    MPI_Bcast(&gbs, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD);
    if (me == 0) row("bw", maxn, gbs, "GB/s");
  }
  nvshmem_barrier_all();
  nvshmem_free(sig);
  nvshmem_free(buf);
  cudaFree(ns);
  if (g_csv) std::fclose(g_csv);
  nvshmem_finalize();
  MPI_Finalize();
  return 0;
}
