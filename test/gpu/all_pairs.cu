// All pairs at once: every rank exchanges with every other on each GPU
// path, the traffic of the four-GPU runs (issue 26). 2-8 ranks, a GPU each
// (two ranks may share one under MPS).
//  - device-initiated: one grid per size, a block sending to and a block
//    receiving from each peer (MPIX_Send_block / MPIX_Recv_block), sizes
//    across the inline, medium (MPIX_DEVICE_MID_MAX) and ring bounds;
//  - stream-triggered, blocking: pairs in an XOR schedule (the lower rank
//    sends first), sizes around MPIX_STREAM_PULL_MIN: the MPI_T counter
//    must count every send of at least that size as pulled once the hosts
//    have mapped the buffer, and none where pulls are off;
//  - stream-triggered, nonblocking: every rank Irecv_enqueue's from and
//    Isend_enqueue's to every peer, one Waitall_enqueue, three rounds with
//    no host wait between them, the send buffers refilled on the stream
//    right after each wait (reusable once it ran);
// bytes, overruns, counts, sources and tags checked everywhere. Asserts
// that mpix carried it: both communicators handled, the device handle on
// the IPC path within a node (unless MPIX_DEVICE_PATH=proxy).
// Prints "skipped: ..." and exits 77 without a GPU, or where more than two
// ranks run and some share a GPU (kernels of processes waiting on each
// other time-slice it without MPS).
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "mpix_device.h"
#include "test/gpu/gpu_common.h"

namespace {

int g_rank = 0, g_size = 1, errors = 0;  // errors: gpu_common.h's CHECK counts here

void phase(const char *what, long n = -1) {
  if (g_rank == 0) std::fprintf(stderr, n < 0 ? "phase: %s\n" : "phase: %s, %ld bytes\n", what, n);
}

constexpr std::size_t kGuard = 16;  // bytes past each message that must stay 0xEE

// The j-th peer of rank (j = 0 .. size-2), and back.
__host__ __device__ int peer_of(int rank, int size, int j) { return (rank + 1 + j) % size; }
int index_of(int rank, int size, int peer) { return (peer - rank - 1 + size) % size; }

__host__ __device__ unsigned char pattern(std::size_t i, int src, int dst, std::size_t n, int round) {
  return static_cast<unsigned char>(i * 131u + src * 29u + dst * 7u + n * 3u + round * 11u);
}

// Every peer's message in its own span of the buffer.
std::size_t span_of(std::size_t n) { return (n + kGuard + 255) / 256 * 256; }

__global__ void fill_all(unsigned char *s, std::size_t span, std::size_t n, int rank, int size, int round) {
  const int dst = peer_of(rank, size, blockIdx.y);
  unsigned char *p = s + blockIdx.y * span;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = pattern(i, rank, dst, n, round);
}

__global__ void check_all(const unsigned char *r, std::size_t span, std::size_t n, int rank, int size, int round,
                          unsigned *bad) {
  const int src = peer_of(rank, size, blockIdx.y);
  const unsigned char *p = r + blockIdx.y * span;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n + kGuard; i += gridDim.x * blockDim.x)
    if (p[i] != (i < n ? pattern(i, src, rank, n, round) : 0xEE)) atomicAdd(bad, 1u);
}

// Blocks 2j and 2j+1: the send to and the receive from the j-th peer.
__global__ void __launch_bounds__(256) exchange(MPIX_Device_comm c, const unsigned char *s, unsigned char *r,
                                                std::size_t span, std::size_t n, int tag, int *codes,
                                                std::size_t *got) {
  const int j = blockIdx.x / 2, peer = peer_of(c.rank, c.size, j);
  if (blockIdx.x % 2 == 0) {
    const int rc = MPIX_Send_block(s + j * span, n, peer, tag, c);
    if (threadIdx.x == 0) codes[2 * j] = rc;
  } else {
    const int rc = MPIX_Recv_block(r + j * span, n, peer, tag, c, &got[j]);
    if (threadIdx.x == 0) codes[2 * j + 1] = rc;
  }
}

template <typename T>
struct DevArray {
  T *p = nullptr;
  std::size_t n = 0;
  explicit DevArray(std::size_t count) : n(count) { CHECK_CUDA(cudaMalloc(&p, sizeof(T) * (count ? count : 1))); }
  ~DevArray() { cudaFree(p); }
  DevArray(const DevArray &) = delete;
  DevArray &operator=(const DevArray &) = delete;
  std::vector<T> get() const {
    std::vector<T> v(n);
    CHECK_CUDA(cudaMemcpy(v.data(), p, sizeof(T) * n, cudaMemcpyDeviceToHost));
    return v;
  }
};

