// "The send buffer may be reused once the send returns" for every way a
// device buffer is sent (issue 24), under load, every payload checked:
//  1. device-initiated MPIX_Send: a kernel of 2048 threads on rank 0 sends 4
//     messages each, each thread refilling its one buffer as soon as a send
//     returns; rank 1's threads receive in the opposite thread order. Even
//     threads share small tags (lanes, 16 threads a tag) with messages that
//     fit the table (1 to 32 B); odd threads have a tag of their own from
//     4096 on (the key table) with ring-borne sizes (33 B to 8 KiB).
//     Payloads name their sender and number, so each must arrive exactly
//     once and intact (the proxy path delivered ~240 of 8192 with another
//     message's bytes). Several threads sending ring-borne messages on one
//     tag can deadlock the IPC path (test_dev_proto's disabled
//     SharedKeysManyThreadsRingDeadlock, left to issue 26), so those tags are
//     one thread's each.
//  2. host MPI_Isend of thousands of small device buffers (slices of one
//     device pattern) while the receiver is not receiving yet, then
//     blocking MPI_Send and MPI_Bsend from one device buffer refilled after
//     each return, and MPI_Ssend and MPI_Rsend (receives posted first)
//     from one device buffer, sizes up to the GPU rendezvous.
//  3. MPIX_Send_enqueue from one device buffer that the stream refills
//     right after each send, across sizes and tags.
// Ranks 0 and 1 take part (more ranks idle). Skips without a GPU; a hang
// ends the process after DEV_REUSE_TIMEOUT seconds (default 150) with the
// phase's name.
#include <cuda_runtime.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "mpix.h"
#include "mpix_device.h"
#include "test/gpu/gpu_common.h"

namespace {

int g_rank = 0, g_size = 1, errors = 0;

constexpr int kThreads = 2048;
constexpr int kPerThread = 4;
constexpr int kMaxBytes = 8192;
// Even threads: table-borne sizes on shared small tags; odd threads:
// ring-borne sizes on a tag of their own from 4096 on.
__device__ __host__ inline int size_of(int thread, int i) {
  const int inline_sizes[4] = {8, 24, 1, 32}, ring_sizes[4] = {100, 3000, 33, 8192};
  return (thread & 1) ? ring_sizes[i % 4] : inline_sizes[i % 4];
}
__device__ __host__ inline int tag_of(int thread) { return (thread & 1) ? 4096 + (thread >> 1) : (thread >> 1) % 64; }
__device__ __host__ inline unsigned char body(int id, int j) {
  return static_cast<unsigned char>(id * 2654435761u >> 11) ^ static_cast<unsigned char>(j * 29 + 3);
}

// Message (thread, i) has id thread * kPerThread + i: its first bytes hold
// the id (little endian, as many bytes as fit), the rest body(id, j).
__device__ void compose(unsigned char *p, int id, int n) {
  for (int j = 0; j < n; ++j) p[j] = j < 4 ? static_cast<unsigned char>(id >> (8 * j)) : body(id, j);
}

__global__ void senders(MPIX_Device_comm c, unsigned char *bufs, int *codes) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= kThreads) return;
  unsigned char *mine = bufs + size_t(t) * kMaxBytes;
  for (int i = 0; i < kPerThread; ++i) {
    const int n = size_of(t, i);
    compose(mine, t * kPerThread + i, n);
    const int rc = MPIX_Send(mine, n, 1, tag_of(t), c);
    if (rc != MPIX_DEVICE_SUCCESS) codes[t] = rc;
    // Reused at once: whatever the send still read from here afterwards
    // would now be the next message (or this poison).
    for (int j = 0; j < n; ++j) mine[j] = 0xA5;
  }
}

