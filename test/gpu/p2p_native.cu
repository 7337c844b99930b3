// Device buffers on communicators the MPI library matches itself, as a
// program that knows nothing of mpix sees them under LD_PRELOAD=libmpix.so
// (issue 24: a device-buffer latency benchmark on MPI_COMM_WORLD crashed
// inside MPICH, which cannot read GPU memory). Plain MPI and CUDA, built
// without libmpix; the testlist runs it preloaded and checks mpix's
// statistics line, so it proves mpix staged the buffers (natively it
// crashes). Ranks 0 and 1, on MPI_COMM_WORLD and on a plain duplicate:
//  - every call with device buffers: Send/Ssend/Rsend/Bsend/Isend/Issend/
//    Ibsend + Request_free, Recv/Irecv, Sendrecv, Sendrecv_replace,
//    Isendrecv(_replace), Probe+Recv, Mprobe+Mrecv, Improbe+Imrecv,
//    persistent requests restarted with new contents, large-count calls;
//    sizes 0 B to 16 MiB; device, host and mixed buffers;
//  - order against host-buffer traffic on the same communicator and tag,
//    receives with MPI_ANY_SOURCE and MPI_ANY_TAG among them;
//  - vector datatypes on the device (gaps survive), truncation reported,
//    a cancelled device receive;
//  - a device send buffer overwritten as soon as MPI_Send returns.
// Skips without a GPU or with one rank.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "test/gpu/gpu_common.h"