struct Buffers {
  std::size_t span;
  DevArray<unsigned char> s, r;
  explicit Buffers(std::size_t max) : span(span_of(max)), s(span * (g_size - 1)), r(span * (g_size - 1)) {}
};

unsigned take_bad(DevArray<unsigned> &bad) {
  const unsigned v = bad.get()[0];
  CHECK_CUDA(cudaMemset(bad.p, 0, sizeof(unsigned)));
  return v;
}

void device_initiated(MPI_Comm comm, bool small, DevArray<unsigned> &bad) {
  MPIX_Device_comm h{};
  const int rc = MPIX_Comm_device_handle(comm, &h);
  CHECK(rc == MPI_SUCCESS, "MPIX_Comm_device_handle: %d", rc);
  if (rc != MPI_SUCCESS) return;
  const char *path = std::getenv("MPIX_DEVICE_PATH");
  const bool proxy = path != nullptr && std::strcmp(path, "proxy") == 0;
  CHECK(h.path == (proxy ? MPIXD_PATH_PROXY : MPIXD_PATH_IPC), "device path %d on one node", h.path);
  std::vector<std::size_t> sizes = {0, 1, 32, 33, 512, 2048, 16384, 16385, 65536, 1u << 20};
  if (!small) sizes.push_back(std::size_t(4) << 20);
  Buffers b(sizes.back());
  const int peers = g_size - 1;
  DevArray<int> codes(2 * peers);
  DevArray<std::size_t> got(peers);
  int tag = 1000;
  for (std::size_t n : sizes) {
    phase("device-initiated, all pairs", long(n));
    for (int round = 0; round < 3; ++round, ++tag) {
      CHECK_CUDA(cudaMemset(b.r.p, 0xEE, b.r.n));
      CHECK_CUDA(cudaMemset(codes.p, 0x7f, sizeof(int) * codes.n));
      fill_all<<<dim3(64, peers), 256>>>(b.s.p, b.span, n, g_rank, g_size, round);
      CHECK_CUDA(cudaDeviceSynchronize());
      exchange<<<2 * peers, 256>>>(h, b.s.p, b.r.p, b.span, n, tag, codes.p, got.p);
      CHECK_CUDA(cudaDeviceSynchronize());
      check_all<<<dim3(64, peers), 256>>>(b.r.p, b.span, n, g_rank, g_size, round, bad.p);
      const auto c = codes.get();
      const auto g = got.get();
      for (int j = 0; j < peers; ++j) {
        CHECK(c[2 * j] == MPIX_DEVICE_SUCCESS && c[2 * j + 1] == MPIX_DEVICE_SUCCESS,
              "device %zu bytes, peer %d: send %d receive %d", n, peer_of(g_rank, g_size, j), c[2 * j], c[2 * j + 1]);
        CHECK(g[j] == n, "device %zu bytes from %d: received %zu", n, peer_of(g_rank, g_size, j), g[j]);
      }
      const unsigned wrong = take_bad(bad);
      CHECK(wrong == 0, "device %zu bytes, round %d: %u bytes wrong or overrun", n, round, wrong);
      // A send block returns once its message is out of the buffer, not
      // once received: the next round's fill waits for every peer.
      MPI_Barrier(comm);
    }
  }
}

