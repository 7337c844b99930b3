// The semantics of *_enqueue operations on GPU streams, on either path
// (STREAM_TEST_PATH=gpu: run by kernels on the stream, the default for
// ranks of one node; STREAM_TEST_PATH=host with MPIX_STREAM_PATH=host: the
// progress thread runs them). One or two ranks.
//  - every size from 0 B to 64 MiB arrives intact, with its status;
//  - pageable, pinned and device buffers mixed on both sides, blocking and
//    nonblocking;
//  - a truncated receive is reported (status and the next call's error);
//  - host completion calls on an enqueued request fail cleanly;
//  - a peer's host MPI calls: matched on the host path, refused with
//    MPIX_ERR_STREAM on the GPU path (wildcards too);
//  - two streams on one pair of ranks, and a wait across them refused;
//  - large blocking sends pulled by the receiver: reuse, offsets,
//    truncation, counted.
// Prints "skipped: no GPU" and exits 77 on a machine without one.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "mpix.h"
#include "test/gpu/gpu_common.h"

namespace {

int errors = 0;
int g_rank = 0;
int g_size = 1;
bool g_gpu_path = true;


__global__ void fill(unsigned char *buf, std::size_t n, unsigned seed) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    buf[i] = static_cast<unsigned char>(i * 131u + seed);
}

__global__ void check(const unsigned char *buf, std::size_t n, unsigned seed, unsigned *bad) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    if (buf[i] != static_cast<unsigned char>(i * 131u + seed)) atomicAdd(bad, 1u);
}

void host_fill(unsigned char *p, std::size_t n, unsigned seed) {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(i * 131u + seed);
}

std::size_t host_bad(const unsigned char *p, std::size_t n, unsigned seed) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad += p[i] != static_cast<unsigned char>(i * 131u + seed);
  return bad;
}

int error_class(int rc) {
  int cls = MPI_SUCCESS;
  MPI_Error_class(rc, &cls);
  return cls;
}

struct Ctx {
  MPI_Comm comm;
  cudaStream_t cs;
  unsigned *bad;  // device counter
  int peer;
};