namespace {

int g_rank = 0, g_size = 1, errors = 0;

__host__ __device__ inline unsigned char pattern(size_t i, unsigned seed) {
  return static_cast<unsigned char>((i * 2654435761u + seed * 40503u) >> 9);
}

__global__ void fill_kernel(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = pattern(i, seed);
}

// n bytes (plus a guard of 0xEE) on the device or the host.
struct Buf {
  bool dev;
  size_t n;
  unsigned char *p = nullptr;
  static constexpr size_t kGuard = 64;
  Buf(bool on_device, size_t bytes) : dev(on_device), n(bytes) {
    if (dev) CHECK_CUDA(cudaMalloc(&p, n + kGuard));
    else p = static_cast<unsigned char *>(std::malloc(n + kGuard));
    set(0xEE);
  }
  ~Buf() {
    if (dev) cudaFree(p);
    else std::free(p);
  }
  Buf(const Buf &) = delete;
  Buf &operator=(const Buf &) = delete;
  void set(int v) {
    if (dev) CHECK_CUDA(cudaMemset(p, v, n + kGuard));
    else std::memset(p, v, n + kGuard);
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  void fill(unsigned seed) {
    if (!dev) {
      for (size_t i = 0; i < n; ++i) p[i] = pattern(i, seed);
    } else if (n > 0) {
      fill_kernel<<<128, 256>>>(p, n, seed);
    }
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  std::vector<unsigned char> read() const {
    std::vector<unsigned char> h(n + kGuard);
    if (dev) CHECK_CUDA(cudaMemcpy(h.data(), p, h.size(), cudaMemcpyDefault));
    else std::memcpy(h.data(), p, h.size());
    return h;
  }
  int count() const { return static_cast<int>(n); }
};

// The first n bytes carry seed's pattern and the guard is untouched.
void expect(const Buf &b, size_t n, unsigned seed, const char *what) {
  const std::vector<unsigned char> h = b.read();
  for (size_t i = 0; i < n; ++i)
    if (h[i] != pattern(i, seed)) {
      CHECK(false, "%s: byte %zu of %zu is %d, expected %d", what, i, n, h[i], pattern(i, seed));
      return;
    }
  for (size_t i = b.n; i < b.n + Buf::kGuard; ++i)
    if (h[i] != 0xEE) {
      CHECK(false, "%s: guard byte %zu overwritten", what, i - b.n);
      return;
    }
}

void expect_count(const MPI_Status &st, size_t n, const char *what) {
  int c = -1;
  MPI_Get_count(&st, MPI_BYTE, &c);
  CHECK(c == static_cast<int>(n), "%s: count %d, expected %zu", what, c, n);
}

enum Call {
  kSend, kSsend, kRsend, kBsend, kIsend, kIssend, kIbsendFree, kSendrecv, kReplace, kIsendrecv, kIreplace,
  kProbe, kMprobe, kImprobe, kLargeCount, kCalls
};
const char *kNames[] = {"Send/Recv",      "Ssend/Recv",    "Rsend/Irecv", "Bsend/Recv",  "Isend/Irecv",
                        "Issend/Irecv",   "Ibsend+free",   "Sendrecv",    "Sendrecv_replace", "Isendrecv",
                        "Isendrecv_replace", "Probe+Recv", "Mprobe+Mrecv", "Improbe+Imrecv", "Send_c/Recv_c"};

// One message of n bytes from 0 to 1 (exchanges: both ways at once).
void transfer(MPI_Comm comm, Call call, size_t n, bool sdev, bool rdev, unsigned seed) {
  char what[160];
  std::snprintf(what, sizeof what, "%s %zu B %s->%s", kNames[call], n, sdev ? "dev" : "host", rdev ? "dev" : "host");
  const int tag = 10 + call, cnt = static_cast<int>(n);
  MPI_Status st;
  if (g_rank > 1) {
    if (call == kRsend) MPI_Barrier(comm);
    return;
  }
  const int peer = 1 - g_rank;
  if (call == kSendrecv || call == kReplace || call == kIsendrecv || call == kIreplace) {
    Buf s(sdev, n), r(rdev, n);
    s.fill(seed + g_rank);
    if (call == kSendrecv) {
      MPI_Sendrecv(s.p, cnt, MPI_BYTE, peer, tag, r.p, cnt, MPI_BYTE, peer, tag, comm, &st);
      expect(r, n, seed + peer, what);
    } else if (call == kReplace) {
      MPI_Sendrecv_replace(s.p, cnt, MPI_BYTE, peer, tag, peer, tag, comm, &st);
      expect(s, n, seed + peer, what);
    } else {
#if MPI_VERSION >= 4
      MPI_Request rq;
      if (call == kIsendrecv) MPI_Isendrecv(s.p, cnt, MPI_BYTE, peer, tag, r.p, cnt, MPI_BYTE, peer, tag, comm, &rq);
      else MPI_Isendrecv_replace(s.p, cnt, MPI_BYTE, peer, tag, peer, tag, comm, &rq);
      MPI_Wait(&rq, &st);
      expect(call == kIsendrecv ? r : s, n, seed + peer, what);
      // 0 bytes is not staged: MPICH 4.0.2's own MPI_Isendrecv leaves its
      // status's count stale (another request's), natively too.
      if (n == 0) return;
#else
      return;
#endif
    }
    expect_count(st, n, what);
    return;
  }
  if (g_rank == 0) {
    Buf s(sdev, n);
    s.fill(seed);
    MPI_Request rq;
    switch (call) {
      case kSsend: MPI_Ssend(s.p, cnt, MPI_BYTE, 1, tag, comm); break;
      case kRsend:
        MPI_Barrier(comm);  // the receive is posted
        MPI_Rsend(s.p, cnt, MPI_BYTE, 1, tag, comm);
        break;
      case kBsend: case kIbsendFree: {
        std::vector<char> attach(n + 4 * MPI_BSEND_OVERHEAD + 1024);
        MPI_Buffer_attach(attach.data(), static_cast<int>(attach.size()));
        if (call == kBsend) {
          MPI_Bsend(s.p, cnt, MPI_BYTE, 1, tag, comm);
        } else {
          MPI_Ibsend(s.p, cnt, MPI_BYTE, 1, tag, comm, &rq);
          MPI_Request_free(&rq);
        }
        s.set(0x11);  // reusable on return
        void *old = nullptr;
        int old_size = 0;
        MPI_Buffer_detach(&old, &old_size);
        break;
      }
      case kIsend: case kIssend:
        if (call == kIsend) MPI_Isend(s.p, cnt, MPI_BYTE, 1, tag, comm, &rq);
        else MPI_Issend(s.p, cnt, MPI_BYTE, 1, tag, comm, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        break;
      case kLargeCount:
#if MPI_VERSION >= 4
        MPI_Send_c(s.p, static_cast<MPI_Count>(n), MPI_BYTE, 1, tag, comm);
#endif
        break;
      default:
        MPI_Send(s.p, cnt, MPI_BYTE, 1, tag, comm);
        s.set(0x22);  // reusable on return
        break;
    }
    return;
  }
  Buf r(rdev, n);
  MPI_Request rq;
  switch (call) {
    case kRsend: case kIsend: case kIssend:
      MPI_Irecv(r.p, cnt, MPI_BYTE, 0, tag, comm, &rq);
      if (call == kRsend) MPI_Barrier(comm);
      MPI_Wait(&rq, &st);
      break;
    case kProbe:
      MPI_Probe(0, tag, comm, &st);
      expect_count(st, n, "Probe");
      MPI_Recv(r.p, cnt, MPI_BYTE, 0, tag, comm, &st);
      break;
    case kMprobe: case kImprobe: {
      MPI_Message msg;
      if (call == kMprobe) {
        MPI_Mprobe(0, tag, comm, &msg, &st);
        MPI_Mrecv(r.p, cnt, MPI_BYTE, &msg, &st);
      } else {
        int flag = 0;
        while (!flag) MPI_Improbe(0, tag, comm, &flag, &msg, &st);
        MPI_Imrecv(r.p, cnt, MPI_BYTE, &msg, &rq);
        MPI_Wait(&rq, &st);
      }
      break;
    }
    case kLargeCount:
#if MPI_VERSION >= 4
      MPI_Recv_c(r.p, static_cast<MPI_Count>(n), MPI_BYTE, 0, tag, comm, &st);
#else
      return;
#endif
      break;
    default: MPI_Recv(r.p, cnt, MPI_BYTE, 0, tag, comm, &st); break;
  }
  expect(r, n, seed, what);
  expect_count(st, n, what);
}

// Rank 0 sends k messages on one tag alternating host and device buffers;
// rank 1 receives them alternating device and host buffers, every third by
// MPI_ANY_SOURCE / MPI_ANY_TAG, nonblocking: each must be the next one.
void ordering(MPI_Comm comm, unsigned seed) {
  const size_t sizes[] = {8, 100, 5000, 70000};
  constexpr int k = 200;
  if (g_rank == 0) {
    for (int i = 0; i < k; ++i) {
      Buf s(i % 2 == 0, sizes[i % 4]);
      s.fill(seed + i);
      MPI_Send(s.p, s.count(), MPI_BYTE, 1, 3, comm);
    }
  } else if (g_rank == 1) {
    std::vector<std::unique_ptr<Buf>> bufs;
    std::vector<MPI_Request> rq(k);
    for (int i = 0; i < k; ++i) {
      bufs.push_back(std::make_unique<Buf>(i % 3 != 0, sizes[i % 4]));
      const bool wild = i % 3 == 2;
      MPI_Irecv(bufs[i]->p, bufs[i]->count(), MPI_BYTE, wild ? MPI_ANY_SOURCE : 0, wild ? MPI_ANY_TAG : 3, comm,
                &rq[i]);
    }
    std::vector<MPI_Status> st(k);
    MPI_Waitall(k, rq.data(), st.data());
    for (int i = 0; i < k; ++i) {
      char what[64];
      std::snprintf(what, sizeof what, "ordering message %d", i);
      expect(*bufs[i], sizes[i % 4], seed + i, what);
      expect_count(st[i], sizes[i % 4], what);
      CHECK(st[i].MPI_SOURCE == 0 && st[i].MPI_TAG == 3, "%s: source %d tag %d", what, st[i].MPI_SOURCE,
            st[i].MPI_TAG);
    }
  }
}

void persistent(MPI_Comm comm, unsigned seed) {
  const size_t n = 70000;
  Buf b(true, n);
  MPI_Request rq;
  if (g_rank == 0) MPI_Send_init(b.p, b.count(), MPI_BYTE, 1, 4, comm, &rq);
  else if (g_rank == 1) MPI_Recv_init(b.p, b.count(), MPI_BYTE, 0, 4, comm, &rq);
  else return;
  for (int round = 0; round < 5; ++round) {
    if (g_rank == 0) b.fill(seed + round);
    MPI_Start(&rq);
    MPI_Status st;
    MPI_Wait(&rq, &st);
    if (g_rank == 1) {
      expect(b, n, seed + round, "persistent round");
      expect_count(st, n, "persistent round");
      b.set(0xEE);
    }
  }
  MPI_Request_free(&rq);
}

// 3 ints of every 5 on the device; the receiver's gaps keep their bytes.
void vector_case(MPI_Comm comm, unsigned seed) {
  MPI_Datatype vec;
  MPI_Type_vector(1000, 3, 5, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  const size_t span = 1000 * 5 * sizeof(int);
  if (g_rank == 0) {
    Buf s(true, span);
    s.fill(seed);
    MPI_Send(s.p, 1, vec, 1, 5, comm);
  } else if (g_rank == 1) {
    Buf r(true, span);
    r.fill(seed + 1);
    MPI_Status st;
    MPI_Recv(r.p, 1, vec, 0, 5, comm, &st);
    expect_count(st, 3000 * sizeof(int), "vector");
    const std::vector<unsigned char> h = r.read();
    for (size_t i = 0; i < span; ++i) {
      const bool data = (i / sizeof(int)) % 5 < 3;
      const unsigned char want = pattern(i, data ? seed : seed + 1);
      if (h[i] != want) {
        CHECK(false, "vector: byte %zu (%s) is %d, expected %d", i, data ? "data" : "gap", h[i], want);
        break;
      }
    }
  }
  MPI_Type_free(&vec);
}

void truncation_and_cancel(MPI_Comm comm, unsigned seed) {
  MPI_Comm c;
  MPI_Comm_dup(comm, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  if (g_rank == 0) {
    Buf s(true, 4096);
    s.fill(seed);
    MPI_Send(s.p, 4096, MPI_BYTE, 1, 6, c);
  } else if (g_rank == 1) {
    Buf r(true, 1024);
    MPI_Status st;
    const int rc = MPI_Recv(r.p, 1024, MPI_BYTE, 0, 6, c, &st);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    // What a truncated receive leaves in the buffer is the MPI library's
    // business (MPICH 4.0.2 over UCX writes nothing): only the error counts.
    CHECK(cls == MPI_ERR_TRUNCATE, "truncated device receive: class %d", cls);
    // A device receive nothing will match, cancelled.
    MPI_Request rq;
    MPI_Irecv(r.p, 1024, MPI_BYTE, 0, 999, c, &rq);
    MPI_Cancel(&rq);
    MPI_Wait(&rq, &st);
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(cancelled == 1, "cancelled device receive not reported cancelled");
  }
  MPI_Comm_free(&c);
}

void suite(MPI_Comm comm, const char *name) {
  unsigned seed = 1;
  const size_t sizes[] = {0, 8, 4096, 65536, 1u << 20, (16u << 20) + 12};
  const bool mixes[][2] = {{true, true}, {true, false}, {false, true}};
  for (int c = 0; c < kCalls; ++c)
    for (size_t n : sizes)
      for (const auto &m : mixes) {
        if ((m[0] != m[1]) && c != kSend && c != kIsend && c != kSendrecv) continue;
        transfer(comm, static_cast<Call>(c), n, m[0], m[1], seed++);
      }
  ordering(comm, seed += 1000);
  persistent(comm, seed += 1000);
  vector_case(comm, seed += 10);
  truncation_and_cancel(comm, seed += 10);
  MPI_Barrier(comm);
  if (g_rank == 0) std::printf("%s: done\n", name);
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (mpix_test::use_gpu_of_rank(g_rank) < 0 || g_size < 2) {
    if (g_rank == 0) std::printf("skipped: %s\n", g_size < 2 ? "needs 2 ranks" : "no GPU");
    MPI_Finalize();
    return 77;
  }
  suite(MPI_COMM_WORLD, "MPI_COMM_WORLD");
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  suite(dup, "a duplicate");
  MPI_Comm_free(&dup);
  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf(total == 0 ? " No Errors\n" : " Found %d errors\n", total);
  MPI_Finalize();
  return total != 0;
}