// Receiver thread r takes the tag of sender thread kThreads-1-r, as many
// times as that thread sent. Messages of one tag come from several sender
// threads, so each names itself; seen[id] counts deliveries.
__global__ void receivers(MPIX_Device_comm c, unsigned char *bufs, int *codes, unsigned *seen, unsigned *bad) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= kThreads) return;
  const int t = kThreads - 1 - r;
  unsigned char *mine = bufs + size_t(r) * kMaxBytes;
  for (int i = 0; i < kPerThread; ++i) {
    size_t got = 0;
    const int rc = MPIX_Recv(mine, kMaxBytes, 0, tag_of(t), c, &got);
    if (rc != MPIX_DEVICE_SUCCESS) {
      codes[r] = rc;
      continue;
    }
    int id = 0;
    for (int j = 0; j < 4 && j < static_cast<int>(got); ++j) id |= mine[j] << (8 * j);
    // A 1-byte message carries only the id's low byte: any id of this tag
    // with that byte and size 1 would do; take the smallest unseen one.
    if (got < 4) {
      bool found = false;
      for (int s = 0; s < kThreads && !found; ++s)
        for (int k = 0; k < kPerThread && !found; ++k) {
          const int cand = s * kPerThread + k;
          if (tag_of(s) != tag_of(t) || size_of(s, k) != static_cast<int>(got)) continue;
          if ((cand & ((1 << (8 * got)) - 1)) != id) continue;
          if (atomicCAS(&seen[cand], 0u, 1u) == 0u) {
            id = cand;
            found = true;
          }
        }
      if (!found) atomicAdd(bad, 1u);
      continue;
    }
    const int s = id / kPerThread, k = id % kPerThread;
    bool ok = id >= 0 && s < kThreads && tag_of(s) == tag_of(t) && size_of(s, k) == static_cast<int>(got);
    for (int j = 4; ok && j < static_cast<int>(got); ++j) ok = mine[j] == body(id, j);
    if (!ok || atomicAdd(&seen[id], 1u) != 0u) atomicAdd(bad, 1u);
  }
}

// Ends the process if a phase hangs (a device call spinning forever).
std::atomic<const char *> g_phase{nullptr};
std::atomic<bool> g_stop{false};
void watchdog() {
  const char *v = std::getenv("DEV_REUSE_TIMEOUT");
  const int secs = v && std::atoi(v) > 0 ? std::atoi(v) : 150;
  const char *phase = nullptr;
  auto since = std::chrono::steady_clock::now();
  while (!g_stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const char *now = g_phase.load();
    if (now != phase) {
      phase = now;
      since = std::chrono::steady_clock::now();
    } else if (phase != nullptr && std::chrono::steady_clock::now() - since > std::chrono::seconds(secs)) {
      std::fprintf(stderr, "[%d] FAILED: hang: phase '%s' still running after %d s\n", g_rank, phase, secs);
      std::fflush(stderr);
      std::_Exit(3);
    }
  }
}