unsigned take_bad(const Ctx &c) {
  unsigned bad = 0;
  CHECK_CUDA(cudaMemcpy(&bad, c.bad, sizeof bad, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemset(c.bad, 0, sizeof bad));
  return bad;
}

// What a receive of n bytes into device buffer r (memset to 0xEE before)
// must show: no wrong byte counted by the check kernel, the status's count
// (st may be null), and r untouched past n.
void expect_arrival(const Ctx &c, const MPI_Status *st, const unsigned char *r, std::size_t n, const char *what) {
  const unsigned bad = take_bad(c);
  CHECK(bad == 0, "%s: %u bytes wrong", what, bad);
  if (st != nullptr) {
    int count = -1;
    MPI_Get_count(st, MPI_BYTE, &count);
    CHECK(count == static_cast<int>(n), "%s: status count %d", what, count);
  }
  unsigned char after[16];
  CHECK_CUDA(cudaMemcpy(after, r + n, sizeof after, cudaMemcpyDeviceToHost));
  for (unsigned char v : after) CHECK(v == 0xEE, "%s: written past it", what);
}

void sync(const Ctx &c) {
  CHECK_CUDA(cudaStreamSynchronize(c.cs));
  MPI_Barrier(MPI_COMM_WORLD);
}

// Rank 0 (or the lower half, to self) sends each size; the receiver checks
// the bytes and the status.
void sizes(const Ctx &c, bool small) {
  // Across the medium-message bounds too (33 B, 512-byte slots,
  // MPIX_DEVICE_MID_MAX = 16 KiB).
  std::vector<std::size_t> list = {0, 1, 8, 16, 32, 33, 100, 512, 513, 4096, 8192, 8193, 16384, 16385, 65539, 1u << 20};
  if (!small) list.push_back(64u << 20);
  for (std::size_t n : list) {
    unsigned char *s = nullptr, *r = nullptr;
    CHECK_CUDA(cudaMalloc(&s, n + 1));
    CHECK_CUDA(cudaMalloc(&r, n + 1));
    const unsigned seed = static_cast<unsigned>(n % 251);
    auto st = std::make_unique<MPI_Status>();  // lives until the stream ran the receive
    const int tag = static_cast<int>(n % 1000);
    if (g_size == 1) {
      MPI_Request q[2];
      fill<<<64, 256, 0, c.cs>>>(s, n, seed);
      CHECK(MPIX_Irecv_enqueue(r, static_cast<int>(n), MPI_BYTE, 0, tag, c.comm, &q[0]) == MPI_SUCCESS, "irecv");
      CHECK(MPIX_Isend_enqueue(s, static_cast<int>(n), MPI_BYTE, 0, tag, c.comm, &q[1]) == MPI_SUCCESS, "isend");
      MPI_Status sts[2];
      CHECK(MPIX_Waitall_enqueue(2, q, sts) == MPI_SUCCESS, "waitall");
      *st = sts[0];
      check<<<64, 256, 0, c.cs>>>(r, n, seed, c.bad);
      sync(c);
      *st = sts[0];
    } else if (g_rank == 0) {
      fill<<<64, 256, 0, c.cs>>>(s, n, seed);
      CHECK(MPIX_Send_enqueue(s, static_cast<int>(n), MPI_BYTE, 1, tag, c.comm) == MPI_SUCCESS, "send %zu", n);
      sync(c);
    } else {
      // One byte of room more than the message: the count is the message's.
      CHECK(MPIX_Recv_enqueue(r, static_cast<int>(n + 1), MPI_BYTE, 0, tag, c.comm, st.get()) == MPI_SUCCESS,
            "recv %zu", n);
      check<<<64, 256, 0, c.cs>>>(r, n, seed, c.bad);
      sync(c);
    }
    if (g_size == 1 || g_rank == 1) {
      const unsigned bad = take_bad(c);
      CHECK(bad == 0, "%zu bytes: %u wrong", n, bad);
      int count = -1;
      MPI_Get_count(st.get(), MPI_BYTE, &count);
      CHECK(count == static_cast<int>(n), "%zu bytes: status count %d", n, count);
      CHECK(st->MPI_SOURCE == 0 && st->MPI_TAG == tag, "%zu bytes: status source %d tag %d", n, st->MPI_SOURCE,
            st->MPI_TAG);
      CHECK(st->MPI_ERROR == MPI_SUCCESS, "%zu bytes: status error %d", n, st->MPI_ERROR);
    }
    CHECK_CUDA(cudaFree(s));
    CHECK_CUDA(cudaFree(r));
  }
}

// Pageable, pinned and device memory on either side, blocking and not.
void mixed_buffers(const Ctx &c) {
  const std::size_t n = 100000;
  std::vector<unsigned char> pageable(n);
  unsigned char *pinned = nullptr, *dev = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinned, n));
  CHECK_CUDA(cudaMalloc(&dev, n));
  const int peer = c.peer;
  // Round 1: pageable -> pinned; round 2: pinned -> pageable; round 3:
  // device -> pageable, nonblocking.
  for (int round = 1; round <= 3; ++round) {
    const unsigned seed = 40u + static_cast<unsigned>(round);
    std::fill(pageable.begin(), pageable.end(), 0);
    std::memset(pinned, 0, n);
    const bool sender = g_size == 1 || g_rank == 0;
    const bool receiver = g_size == 1 || g_rank == 1;
    MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    unsigned char *rbuf = round == 1 ? pinned : pageable.data();
    if (receiver)
      CHECK(MPIX_Irecv_enqueue(rbuf, static_cast<int>(n), MPI_BYTE, g_size == 1 ? 0 : 0, round, c.comm, &q[0]) ==
                MPI_SUCCESS,
            "irecv round %d", round);
    if (sender) {
      const void *sbuf = nullptr;
      if (round == 1) {
        host_fill(pageable.data(), n, seed);
        sbuf = pageable.data();
      } else if (round == 2) {
        host_fill(pinned, n, seed);
        sbuf = pinned;
      } else {
        fill<<<64, 256, 0, c.cs>>>(dev, n, seed);
        sbuf = dev;
      }
      if (round == 3 || g_size == 1)
        CHECK(MPIX_Isend_enqueue(sbuf, static_cast<int>(n), MPI_BYTE, g_size == 1 ? 0 : peer, round, c.comm,
                                 &q[1]) == MPI_SUCCESS,
              "isend round %d", round);
      else
        CHECK(MPIX_Send_enqueue(sbuf, static_cast<int>(n), MPI_BYTE, peer, round, c.comm) == MPI_SUCCESS,
              "send round %d", round);
    }
    CHECK(MPIX_Waitall_enqueue(2, q, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall round %d", round);
    sync(c);
    if (receiver) {
      const std::size_t bad = host_bad(rbuf, n, seed);
      CHECK(bad == 0, "mixed buffers round %d: %zu bytes wrong", round, bad);
    }
  }
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaFree(dev));
}

