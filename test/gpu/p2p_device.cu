// Device buffers in every point-to-point call on communicators mpix handles,
// over an MPI library that is not CUDA-aware: each call (Send, Isend,
// Ssend, Rsend, Bsend, Recv, Irecv, Sendrecv, Probe+Recv, Mprobe+Mrecv), each
// size class (0 B, 8 B, eager, the eager limit, rendezvous, odd multi-chunk,
// 256 MiB), buffers in cudaMalloc, cudaMallocAsync pool and host memory in
// every mix, vector datatypes on the device (gaps must survive), and sends to
// self. The path (IPC or staging) is chosen by the testlist's environment
// (MPIX_GPU_PATH=staging forces staging). Skips without a GPU.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mpix.h"
#include "test/gpu/gpu_common.h"

namespace {

int g_errors = 0;
int g_rank = 0;
cudaStream_t g_stream = nullptr;


__host__ __device__ inline unsigned char pattern(size_t i, unsigned seed) {
  return static_cast<unsigned char>((i * 2654435761u + seed) >> 7);
}

__global__ void fill_kernel(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = pattern(i, seed);
}

enum Kind { kHost, kDevice, kPool };
const char *kind_name(Kind k) { return k == kHost ? "host" : k == kDevice ? "device" : "pool"; }

// A buffer of n bytes (plus a guard) in host, cudaMalloc or pool memory.
struct Buf {
  Kind kind;
  size_t n;
  unsigned char *p = nullptr;
  static constexpr size_t kGuard = 64;
  Buf(Kind k, size_t bytes) : kind(k), n(bytes) {
    const size_t total = n + kGuard;
    if (k == kHost) p = static_cast<unsigned char *>(std::malloc(total));
    else if (k == kDevice) CHECK_CUDA(cudaMalloc(&p, total));
    else {
      CHECK_CUDA(cudaMallocAsync(&p, total, g_stream));
      CHECK_CUDA(cudaStreamSynchronize(g_stream));
    }
    set(0, total, 0xEE);
  }
  ~Buf() {
    if (kind == kHost) std::free(p);
    else if (kind == kDevice) cudaFree(p);
    else {
      cudaFreeAsync(p, g_stream);
      cudaStreamSynchronize(g_stream);
    }
  }
  Buf(const Buf &) = delete;
  Buf &operator=(const Buf &) = delete;
  void set(size_t off, size_t len, int v) {
    if (kind == kHost) std::memset(p + off, v, len);
    else CHECK_CUDA(cudaMemset(p + off, v, len));
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  void fill(unsigned seed) {
    if (kind == kHost) {
      for (size_t i = 0; i < n; ++i) p[i] = pattern(i, seed);
    } else if (n > 0) {
      fill_kernel<<<264, 256>>>(p, n, seed);
      CHECK_CUDA(cudaDeviceSynchronize());
    }
  }
  std::vector<unsigned char> read() const {
    std::vector<unsigned char> h(n + kGuard);
    if (kind == kHost) std::memcpy(h.data(), p, h.size());
    else CHECK_CUDA(cudaMemcpy(h.data(), p, h.size(), cudaMemcpyDefault));
    return h;
  }
};

void fail(const char *what, const char *detail, size_t at, int got, int want) {
  if (g_errors++ < 20)
    std::fprintf(stderr, "[%d] %s %s: byte %zu is %d, expected %d\n", g_rank, what, detail, at, got, want);
}

// The first n bytes carry seed's pattern, the guard is untouched.
void expect_pattern(const Buf &b, size_t n, unsigned seed, const char *what, const char *detail) {
  std::vector<unsigned char> h = b.read();
  for (size_t i = 0; i < n; ++i)
    if (h[i] != pattern(i, seed)) return fail(what, detail, i, h[i], pattern(i, seed));
  for (size_t i = b.n; i < b.n + Buf::kGuard; ++i)
    if (h[i] != 0xEE) return fail(what, "(guard overwritten)", i, h[i], 0xEE);
}

void expect_count(const MPI_Status &st, size_t n, const char *what) {
  int count = -1;
  MPI_Get_count(&st, MPI_BYTE, &count);
  if (count != static_cast<int>(n)) {
    if (g_errors++ < 20) std::fprintf(stderr, "[%d] %s: count %d, expected %zu\n", g_rank, what, count, n);
  }
}

enum Call { kSend, kIsend, kSsend, kRsend, kBsend, kSendrecv, kProbe, kMprobe, kCalls };
const char *call_name(Call c) {
  static const char *names[] = {"Send/Recv", "Isend/Irecv", "Ssend/Recv", "Rsend/Irecv",
                                "Bsend/Recv", "Sendrecv", "Probe+Recv", "Mprobe+Mrecv"};
  return names[c];
}

// One message of n bytes from rank `from` to rank `to` with the given call.
void transfer(MPI_Comm comm, Call call, size_t n, Kind skind, Kind rkind, int from, int to, unsigned seed) {
  char detail[160];
  std::snprintf(detail, sizeof detail, "%s %zu B %s->%s", call_name(call), n, kind_name(skind), kind_name(rkind));
  const int tag = 7 + static_cast<int>(call);
  const int cnt = static_cast<int>(n);
  MPI_Status st;
  if (call == kSendrecv) {
    // Both ranks send and receive at once (the exchange pattern).
    Buf s(skind, n), r(rkind, n);
    s.fill(seed + g_rank);
    const int peer = g_rank == from ? to : from;
    MPI_Sendrecv(s.p, cnt, MPI_BYTE, peer, tag, r.p, cnt, MPI_BYTE, peer, tag, comm, &st);
    expect_pattern(r, n, seed + peer, "Sendrecv", detail);
    expect_count(st, n, detail);
    return;
  }
  if (g_rank == from) {
    Buf s(skind, n);
    s.fill(seed);
    switch (call) {
      case kSend: case kProbe: case kMprobe: MPI_Send(s.p, cnt, MPI_BYTE, to, tag, comm); break;
      case kSsend: MPI_Ssend(s.p, cnt, MPI_BYTE, to, tag, comm); break;
      case kIsend: {
        MPI_Request rq;
        MPI_Isend(s.p, cnt, MPI_BYTE, to, tag, comm, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        break;
      }
      case kRsend:
        MPI_Barrier(MPI_COMM_WORLD);  // the receive is posted
        MPI_Rsend(s.p, cnt, MPI_BYTE, to, tag, comm);
        break;
      case kBsend: {
        int size = 0;
        MPI_Pack_size(cnt, MPI_BYTE, comm, &size);
        // The engine buffers an envelope and the payload: room for both.
        std::vector<char> attach(static_cast<size_t>(size) + 4 * MPI_BSEND_OVERHEAD + 1024);
        MPI_Buffer_attach(attach.data(), static_cast<int>(attach.size()));
        MPI_Bsend(s.p, cnt, MPI_BYTE, to, tag, comm);
        void *old = nullptr;
        int old_size = 0;
        MPI_Buffer_detach(&old, &old_size);
        break;
      }
      default: break;
    }
  } else if (g_rank == to) {
    Buf r(rkind, n);
    switch (call) {
      case kIsend: case kRsend: {
        MPI_Request rq;
        MPI_Irecv(r.p, cnt, MPI_BYTE, from, tag, comm, &rq);
        if (call == kRsend) MPI_Barrier(MPI_COMM_WORLD);
        MPI_Wait(&rq, &st);
        break;
      }
      case kProbe: {
        MPI_Probe(from, tag, comm, &st);
        expect_count(st, n, "Probe");
        MPI_Recv(r.p, cnt, MPI_BYTE, from, tag, comm, &st);
        break;
      }
      case kMprobe: {
        MPI_Message msg;
        MPI_Mprobe(from, tag, comm, &msg, &st);
        expect_count(st, n, "Mprobe");
        MPI_Mrecv(r.p, cnt, MPI_BYTE, &msg, &st);
        break;
      }
      default: MPI_Recv(r.p, cnt, MPI_BYTE, from, tag, comm, &st); break;
    }
    expect_pattern(r, n, seed, "recv", detail);
    expect_count(st, n, detail);
  } else if (call == kRsend) {
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

// A vector of ints on the device (3 of every 5), sent as vector or
// contiguous and received as either; the receiver's gaps must survive.
void vector_case(MPI_Comm comm, int blocks, bool send_vec, bool recv_vec, Kind rkind, unsigned seed) {
  MPI_Datatype vec;
  MPI_Type_vector(blocks, 3, 5, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  const size_t packed = size_t(blocks) * 3 * sizeof(int), span = size_t(blocks) * 5 * sizeof(int);
  char detail[128];
  std::snprintf(detail, sizeof detail, "vector %d blocks %s->%s (%s)", blocks, send_vec ? "vec" : "contig",
                recv_vec ? "vec" : "contig", kind_name(rkind));
  if (g_rank == 0) {
    Buf s(kDevice, send_vec ? span : packed);
    s.fill(seed);
    if (send_vec) MPI_Send(s.p, 1, vec, 1, 99, comm);
    else MPI_Send(s.p, static_cast<int>(packed), MPI_BYTE, 1, 99, comm);
  } else if (g_rank == 1) {
    Buf r(rkind, recv_vec ? span : packed);
    r.fill(seed ^ 0x5a5a);  // the gaps' contents, to survive
    MPI_Status st;
    if (recv_vec) MPI_Recv(r.p, 1, vec, 0, 99, comm, &st);
    else MPI_Recv(r.p, static_cast<int>(packed), MPI_BYTE, 0, 99, comm, &st);
    expect_count(st, packed, detail);
    std::vector<unsigned char> h = r.read();
    // Packed stream position k came from source byte src(k); lands at dst(k).
    auto addr = [](bool vec_layout, size_t k) {
      if (!vec_layout) return k;
      const size_t elem = k / sizeof(int), block = elem / 3, in = elem % 3;
      return (block * 5 + in) * sizeof(int) + k % sizeof(int);
    };
    std::vector<bool> written(r.n, false);
    for (size_t k = 0; k < packed; ++k) {
      const size_t d = addr(recv_vec, k), s = addr(send_vec, k);
      written[d] = true;
      if (h[d] != pattern(s, seed)) return fail("vector", detail, d, h[d], pattern(s, seed));
    }
    for (size_t i = 0; i < r.n; ++i)
      if (!written[i] && h[i] != pattern(i, seed ^ 0x5a5a)) return fail("vector gap", detail, i, h[i], pattern(i, seed ^ 0x5a5a));
  }
  MPI_Type_free(&vec);
}

// Every rank to itself, nonblocking (a blocking self-send of a rendezvous
// size would wait for its own receive).
void self_case(MPI_Comm comm, size_t n, Kind skind, Kind rkind, unsigned seed) {
  char detail[128];
  std::snprintf(detail, sizeof detail, "self %zu B %s->%s", n, kind_name(skind), kind_name(rkind));
  Buf s(skind, n), r(rkind, n);
  s.fill(seed);
  MPI_Request rq[2];
  MPI_Irecv(r.p, static_cast<int>(n), MPI_BYTE, g_rank, 3, comm, &rq[0]);
  MPI_Isend(s.p, static_cast<int>(n), MPI_BYTE, g_rank, 3, comm, &rq[1]);
  MPI_Status st[2];
  MPI_Waitall(2, rq, st);
  expect_pattern(r, n, seed, "self", detail);
  expect_count(st[0], n, detail);
}

void run_suite(MPI_Comm comm, int nprocs, bool big) {
  const size_t sizes[] = {0, 8, 4096, 16384, 16385, 1u << 20, (16u << 20) + 12};
  const Kind kinds[][2] = {{kDevice, kDevice}, {kHost, kDevice}, {kDevice, kHost}, {kPool, kDevice}, {kDevice, kPool}};
  unsigned seed = 1;
  for (size_t n : {size_t(8), size_t(100000)})
    for (const auto &k : kinds) self_case(comm, n, k[0], k[1], seed++);
  if (nprocs < 2) return;
  for (int c = 0; c < kCalls; ++c)
    for (size_t n : sizes)
      for (const auto &k : kinds) {
        // Host->host is the engine's own business; mixes are covered by
        // Send/Isend/Sendrecv in full, the other calls with device->device.
        const bool mix = k[0] != kDevice || k[1] != kDevice;
        if (mix && c != kSend && c != kIsend && c != kSendrecv) continue;
        transfer(comm, static_cast<Call>(c), n, k[0], k[1], 0, 1, seed);
        transfer(comm, static_cast<Call>(c), n, k[0], k[1], 1, 0, seed + 1);
        seed += 2;
      }
  for (int blocks : {10, 100000})
    for (int sv = 0; sv < 2; ++sv)
      for (int rv = 0; rv < 2; ++rv) {
        vector_case(comm, blocks, sv, rv, kDevice, seed++);
        if (sv && rv) vector_case(comm, blocks, true, true, kHost, seed++);
      }
  // Truncation is reported, not a crash: 1 MiB into 512 KiB on the device.
  if (g_rank == 0) {
    Buf s(kDevice, 1u << 20);
    s.fill(seed);
    MPI_Send(s.p, 1 << 20, MPI_BYTE, 1, 5, comm);
  } else if (g_rank == 1) {
    Buf r(kDevice, 1u << 19);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Status st;
    const int rc = MPI_Recv(r.p, 1 << 19, MPI_BYTE, 0, 5, comm, &st);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_TRUNCATE) {
      std::fprintf(stderr, "[1] truncated device receive returned class %d\n", cls);
      g_errors++;
    }
    expect_pattern(r, 1u << 19, seed, "truncated", "1 MiB into 512 KiB");
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
  }
  ++seed;
  if (big) {
    for (const auto &k : kinds) {
      if (k[0] == kHost || k[1] == kHost) continue;
      transfer(comm, kSend, size_t(256) << 20, k[0], k[1], 0, 1, seed++);
      transfer(comm, kIsend, size_t(256) << 20, k[0], k[1], 1, 0, seed++);
    }
  }
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int nprocs = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  if (mpix_test::use_gpu_of_rank(g_rank) < 0) {
    if (g_rank == 0) std::printf("skipped: no GPU\n");
    MPI_Finalize();
    return 77;
  }
  CHECK_CUDA(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  const bool big = std::getenv("P2P_DEVICE_SMALL") == nullptr;

  MPI_Comm nw;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  run_suite(nw, nprocs, big);
  MPI_Comm_free(&nw);
  // MPI_COMM_WORLD itself where mpix carries it (MPIX_INTERCEPT=all).
  int handled = 0;
  MPIX_Comm_is_handled(MPI_COMM_WORLD, &handled);
  if (handled) run_suite(MPI_COMM_WORLD, nprocs, false);

  CHECK_CUDA(cudaStreamDestroy(g_stream));
  int total = 0;
  MPI_Allreduce(&g_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf(total == 0 ? " No Errors\n" : " Found %d errors\n", total);
  MPI_Finalize();
  return total != 0;
}