void device_initiated(MPI_Comm comm) {
  g_phase = "device-initiated MPIX_Send";
  MPIX_Device_comm h;
  CHECK(MPIX_Comm_device_handle(comm, &h) == MPI_SUCCESS, "MPIX_Comm_device_handle");
  unsigned char *bufs = nullptr;
  int *codes = nullptr;
  unsigned *seen = nullptr, *bad = nullptr;
  CHECK_CUDA(cudaMalloc(&bufs, size_t(kThreads) * kMaxBytes));
  CHECK_CUDA(cudaMalloc(&codes, kThreads * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&seen, kThreads * kPerThread * sizeof(unsigned)));
  CHECK_CUDA(cudaMalloc(&bad, sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(codes, 0, kThreads * sizeof(int)));
  CHECK_CUDA(cudaMemset(seen, 0, kThreads * kPerThread * sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(bad, 0, sizeof(unsigned)));
  MPI_Barrier(comm);
  if (g_rank == 0) senders<<<kThreads / 128, 128>>>(h, bufs, codes);
  else if (g_rank == 1) receivers<<<kThreads / 128, 128>>>(h, bufs, codes, seen, bad);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<int> hc(kThreads);
  CHECK_CUDA(cudaMemcpy(hc.data(), codes, kThreads * sizeof(int), cudaMemcpyDeviceToHost));
  int failed = 0;
  for (int c : hc) failed += c != 0;
  CHECK(failed == 0, "%d threads got an error from a device call", failed);
  if (g_rank == 1) {
    std::vector<unsigned> hs(kThreads * kPerThread);
    unsigned hb = 0;
    CHECK_CUDA(cudaMemcpy(hs.data(), seen, hs.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(&hb, bad, sizeof hb, cudaMemcpyDeviceToHost));
    int missing = 0;
    for (unsigned s : hs) missing += s != 1;
    CHECK(hb == 0, "%u of %d device messages arrived wrong (payload, size or twice)", hb, kThreads * kPerThread);
    CHECK(missing == 0, "%d of %d device messages not received exactly once", missing, kThreads * kPerThread);
  }
  MPI_Barrier(comm);
  cudaFree(bufs);
  cudaFree(codes);
  cudaFree(seen);
  cudaFree(bad);
}

__global__ void fill_pattern(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = body(static_cast<int>(seed), static_cast<int>(i));
}

int host_size(int i) {
  const int sizes[] = {8, 24, 100, 3000, 1, 33, 4096, 8192};
  return sizes[i % 8];
}

// Receives n messages of tags 0.. into device memory and checks them
// against expect(i, j).
template <class Expect>
void receive_check(MPI_Comm comm, int n, const char *what, Expect expect) {
  unsigned char *d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, kMaxBytes));
  std::vector<unsigned char> h(kMaxBytes);
  long wrong = 0;
  for (int i = 0; i < n; ++i) {
    MPI_Status st;
    MPI_Recv(d, kMaxBytes, MPI_BYTE, 0, i, comm, &st);
    int got = -1;
    MPI_Get_count(&st, MPI_BYTE, &got);
    CHECK_CUDA(cudaMemcpy(h.data(), d, kMaxBytes, cudaMemcpyDeviceToHost));
    bool ok = got == host_size(i);
    for (int j = 0; ok && j < got; ++j) ok = h[j] == expect(i, j);
    if (!ok && wrong++ < 5) CHECK(false, "%s: message %d (%d bytes, got %d) wrong", what, i, host_size(i), got);
  }
  CHECK(wrong == 0, "%s: %ld of %d messages wrong", what, wrong, n);
  cudaFree(d);
}

void host_calls(MPI_Comm comm) {
  const char *env = std::getenv("DEV_REUSE_HOST_N");
  const int n = env && std::atoi(env) > 0 ? std::atoi(env) : 4000;
  // (a) Isends from slices of one device pattern, the receiver late.
  g_phase = "MPI_Isend of device buffers";
  constexpr int kOffsets = 97;
  unsigned char *pattern = nullptr;
  CHECK_CUDA(cudaMalloc(&pattern, kMaxBytes + kOffsets));
  fill_pattern<<<16, 256>>>(pattern, kMaxBytes + kOffsets, 77);
  CHECK_CUDA(cudaDeviceSynchronize());
  if (g_rank == 0) {
    std::vector<MPI_Request> reqs(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
      MPI_Isend(pattern + i % kOffsets, host_size(i), MPI_BYTE, 1, i, comm, &reqs[static_cast<size_t>(i)]);
    MPI_Barrier(comm);
    MPI_Waitall(n, reqs.data(), MPI_STATUSES_IGNORE);
  } else if (g_rank == 1) {
    MPI_Barrier(comm);
    receive_check(comm, n, "Isend from a device pattern",
                  [](int i, int j) { return body(77, i % kOffsets + j); });
  } else {
    MPI_Barrier(comm);
  }
  cudaFree(pattern);
  // (b) blocking sends of GPU-eager sizes from one device buffer refilled
  // after each return (they complete without the receiver), and buffered
  // sends, the receiver late.
  for (int mode = 0; mode < 2; ++mode) {
    g_phase = mode == 0 ? "MPI_Send from one device buffer" : "MPI_Bsend from one device buffer";
    const int m = n / 4;
    std::vector<char> attach;
    if (g_rank == 0) {
      if (mode == 1) {
        attach.resize(static_cast<size_t>(m) * (kMaxBytes + MPI_BSEND_OVERHEAD + 64));
        MPI_Buffer_attach(attach.data(), static_cast<int>(attach.size()));
      }
      unsigned char *one = nullptr;
      CHECK_CUDA(cudaMalloc(&one, kMaxBytes));
      for (int i = 0; i < m; ++i) {
        fill_pattern<<<8, 256>>>(one, kMaxBytes, 1000 + i);
        CHECK_CUDA(cudaDeviceSynchronize());
        if (mode == 0) MPI_Send(one, host_size(i), MPI_BYTE, 1, i, comm);
        else MPI_Bsend(one, host_size(i), MPI_BYTE, 1, i, comm);
        CHECK_CUDA(cudaMemset(one, 0x5A, kMaxBytes));  // reusable on return
        CHECK_CUDA(cudaDeviceSynchronize());
      }
      MPI_Barrier(comm);
      if (mode == 1) {
        void *old = nullptr;
        int size = 0;
        MPI_Buffer_detach(&old, &size);
      }
      cudaFree(one);
    } else if (g_rank == 1) {
      MPI_Barrier(comm);
      receive_check(comm, m, g_phase.load(), [](int i, int j) { return body(1000 + i, j); });
    } else {
      MPI_Barrier(comm);
    }
  }
  // (c) synchronous and ready sends (the receives posted first) from one
  // device buffer refilled after each return, every size up to rendezvous.
  const int sizes[] = {8, 3000, 8192, 8193, 100000};
  for (int mode = 0; mode < 2; ++mode) {
    g_phase = mode == 0 ? "MPI_Ssend from one device buffer" : "MPI_Rsend from one device buffer";
    const int m = 200;
    constexpr int kCap = 100000;
    if (g_rank == 0) {
      unsigned char *one = nullptr;
      CHECK_CUDA(cudaMalloc(&one, kCap));
      MPI_Barrier(comm);
      for (int i = 0; i < m; ++i) {
        fill_pattern<<<32, 256>>>(one, kCap, 3000 + i);
        CHECK_CUDA(cudaDeviceSynchronize());
        if (mode == 0) MPI_Ssend(one, sizes[i % 5], MPI_BYTE, 1, i, comm);
        else MPI_Rsend(one, sizes[i % 5], MPI_BYTE, 1, i, comm);
        CHECK_CUDA(cudaMemset(one, 0x3C, kCap));
        CHECK_CUDA(cudaDeviceSynchronize());
      }
      cudaFree(one);
    } else if (g_rank == 1) {
      unsigned char *all = nullptr;
      CHECK_CUDA(cudaMalloc(&all, size_t(m) * kCap));
      std::vector<MPI_Request> reqs(m);
      for (int i = 0; i < m; ++i) MPI_Irecv(all + size_t(i) * kCap, kCap, MPI_BYTE, 0, i, comm, &reqs[i]);
      MPI_Barrier(comm);
      std::vector<MPI_Status> st(m);
      MPI_Waitall(m, reqs.data(), st.data());
      std::vector<unsigned char> h(kCap);
      long wrong = 0;
      for (int i = 0; i < m; ++i) {
        int got = -1;
        MPI_Get_count(&st[i], MPI_BYTE, &got);
        CHECK_CUDA(cudaMemcpy(h.data(), all + size_t(i) * kCap, kCap, cudaMemcpyDeviceToHost));
        bool ok = got == sizes[i % 5];
        for (int j = 0; ok && j < got; ++j) ok = h[j] == body(3000 + i, j);
        if (!ok) ++wrong;
      }
      CHECK(wrong == 0, "%s: %ld of %d messages wrong", g_phase.load(), wrong, m);
      cudaFree(all);
    } else {
      MPI_Barrier(comm);
    }
  }
}

void enqueued(MPI_Comm world) {
  g_phase = "MPIX_Send_enqueue from one device buffer";
  cudaStream_t cs;
  CHECK_CUDA(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  MPIX_Stream stream;
  CHECK(mpix_test::cuda_stream_create(cs, &stream) == MPI_SUCCESS, "MPIX_Stream_create");
  MPI_Comm comm;
  MPIX_Stream_comm_create(world, stream, &comm);
  const int sizes[] = {8, 24, 100, 3000, 16384, 70000};
  constexpr int kMsgs = 600;
  constexpr int kCap = 70000;
  if (g_rank == 0) {
    unsigned char *one = nullptr;
    CHECK_CUDA(cudaMalloc(&one, kCap));
    for (int i = 0; i < kMsgs; ++i) {
      // The stream fills, sends, and refills at once for the next one.
      fill_pattern<<<32, 256, 0, cs>>>(one, kCap, 5000 + i);
      MPIX_Send_enqueue(one, sizes[i % 6], MPI_BYTE, 1, (i & 1) ? 4096 + i % 100 : i % 60, comm);
    }
    CHECK_CUDA(cudaStreamSynchronize(cs));
    cudaFree(one);
  } else if (g_rank == 1) {
    unsigned char *all = nullptr;
    CHECK_CUDA(cudaMalloc(&all, size_t(kMsgs) * kCap));
    for (int i = 0; i < kMsgs; ++i)
      MPIX_Recv_enqueue(all + size_t(i) * kCap, sizes[i % 6], MPI_BYTE, 0, (i & 1) ? 4096 + i % 100 : i % 60, comm,
                        MPI_STATUS_IGNORE);
    CHECK_CUDA(cudaStreamSynchronize(cs));
    std::vector<unsigned char> h(kCap);
    long wrong = 0;
    for (int i = 0; i < kMsgs; ++i) {
      CHECK_CUDA(cudaMemcpy(h.data(), all + size_t(i) * kCap, sizes[i % 6], cudaMemcpyDeviceToHost));
      bool ok = true;
      for (int j = 0; ok && j < sizes[i % 6]; ++j) ok = h[j] == body(5000 + i, j);
      if (!ok) ++wrong;
    }
    CHECK(wrong == 0, "enqueued: %ld of %d messages wrong", wrong, kMsgs);
    cudaFree(all);
  }
  MPI_Comm_free(&comm);
  CHECK(MPIX_Stream_free(&stream) == MPI_SUCCESS, "MPIX_Stream_free");
  CHECK_CUDA(cudaStreamDestroy(cs));
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (mpix_test::use_gpu_of_rank(g_rank) < 0) {
    if (g_rank == 0) std::printf("skipped: no GPU\n");
    MPI_Finalize();
    return 77;
  }
  if (g_size < 2) {
    if (g_rank == 0) std::printf("skipped: needs 2 ranks\n");
    MPI_Finalize();
    return 77;
  }
  std::thread dog(watchdog);
  MPI_Comm comm;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &comm);
  int handled = 0;
  MPIX_Comm_is_handled(comm, &handled);
  CHECK(handled == 1, "the no-wildcard duplicate is not handled by mpix");
  const char *only = std::getenv("DEV_REUSE_ONLY");  // device, host or enqueue; unset or empty: all
  if (only != nullptr && *only == '\0') only = nullptr;
  const auto want = [only](const char *p) { return only == nullptr || std::strcmp(only, p) == 0; };
  if (want("device")) device_initiated(comm);
  if (want("host")) host_calls(comm);
  if (want("enqueue")) enqueued(MPI_COMM_WORLD);
  MPI_Comm_free(&comm);
  g_phase = nullptr;
  g_stop = true;
  dog.join();
  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf(total == 0 ? " No Errors\n" : " Found %d errors\n", total);
  MPI_Finalize();
  return total != 0;
}