// Short messages into receive buffers large enough to be received by
// several blocks (a tiny, a medium and a staged one): only what came is
// written, the status counts it.
void short_into_wide(const Ctx &c) {
  const std::size_t cap = 4u << 20;
  for (std::size_t n : {std::size_t(20), std::size_t(3000), std::size_t(20000)}) {
    unsigned char *s = nullptr, *r = nullptr;
    CHECK_CUDA(cudaMalloc(&s, n));
    CHECK_CUDA(cudaMalloc(&r, cap));
    CHECK_CUDA(cudaMemset(r, 0xEE, cap));
    const unsigned seed = static_cast<unsigned>(n % 241);
    auto st = std::make_unique<MPI_Status>();
    const bool sender = g_size == 1 || g_rank == 0;
    const bool receiver = g_size == 1 || g_rank == 1;
    MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status sts[2];  // filled when the stream runs the wait
    if (sender) fill<<<64, 256, 0, c.cs>>>(s, n, seed);
    if (receiver && g_size > 1) {
      CHECK(MPIX_Recv_enqueue(r, static_cast<int>(cap), MPI_BYTE, 0, 950, c.comm, st.get()) == MPI_SUCCESS, "recv");
    } else if (receiver) {
      MPIX_Irecv_enqueue(r, static_cast<int>(cap), MPI_BYTE, 0, 950, c.comm, &q[0]);
    }
    if (sender && g_size > 1) {
      CHECK(MPIX_Send_enqueue(s, static_cast<int>(n), MPI_BYTE, 1, 950, c.comm) == MPI_SUCCESS, "send");
    } else if (sender) {
      MPIX_Isend_enqueue(s, static_cast<int>(n), MPI_BYTE, 0, 950, c.comm, &q[1]);
      MPIX_Waitall_enqueue(2, q, sts);
    }
    if (receiver) check<<<64, 256, 0, c.cs>>>(r, n, seed, c.bad);
    sync(c);
    if (g_size == 1) *st = sts[0];
    if (receiver) {
      char what[64];
      std::snprintf(what, sizeof what, "%zu bytes into a wide receive", n);
      expect_arrival(c, st.get(), r, n, what);
    }
    CHECK_CUDA(cudaFree(s));
    CHECK_CUDA(cudaFree(r));
  }
}

// A message longer than the receive buffer: the status says MPI_ERR_TRUNCATE
// and the next call on the stream raises it; the call after that is clean.
void truncation(const Ctx &c) {
  unsigned char *s = nullptr, *r = nullptr;
  CHECK_CUDA(cudaMalloc(&s, 64));
  CHECK_CUDA(cudaMalloc(&r, 64));
  auto st = std::make_unique<MPI_Status>();
  st->MPI_ERROR = MPI_SUCCESS;
  const bool sender = g_size == 1 || g_rank == 0;
  const bool receiver = g_size == 1 || g_rank == 1;
  MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  if (receiver) MPIX_Irecv_enqueue(r, 16, MPI_BYTE, 0, 900, c.comm, &q[0]);
  if (sender) MPIX_Isend_enqueue(s, 64, MPI_BYTE, g_size == 1 ? 0 : c.peer, 900, c.comm, &q[1]);
  MPI_Status sts[2];
  MPIX_Waitall_enqueue(2, q, sts);
  sync(c);
  if (receiver) {
    CHECK(sts[0].MPI_ERROR == MPI_ERR_TRUNCATE, "truncated receive: status error %d", sts[0].MPI_ERROR);
    const int rc = MPIX_Send_enqueue(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, c.comm);
    CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "the call after a truncated receive: class %d", error_class(rc));
    const int again = MPIX_Send_enqueue(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, c.comm);
    CHECK(again == MPI_SUCCESS, "the failure was reported twice: %d", again);
  }
  sync(c);
  CHECK_CUDA(cudaFree(s));
  CHECK_CUDA(cudaFree(r));
}

using mpix_test::pulled_sends;