struct Stream {
  cudaStream_t cs = nullptr;
  MPIX_Stream stream = MPIX_STREAM_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  Stream() {
    CHECK_CUDA(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    if (mpix_test::cuda_stream_create(cs, &stream) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
    MPIX_Stream_comm_create(MPI_COMM_WORLD, stream, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  }
  ~Stream() {
    MPI_Comm_free(&comm);
    MPIX_Stream_free(&stream);
    cudaStreamDestroy(cs);
  }
  void sync() const {
    CHECK_CUDA(cudaStreamSynchronize(cs));
    MPI_Barrier(MPI_COMM_WORLD);
  }
};

// An on/off setting that is on unless set to off.
bool env_not_off(const char *name) {
  const char *v = std::getenv(name);
  return v == nullptr || (std::strcmp(v, "off") != 0 && std::strcmp(v, "0") != 0);
}

// The bound of pulled sends, 0 where none may be pulled.
std::size_t pull_bound() {
  const char *path = std::getenv("MPIX_STREAM_PATH");
  if (path != nullptr && std::strcmp(path, "host") == 0) return 0;
  const char *env = std::getenv("MPIX_STREAM_PULL_MIN");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 8193;  // the default (src/config.cc)
}

void check_status(const MPI_Status &st, int src, int tag, std::size_t n, const char *what) {
  int count = -1;
  MPI_Get_count(&st, MPI_BYTE, &count);
  CHECK(st.MPI_SOURCE == src && st.MPI_TAG == tag && count == static_cast<int>(n),
        "%s %zu bytes from %d: status source %d tag %d (%d) count %d", what, n, src, st.MPI_SOURCE, st.MPI_TAG, tag,
        count);
}

// One round of the XOR schedule: blocking sends and receives, each pair
// in turn, the lower rank sending first. Statuses in st (a peer each).
void blocking_round(const Stream &s, const Buffers &b, std::size_t n, int tag, MPI_Status *st) {
  int pow2 = 1;
  while (pow2 < g_size) pow2 *= 2;
  for (int k = 1; k < pow2; ++k) {
    const int peer = g_rank ^ k;
    if (peer >= g_size) continue;
    const int j = index_of(g_rank, g_size, peer);
    const auto send = [&] {
      CHECK(MPIX_Send_enqueue(b.s.p + j * b.span, static_cast<int>(n), MPI_BYTE, peer, tag, s.comm) == MPI_SUCCESS,
            "send_enqueue");
    };
    const auto recv = [&] {
      CHECK(MPIX_Recv_enqueue(b.r.p + j * b.span, static_cast<int>(n + kGuard), MPI_BYTE, peer, tag, s.comm,
                              &st[j]) == MPI_SUCCESS,
            "recv_enqueue");
    };
    if (g_rank < peer) send(), recv();
    else recv(), send();
  }
}

// The largest message of the stream phases.
std::size_t stream_max() {
  const std::size_t t = pull_bound();
  return t > 0 && t <= (std::size_t(64) << 20) ? std::max(t + 1, std::size_t(1) << 20) : std::size_t(4) << 20 | 1;
}

void stream_blocking(const Stream &s, const Buffers &b, bool small, DevArray<unsigned> &bad) {
  const std::size_t t = pull_bound();
  const std::size_t bound = t > 0 && t <= (std::size_t(64) << 20) ? t : 0;
  const std::size_t big = bound ? bound : std::size_t(4) << 20;
  std::vector<std::size_t> sizes = {8, 16385, big - 1, big, big + 1};
  if (small) sizes = {8, big};
  const int peers = g_size - 1;
  int tag = 2000;
  // Each host maps the send buffer for a peer on a later large operation
  // of its own after the first offer: until every peer pulls, exchange.
  for (int i = 0; bound && i < 100; ++i) {
    std::vector<MPI_Status> st(peers);
    const long long before = mpix_test::pulled_sends();
    blocking_round(s, b, bound, tag, st.data());
    s.sync();
    int mine = mpix_test::pulled_sends() - before == peers ? 0 : 1, more = 0;
    MPI_Allreduce(&mine, &more, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!more) break;
  }
  for (std::size_t n : sizes) {
    phase("stream-triggered blocking, XOR pairs", long(n));
    const long long before = mpix_test::pulled_sends();
    constexpr int kRounds = 3;
    for (int round = 0; round < kRounds; ++round, ++tag) {
      std::vector<MPI_Status> st(peers);
      CHECK_CUDA(cudaMemsetAsync(b.r.p, 0xEE, b.r.n, s.cs));
      fill_all<<<dim3(64, peers), 256, 0, s.cs>>>(b.s.p, b.span, n, g_rank, g_size, round);
      blocking_round(s, b, n, tag, st.data());
      check_all<<<dim3(64, peers), 256, 0, s.cs>>>(b.r.p, b.span, n, g_rank, g_size, round, bad.p);
      s.sync();
      for (int j = 0; j < peers; ++j) check_status(st[j], peer_of(g_rank, g_size, j), tag, n, "blocking");
      const unsigned wrong = take_bad(bad);
      CHECK(wrong == 0, "blocking %zu bytes, round %d: %u bytes wrong or overrun", n, round, wrong);
    }
    const long long pulled = mpix_test::pulled_sends() - before;
    const long long expect = bound && n >= bound ? static_cast<long long>(kRounds) * peers : 0;
    CHECK(pulled == expect, "blocking %zu bytes: %lld sends pulled, expected %lld (bound %zu)", n, pulled, expect,
          bound);
  }
}

// The buffers are the blocking phase's: mapped for every peer by its
// warm-up, so that each nonblocking send of at least the bound pulls.
void stream_nonblocking(const Stream &s, const Buffers &b, bool small, DevArray<unsigned> &bad) {
  const std::size_t t = pull_bound();
  const bool pull = t > 0 && t <= (std::size_t(64) << 20) && env_not_off("MPIX_STREAM_PULL_NONBLOCKING");
  std::vector<std::size_t> sizes = {0, 8, 33, 8192, 16384, 16385, 32768, 1u << 20};
  if (t > 0 && t <= (std::size_t(64) << 20) && !small) sizes.push_back(t);
  const int peers = g_size - 1;
  constexpr int kRounds = 3;
  int tag = 3000;
  for (std::size_t n : sizes) {
    phase("stream-triggered nonblocking, all pairs", long(n));
    const long long before = mpix_test::pulled_sends();
    // Waitall's statuses: the receives' first, then the sends'.
    std::vector<std::vector<MPI_Status>> st(kRounds, std::vector<MPI_Status>(2 * peers));
    std::vector<MPI_Request> q(2 * peers);
    CHECK_CUDA(cudaMemsetAsync(b.r.p, 0xEE, b.r.n, s.cs));
    fill_all<<<dim3(64, peers), 256, 0, s.cs>>>(b.s.p, b.span, n, g_rank, g_size, 0);
    for (int round = 0; round < kRounds; ++round) {
      for (int j = 0; j < peers; ++j) {
        const int peer = peer_of(g_rank, g_size, j);
        CHECK(MPIX_Irecv_enqueue(b.r.p + j * b.span, static_cast<int>(n + kGuard), MPI_BYTE, peer, tag + round, s.comm,
                                 &q[j]) == MPI_SUCCESS,
              "irecv_enqueue");
      }
      for (int j = 0; j < peers; ++j) {
        const int peer = peer_of(g_rank, g_size, j);
        CHECK(MPIX_Isend_enqueue(b.s.p + j * b.span, static_cast<int>(n), MPI_BYTE, peer, tag + round, s.comm,
                                 &q[peers + j]) == MPI_SUCCESS,
              "isend_enqueue");
      }
      CHECK(MPIX_Waitall_enqueue(2 * peers, q.data(), st[round].data()) == MPI_SUCCESS, "waitall_enqueue");
      check_all<<<dim3(64, peers), 256, 0, s.cs>>>(b.r.p, b.span, n, g_rank, g_size, round, bad.p);
      // Both reusable once the wait ran on the stream: no host wait here.
      CHECK_CUDA(cudaMemsetAsync(b.r.p, 0xEE, b.r.n, s.cs));
      fill_all<<<dim3(64, peers), 256, 0, s.cs>>>(b.s.p, b.span, n, g_rank, g_size, round + 1);
    }
    s.sync();
    tag += kRounds;
    for (int round = 0; round < kRounds; ++round)
      for (int j = 0; j < peers; ++j)
        check_status(st[round][j], peer_of(g_rank, g_size, j), tag - kRounds + round, n, "nonblocking");
    const unsigned wrong = take_bad(bad);
    CHECK(wrong == 0, "nonblocking %zu bytes: %u bytes wrong or overrun", n, wrong);
    const long long pulled = mpix_test::pulled_sends() - before;
    const long long expect = pull && n >= t ? static_cast<long long>(kRounds) * peers : 0;
    CHECK(pulled == expect, "nonblocking %zu bytes: %lld sends pulled, expected %lld", n, pulled, expect);
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (!mpix_test::init_with_gpu(&argc, &argv, &g_rank, &g_size)) return 77;
  const int sharing = mpix_test::ranks_on_my_gpu(MPI_COMM_WORLD);
  int worst = 0;
  MPI_Allreduce(&sharing, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  // Two ranks may share a GPU (under MPS, as run.sh does on one GPU);
  // more ranks need a GPU each.
  if (g_size < 2 || g_size > 8 || (worst > 1 && g_size > 2)) {
    if (g_rank == 0) std::printf("skipped: needs 2 ranks, or 3-8 with a GPU each (%d ranks, %d on one GPU)\n", g_size, worst);
    MPI_Finalize();
    return 77;
  }
  const bool small = std::getenv("ALL_PAIRS_SMALL") != nullptr;
  DevArray<unsigned> bad(1);
  CHECK_CUDA(cudaMemset(bad.p, 0, sizeof(unsigned)));

  MPI_Comm dcomm;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &dcomm);
  int handled = 0;
  MPIX_Comm_is_handled(dcomm, &handled);
  CHECK(handled, "no-wildcard communicator not handled by mpix");
  device_initiated(dcomm, small, bad);
  MPI_Comm_free(&dcomm);
  {
    Stream s;
    MPIX_Comm_is_handled(s.comm, &handled);
    CHECK(handled, "stream communicator not handled by mpix");
    const Buffers b(stream_max());
    stream_blocking(s, b, small, bad);
    stream_nonblocking(s, b, small, bad);
  }

  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf(total == 0 ? " No Errors\n" : " Found %d errors\n", total);
  MPI_Finalize();
  return total != 0;
}