// Nonblocking pulled sends (MPIX_STREAM_PULL_NONBLOCKING, on by default), both ways at
// once: 70 sends of t bytes from one allocation and 70 receives in one
// wait, twice, the buffers refilled in between. A sender has 64 done words
// per peer: 64 sends pull, the others go by the ring, and all arrive in
// order. Off: the same exchange, none pulled.
void pulled_nonblocking(const Ctx &c, std::size_t t, bool pull_on) {
  const char *nb = std::getenv("MPIX_STREAM_PULL_NONBLOCKING");
  const bool on = pull_on && (nb == nullptr || (std::strcmp(nb, "off") != 0 && std::strcmp(nb, "0") != 0));
  constexpr int kMany = 70, kWords = 64, tag = 80;
  const std::size_t span = t + 16;  // each message 16-byte aligned, with room to see overruns
  unsigned char *s = nullptr, *r = nullptr;
  CHECK_CUDA(cudaMalloc(&s, span * kMany));
  CHECK_CUDA(cudaMalloc(&r, span * kMany));
  const int n = static_cast<int>(t);
  // Until each side's hosts have mapped the other's allocation.
  const long long start = pulled_sends();
  for (int i = 0; on && i < 100; ++i) {
    int mine = pulled_sends() == start ? 1 : 0, more = 0;
    MPI_Allreduce(&mine, &more, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!more) break;
    MPI_Request q[2];
    MPIX_Irecv_enqueue(r, n, MPI_BYTE, c.peer, tag + 1, c.comm, &q[0]);
    MPIX_Isend_enqueue(s, n, MPI_BYTE, c.peer, tag + 1, c.comm, &q[1]);
    MPIX_Waitall_enqueue(2, q, MPI_STATUSES_IGNORE);
    sync(c);
  }
  for (int round = 0; round < 2; ++round) {
    const long long before = pulled_sends();
    std::vector<MPI_Request> q(2 * kMany, MPI_REQUEST_NULL);
    auto st = std::make_unique<MPI_Status[]>(2 * kMany);
    CHECK_CUDA(cudaMemsetAsync(r, 0xEE, span * kMany, c.cs));
    for (int k = 0; k < kMany; ++k) {
      fill<<<64, 256, 0, c.cs>>>(s + span * k, t, static_cast<unsigned>(7 * k + round + 11 * g_rank));
      CHECK(MPIX_Irecv_enqueue(r + span * k, n, MPI_BYTE, c.peer, tag, c.comm, &q[k]) == MPI_SUCCESS, "irecv");
      CHECK(MPIX_Isend_enqueue(s + span * k, n, MPI_BYTE, c.peer, tag, c.comm, &q[kMany + k]) == MPI_SUCCESS,
            "isend");
    }
    CHECK(MPIX_Waitall_enqueue(2 * kMany, q.data(), st.get()) == MPI_SUCCESS, "waitall");
    for (int k = 0; k < kMany; ++k)
      check<<<64, 256, 0, c.cs>>>(r + span * k, t, static_cast<unsigned>(7 * k + round + 11 * c.peer), c.bad);
    sync(c);
    for (int k = 0; k < kMany; ++k) {
      char what[64];
      std::snprintf(what, sizeof what, "nonblocking pulled, round %d, message %d", round, k);
      expect_arrival(c, &st[k], r + span * k, t, what);  // the first takes every message's wrong bytes
      CHECK(st[k].MPI_SOURCE == c.peer, "%s: source %d", what, st[k].MPI_SOURCE);
    }
    const long long got = pulled_sends() - before;
    if (on) CHECK(got == kWords, "nonblocking sends pulled, round %d: %lld, expected %d", round, got, kWords);
    else CHECK(got == 0, "MPIX_STREAM_PULL_MIN=0 but %lld nonblocking sends pulled", got);
  }
  CHECK_CUDA(cudaFree(s));
  CHECK_CUDA(cudaFree(r));
}

// Large blocking sends the receiver pulls straight from the send buffer
// (MPIX_STREAM_PULL_MIN; two ranks, GPU path): each size around the bound
// and up to 64 MiB, from one buffer refilled on the stream right after
// each send returns (a send that completed before its receiver had copied
// would deliver the next fill), at offsets that keep or break the 16-byte
// alignment; into buffers longer than the message, truncated ones of each
// receive kernel (one thread, one block, every block), and a nonblocking
// receive. The buffer's first send to the peer goes by the ring while the
// hosts map it: the counter must show the others pulled.
void pulled(const Ctx &c, bool small) {
  if (g_size != 2 || !g_gpu_path) return;
  const char *env = std::getenv("MPIX_STREAM_PULL_MIN");
  const std::size_t bound = env != nullptr ? std::strtoull(env, nullptr, 10) : 8193;  // the default (src/config.cc)
  const bool on = bound > 0;
  const std::size_t t = on ? bound : std::size_t(4) << 20;
  std::vector<std::size_t> list = {t - 1, t, t + 1, std::size_t(8) << 20};
  if (!small) list.push_back(std::size_t(64) << 20);
  const std::size_t cap = (small ? std::size_t(8) << 20 : std::size_t(64) << 20) + 64;
  unsigned char *s = nullptr, *r = nullptr;
  CHECK_CUDA(cudaMalloc(&s, cap + 16));
  CHECK_CUDA(cudaMalloc(&r, cap + 16));
  constexpr int kRounds = 3;
  constexpr int tag = 77;
  // Until the hosts have mapped s: its first send offers it, and each host
  // takes the hand-shake on a later large operation of its own.
  const long long start = pulled_sends();
  for (int i = 0; on && i < 100; ++i) {
    int more = g_rank == 0 && pulled_sends() == start ? 1 : 0;
    MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!more) break;
    if (g_rank == 0) MPIX_Send_enqueue(s, static_cast<int>(t), MPI_BYTE, 1, tag + 2, c.comm);
    else MPIX_Recv_enqueue(r, static_cast<int>(t), MPI_BYTE, 0, tag + 2, c.comm, MPI_STATUS_IGNORE);
    sync(c);
  }
  const long long before = pulled_sends();
  long long expect = 0;  // sends that must have been pulled (rank 0)
  for (std::size_t n : list) {
    for (std::size_t off : {std::size_t(0), std::size_t(16), std::size_t(3)}) {
      if (off == 3 && n > (std::size_t(8) << 20)) continue;  // byte copies: slow, and 8 MiB covers them
      MPI_Barrier(MPI_COMM_WORLD);
      if (g_rank == 0) {
        for (int k = 0; k < kRounds; ++k) {
          fill<<<256, 256, 0, c.cs>>>(s + off, n, static_cast<unsigned>(n + off + k));
          CHECK(MPIX_Send_enqueue(s + off, static_cast<int>(n), MPI_BYTE, 1, tag, c.comm) == MPI_SUCCESS, "send");
        }
        if (on && n >= t) expect += kRounds;
      } else {
        for (int k = 0; k < kRounds; ++k) {
          auto st = std::make_unique<MPI_Status>();
          CHECK_CUDA(cudaMemsetAsync(r, 0xEE, n + 16, c.cs));
          CHECK(MPIX_Recv_enqueue(r, static_cast<int>(n + 1), MPI_BYTE, 0, tag, c.comm, st.get()) == MPI_SUCCESS,
                "recv");
          check<<<256, 256, 0, c.cs>>>(r, n, static_cast<unsigned>(n + off + k), c.bad);
          CHECK_CUDA(cudaStreamSynchronize(c.cs));
          char what[80];
          std::snprintf(what, sizeof what, "pulled %zu bytes at offset %zu, round %d", n, off, k);
          expect_arrival(c, st.get(), r, n, what);
        }
      }
      sync(c);
    }
  }
  // Truncated receives (recv_small_kernel's one thread, recv_kernel's
  // block, the wide kernel's grid), then a nonblocking receive (the wait
  // kernel): each must still release the sender.
  const std::size_t n = std::size_t(8) << 20;
  for (std::size_t room : {std::size_t(16), std::size_t(100000), n / 2, n}) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0) {
      fill<<<256, 256, 0, c.cs>>>(s, n, 5);
      CHECK(MPIX_Send_enqueue(s, static_cast<int>(n), MPI_BYTE, 1, tag + 1, c.comm) == MPI_SUCCESS, "send");
      if (on) ++expect;
    } else {
      CHECK_CUDA(cudaMemsetAsync(r, 0xEE, n + 16, c.cs));
      MPI_Status st;
      if (room == n) {
        MPI_Request q = MPI_REQUEST_NULL;
        CHECK(MPIX_Irecv_enqueue(r, static_cast<int>(room), MPI_BYTE, 0, tag + 1, c.comm, &q) == MPI_SUCCESS,
              "irecv");
        CHECK(MPIX_Wait_enqueue(&q, &st) == MPI_SUCCESS, "wait");
      } else {
        CHECK(MPIX_Recv_enqueue(r, static_cast<int>(room), MPI_BYTE, 0, tag + 1, c.comm, &st) == MPI_SUCCESS,
              "recv");
      }
      check<<<256, 256, 0, c.cs>>>(r, room, 5, c.bad);
      CHECK_CUDA(cudaStreamSynchronize(c.cs));
      char what[64];
      std::snprintf(what, sizeof what, "pulled into %zu bytes", room);
      // A truncated receive's count is the buffer's; checked by its error.
      expect_arrival(c, room < n ? nullptr : &st, r, room, what);
      if (room < n) {
        CHECK(st.MPI_ERROR == MPI_ERR_TRUNCATE, "pulled into %zu bytes: status error %d", room, st.MPI_ERROR);
        const int rc = MPIX_Send_enqueue(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, c.comm);
        CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "pulled into %zu bytes: the next call's class %d", room,
              error_class(rc));
      }
    }
    sync(c);
  }
  if (g_rank == 0) {
    const long long got = pulled_sends() - before;
    if (on) CHECK(got == expect, "sends pulled: %lld, expected %lld", got, expect);
    else CHECK(got == 0, "MPIX_STREAM_PULL_MIN=0 but %lld sends pulled", got);
  }
  CHECK_CUDA(cudaFree(s));
  CHECK_CUDA(cudaFree(r));
  pulled_nonblocking(c, t, on);
}

// MPI_Test / MPI_Wait / MPI_Request_free on an enqueued request.
void host_completion(const Ctx &c) {
  unsigned *d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, sizeof(unsigned)));
  MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  const bool sender = g_size == 1 || g_rank == 0;
  const bool receiver = g_size == 1 || g_rank == 1;
  if (receiver) MPIX_Irecv_enqueue(d, 1, MPI_UNSIGNED, 0, 901, c.comm, &q[0]);
  if (sender) MPIX_Isend_enqueue(d, 1, MPI_UNSIGNED, g_size == 1 ? 0 : c.peer, 901, c.comm, &q[1]);
  for (MPI_Request &r : q) {
    if (r == MPI_REQUEST_NULL) continue;
    int flag = 0;
    MPI_Request copy = r;
    CHECK(error_class(MPI_Test(&copy, &flag, MPI_STATUS_IGNORE)) == MPI_ERR_REQUEST, "MPI_Test accepted it");
    CHECK(error_class(MPI_Wait(&copy, MPI_STATUS_IGNORE)) == MPI_ERR_REQUEST, "MPI_Wait accepted it");
    CHECK(error_class(MPI_Waitall(1, &copy, MPI_STATUSES_IGNORE)) == MPI_ERR_REQUEST, "MPI_Waitall accepted it");
    CHECK(error_class(MPI_Request_free(&copy)) == MPI_ERR_REQUEST, "MPI_Request_free accepted it");
    CHECK(copy == r, "a refused call changed the handle");
  }
  CHECK(MPIX_Waitall_enqueue(2, q, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall after the refusals");
  sync(c);
  CHECK_CUDA(cudaFree(d));
}

// The peer uses host calls on the stream communicator.
void host_peer(const Ctx &c) {
  if (g_size == 1) return;
  int v = 0;
  if (g_gpu_path) {
    // The GPU runs this communicator: host calls and wildcards are refused.
    CHECK(error_class(MPI_Send(&v, 1, MPI_INT, c.peer, 5, c.comm)) == MPIX_ERR_STREAM, "host MPI_Send accepted");
    MPI_Request r = MPI_REQUEST_NULL;
    CHECK(error_class(MPI_Irecv(&v, 1, MPI_INT, c.peer, 5, c.comm, &r)) == MPIX_ERR_STREAM, "host MPI_Irecv accepted");
    int flag = 0;
    CHECK(error_class(MPI_Iprobe(c.peer, 5, c.comm, &flag, MPI_STATUS_IGNORE)) == MPIX_ERR_STREAM,
          "host MPI_Iprobe accepted");
    unsigned *d = nullptr;
    CHECK_CUDA(cudaMalloc(&d, 4 * sizeof(unsigned)));
    CHECK(error_class(MPIX_Recv_enqueue(d, 1, MPI_UNSIGNED, MPI_ANY_SOURCE, 5, c.comm, MPI_STATUS_IGNORE)) ==
              MPIX_ERR_WILDCARD,
          "MPI_ANY_SOURCE accepted");
    CHECK(error_class(MPIX_Recv_enqueue(d, 1, MPI_UNSIGNED, c.peer, MPI_ANY_TAG, c.comm, MPI_STATUS_IGNORE)) ==
              MPIX_ERR_WILDCARD,
          "MPI_ANY_TAG accepted");
    // Kernels move contiguous bytes only.
    MPI_Datatype strided;
    MPI_Type_vector(2, 1, 2, MPI_UNSIGNED, &strided);
    MPI_Type_commit(&strided);
    CHECK(error_class(MPIX_Send_enqueue(d, 1, strided, c.peer, 5, c.comm)) == MPI_ERR_TYPE,
          "a strided datatype accepted");
    MPI_Type_free(&strided);
    CHECK_CUDA(cudaFree(d));
    sync(c);
    return;
  }
  // Host-driven: rank 1 answers rank 0's enqueued operations with host calls.
  unsigned *d = nullptr;
  CHECK_CUDA(cudaMallocHost(&d, 2 * sizeof(unsigned)));
  if (g_rank == 0) {
    d[0] = 1234;
    CHECK(MPIX_Send_enqueue(d, 1, MPI_UNSIGNED, 1, 6, c.comm) == MPI_SUCCESS, "send to a host peer");
    CHECK(MPIX_Recv_enqueue(d + 1, 1, MPI_UNSIGNED, 1, 7, c.comm, MPI_STATUS_IGNORE) == MPI_SUCCESS,
          "recv from a host peer");
    sync(c);
    CHECK(d[1] == 4321, "from the host peer: %u", d[1]);
  } else {
    unsigned got = 0, back = 4321;
    CHECK(MPI_Recv(&got, 1, MPI_UNSIGNED, MPI_ANY_SOURCE, 6, c.comm, MPI_STATUS_IGNORE) == MPI_SUCCESS, "host recv");
    CHECK(got == 1234, "host recv got %u", got);
    CHECK(MPI_Send(&back, 1, MPI_UNSIGNED, 0, 7, c.comm) == MPI_SUCCESS, "host send");
    sync(c);
  }
  CHECK_CUDA(cudaFreeHost(d));
}

// Two streams and their communicators between the same ranks, the same tags
// on both: each carries its own messages, in its own order.
void two_streams(const Ctx &a, bool small) {
  cudaStream_t cs2;
  CHECK_CUDA(cudaStreamCreateWithFlags(&cs2, cudaStreamNonBlocking));
  MPIX_Stream s2 = MPIX_STREAM_NULL;
  CHECK(mpix_test::cuda_stream_create(cs2, &s2) == MPI_SUCCESS, "second stream");
  MPI_Comm comm2 = MPI_COMM_NULL;
  CHECK(MPIX_Stream_comm_create(MPI_COMM_WORLD, s2, &comm2) == MPI_SUCCESS, "second stream communicator");
  MPI_Comm_set_errhandler(comm2, MPI_ERRORS_RETURN);
  Ctx b = a;
  b.comm = comm2;
  b.cs = cs2;
  const int rounds = small ? 20 : 200;
  const std::size_t n = 4096;
  unsigned char *buf[2][2];
  for (auto &side : buf)
    for (auto &p : side) CHECK_CUDA(cudaMalloc(&p, n));
  const int peer = g_size == 1 ? 0 : a.peer;
  for (int r = 0; r < rounds; ++r) {
    const Ctx *ctx[2] = {&a, &b};
    for (int k = 0; k < 2; ++k) {
      const unsigned seed = static_cast<unsigned>(r * 2 + k);
      MPI_Request q[2];
      fill<<<8, 256, 0, ctx[k]->cs>>>(buf[k][0], n, seed + 7u * static_cast<unsigned>(g_rank));
      MPIX_Irecv_enqueue(buf[k][1], static_cast<int>(n), MPI_BYTE, peer, r % 3, ctx[k]->comm, &q[0]);
      MPIX_Isend_enqueue(buf[k][0], static_cast<int>(n), MPI_BYTE, peer, r % 3, ctx[k]->comm, &q[1]);
      MPIX_Waitall_enqueue(2, q, MPI_STATUSES_IGNORE);
      check<<<8, 256, 0, ctx[k]->cs>>>(buf[k][1], n, seed + 7u * static_cast<unsigned>(g_size == 1 ? 0 : peer),
                                        a.bad);
    }
  }
  CHECK_CUDA(cudaStreamSynchronize(cs2));
  sync(a);
  const unsigned bad = take_bad(a);
  CHECK(bad == 0, "two streams: %u bytes wrong", bad);
  // One wait over requests of two streams has no single stream order.
  MPI_Request q[4];
  MPIX_Irecv_enqueue(buf[0][1], 1, MPI_BYTE, peer, 50, a.comm, &q[0]);
  MPIX_Irecv_enqueue(buf[1][1], 1, MPI_BYTE, peer, 50, comm2, &q[1]);
  MPIX_Isend_enqueue(buf[0][0], 1, MPI_BYTE, peer, 50, a.comm, &q[2]);
  MPIX_Isend_enqueue(buf[1][0], 1, MPI_BYTE, peer, 50, comm2, &q[3]);
  MPI_Request mixed[2] = {q[0], q[1]};
  CHECK(error_class(MPIX_Waitall_enqueue(2, mixed, MPI_STATUSES_IGNORE)) == MPIX_ERR_STREAM,
        "a wait across two streams was accepted");
  MPI_Request on_a[2] = {q[0], q[2]}, on_b[2] = {q[1], q[3]};
  CHECK(MPIX_Waitall_enqueue(2, on_a, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "wait on the first stream");
  CHECK(MPIX_Waitall_enqueue(2, on_b, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "wait on the second stream");
  CHECK_CUDA(cudaStreamSynchronize(cs2));
  sync(a);
  for (auto &side : buf)
    for (auto &p : side) CHECK_CUDA(cudaFree(p));
  MPI_Comm_free(&comm2);
  CHECK(MPIX_Stream_free(&s2) == MPI_SUCCESS, "free the second stream");
  CHECK_CUDA(cudaStreamDestroy(cs2));
}

}  // namespace

int main(int argc, char **argv) {
  if (!mpix_test::init_with_gpu(&argc, &argv, &g_rank, &g_size)) return 77;
  if (g_size > 2) {
    if (g_rank == 0) std::printf("skipped: needs 1 or 2 ranks\n");
    MPI_Finalize();
    return 77;
  }
  const char *path = std::getenv("STREAM_TEST_PATH");
  g_gpu_path = path == nullptr || std::strcmp(path, "host") != 0;
  const bool small = std::getenv("STREAM_TEST_SMALL") != nullptr;
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  Ctx c{};
  CHECK_CUDA(cudaStreamCreateWithFlags(&c.cs, cudaStreamNonBlocking));
  MPIX_Stream stream = MPIX_STREAM_NULL;
  if (mpix_test::cuda_stream_create(c.cs, &stream) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
  MPIX_Stream_comm_create(MPI_COMM_WORLD, stream, &c.comm);
  MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);
  c.peer = g_size == 1 ? 0 : 1 - g_rank;
  CHECK_CUDA(cudaMalloc(&c.bad, sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(c.bad, 0, sizeof(unsigned)));

  // Each phase named as it starts: a hang shows where.
  const auto phase = [](const char *name) {
    if (g_rank == 0) std::fprintf(stderr, "phase: %s\n", name);
  };
  phase("sizes");
  sizes(c, small);
  phase("mixed buffers");
  mixed_buffers(c);
  phase("short messages into wide receives");
  short_into_wide(c);
  phase("truncation");
  truncation(c);
  phase("pulled sends");
  pulled(c, small);
  phase("host completion calls");
  host_completion(c);
  phase("host peer");
  host_peer(c);
  phase("two streams");
  two_streams(c, small);
  phase("free");

  MPI_Comm_free(&c.comm);
  CHECK(MPIX_Stream_free(&stream) == MPI_SUCCESS, "MPIX_Stream_free");
  CHECK_CUDA(cudaStreamDestroy(c.cs));
  CHECK_CUDA(cudaFree(c.bad));
  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf(total == 0 ? " No Errors\n" : " Found %d errors\n", total);
  MPI_Finalize();
  return total != 0;
}
