// Stream-triggered send/recv on a CUDA stream (two ranks, one GPU each):
//  - ordering against kernels on the same stream: a kernel writes the send
//    buffer, MPIX_Send_enqueue sends it, MPIX_Recv_enqueue receives, a
//    kernel reads and checks the receive buffer, many rounds with no host
//    synchronisation in between; with host-mapped pinned buffers (the
//    trigger mechanism alone) and with device buffers (the engine's
//    GPU-aware path);
//  - the host call returns at once: enqueuing behind a 100 ms kernel takes
//    far less than 100 ms;
//  - many in-flight operations: STREAM_TEST_MANY MPIX_Isend_enqueue /
//    MPIX_Irecv_enqueue and one MPIX_Waitall_enqueue (more than the queue
//    depth when run with a small MPIX_STREAM_QUEUE_DEPTH: back-pressure).
// Prints "skipped: no GPU" and exits 77 on a machine without one.
#include <cuda_runtime.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "mpix.h"
#include "test/gpu/gpu_common.h"

namespace {

int errors = 0;
int g_rank = 0;
int g_size = 1;


__global__ void fill(unsigned *buf, unsigned n, unsigned round) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    buf[i] = round * 7919u + i;
}

// Counts elements that differ from what round `round` sent, then poisons the
// buffer so a receive that did not happen is caught in the next round.
__global__ void check(unsigned *buf, unsigned n, unsigned round, unsigned *bad) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    if (buf[i] != round * 7919u + i) atomicAdd(bad, 1u);
    buf[i] = 0xdeadbeefu;
  }
}

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

// rounds of: rank 0 fills + sends, rank 1 receives + checks + fills + sends
// back, rank 0 receives + checks. All enqueued, one synchronisation at the end.
void ping_pong(MPI_Comm comm, cudaStream_t cs, unsigned *sbuf, unsigned *rbuf, unsigned n, int rounds,
               unsigned *bad_dev, const char *what) {
  const int peer = 1 - g_rank;
  for (int r = 0; r < rounds; ++r) {
    const unsigned round = static_cast<unsigned>(r);
    if (g_size == 1) {
      // To self: both halves nonblocking, completed in stream order.
      MPI_Request req[2];
      fill<<<64, 256, 0, cs>>>(sbuf, n, round);
      MPIX_Irecv_enqueue(rbuf, static_cast<int>(n), MPI_UNSIGNED, 0, r, comm, &req[0]);
      MPIX_Isend_enqueue(sbuf, static_cast<int>(n), MPI_UNSIGNED, 0, r, comm, &req[1]);
      MPIX_Waitall_enqueue(2, req, MPI_STATUSES_IGNORE);
      check<<<64, 256, 0, cs>>>(rbuf, n, round, bad_dev);
    } else if (g_rank == 0) {
      fill<<<64, 256, 0, cs>>>(sbuf, n, round);
      MPIX_Send_enqueue(sbuf, static_cast<int>(n), MPI_UNSIGNED, peer, r, comm);
      // MPI_STATUS_IGNORE: a status must stay valid until the stream reaches
      // the receive, which a local variable would not.
      MPIX_Recv_enqueue(rbuf, static_cast<int>(n), MPI_UNSIGNED, peer, r, comm, MPI_STATUS_IGNORE);
      check<<<64, 256, 0, cs>>>(rbuf, n, round + 1000, bad_dev);
    } else {
      MPIX_Recv_enqueue(rbuf, static_cast<int>(n), MPI_UNSIGNED, peer, r, comm, MPI_STATUS_IGNORE);
      check<<<64, 256, 0, cs>>>(rbuf, n, round, bad_dev);
      fill<<<64, 256, 0, cs>>>(sbuf, n, round + 1000);
      MPIX_Send_enqueue(sbuf, static_cast<int>(n), MPI_UNSIGNED, peer, r, comm);
    }
  }
  cudaError_t e = cudaStreamSynchronize(cs);
  CHECK(e == cudaSuccess, "%s: %s", what, cudaGetErrorString(e));
  unsigned bad = 0;
  cudaMemcpy(&bad, bad_dev, sizeof bad, cudaMemcpyDeviceToHost);
  CHECK(bad == 0, "%s: %u elements wrong over %d rounds of %u", what, bad, rounds, n);
  cudaMemset(bad_dev, 0, sizeof(unsigned));
}

void many_in_flight(MPI_Comm comm, cudaStream_t cs, unsigned *buf, int k, unsigned *bad_dev) {
  const int peer = g_size == 1 ? 0 : 1 - g_rank;
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(k));
  std::vector<MPI_Status> sts(static_cast<std::size_t>(k));
  if (g_size == 1) {
    // To self: k receives into the upper half, k sends from the lower half.
    std::vector<MPI_Request> all(2 * static_cast<std::size_t>(k));
    std::vector<MPI_Status> all_st(all.size());
    fill<<<64, 256, 0, cs>>>(buf, static_cast<unsigned>(k), 5);
    cudaMemsetAsync(buf + k, 0, sizeof(unsigned) * k, cs);
    for (int i = 0; i < k; ++i) MPIX_Irecv_enqueue(buf + k + i, 1, MPI_UNSIGNED, 0, i, comm, &all[i]);
    for (int i = 0; i < k; ++i) MPIX_Isend_enqueue(buf + i, 1, MPI_UNSIGNED, 0, i, comm, &all[k + i]);
    CHECK(MPIX_Waitall_enqueue(2 * k, all.data(), all_st.data()) == MPI_SUCCESS, "MPIX_Waitall_enqueue");
    check<<<64, 256, 0, cs>>>(buf + k, static_cast<unsigned>(k), 5, bad_dev);
    cudaError_t e = cudaStreamSynchronize(cs);
    CHECK(e == cudaSuccess, "many: %s", cudaGetErrorString(e));
    for (int i = 0; i < k; ++i) CHECK(all_st[i].MPI_SOURCE == 0 && all_st[i].MPI_TAG == i, "status %d", i);
    unsigned bad = 0;
    cudaMemcpy(&bad, bad_dev, sizeof bad, cudaMemcpyDeviceToHost);
    CHECK(bad == 0, "many to self: %u of %d wrong", bad, k);
    cudaMemset(bad_dev, 0, sizeof(unsigned));
    return;
  }
  if (g_rank == 0) {
    fill<<<64, 256, 0, cs>>>(buf, static_cast<unsigned>(k), 5);
    for (int i = 0; i < k; ++i) MPIX_Isend_enqueue(buf + i, 1, MPI_UNSIGNED, peer, i, comm, &reqs[i]);
  } else {
    cudaMemsetAsync(buf, 0, sizeof(unsigned) * k, cs);
    for (int i = 0; i < k; ++i) MPIX_Irecv_enqueue(buf + i, 1, MPI_UNSIGNED, peer, i, comm, &reqs[i]);
  }
  CHECK(MPIX_Waitall_enqueue(k, reqs.data(), sts.data()) == MPI_SUCCESS, "MPIX_Waitall_enqueue");
  for (int i = 0; i < k; ++i) CHECK(reqs[i] == MPI_REQUEST_NULL, "request %d left", i);
  if (g_rank == 1) check<<<64, 256, 0, cs>>>(buf, static_cast<unsigned>(k), 5, bad_dev);
  cudaError_t e = cudaStreamSynchronize(cs);
  CHECK(e == cudaSuccess, "many: %s", cudaGetErrorString(e));
  if (g_rank == 1)
    for (int i = 0; i < k; ++i) CHECK(sts[i].MPI_SOURCE == 0 && sts[i].MPI_TAG == i, "status %d", i);
  unsigned bad = 0;
  cudaMemcpy(&bad, bad_dev, sizeof bad, cudaMemcpyDeviceToHost);
  CHECK(bad == 0, "many: %u of %d wrong", bad, k);
  cudaMemset(bad_dev, 0, sizeof(unsigned));
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int gpu = mpix_test::use_gpu_of_rank(g_rank);
  if (gpu < 0) {
    if (g_rank == 0) std::printf("skipped: no GPU\n");
    MPI_Finalize();
    return 77;
  }
  g_size = size;
  if (size > 2) {
    if (g_rank == 0) std::printf("skipped: needs 1 or 2 ranks\n");
    MPI_Finalize();
    return 77;
  }
  cudaStream_t cs;
  cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking);
  MPIX_Stream stream = MPIX_STREAM_NULL;
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  int rc = mpix_test::cuda_stream_create(cs, &stream);
  CHECK(rc == MPI_SUCCESS, "MPIX_Stream_create of a cudaStream_t: error %d", rc);
  if (rc != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Comm comm;
  MPIX_Stream_comm_create(MPI_COMM_WORLD, stream, &comm);
  MPIX_Stream got = MPIX_STREAM_NULL;
  MPIX_Comm_get_stream(comm, 0, &got);
  CHECK(got == stream, "MPIX_Comm_get_stream");

  unsigned *bad_dev = nullptr;
  cudaMalloc(&bad_dev, sizeof(unsigned));
  cudaMemset(bad_dev, 0, sizeof(unsigned));
  const char *small_env = std::getenv("STREAM_TEST_SMALL");
  const bool small = small_env != nullptr && std::atoi(small_env) != 0;
  const int rounds = small ? 20 : 200;

  // Host-mapped pinned buffers: kernels write them through their device
  // view, the engine reads them as host memory.
  for (unsigned n : {1u, 1024u, 1u << 20}) {
    unsigned *hs = nullptr, *hr = nullptr, *ds = nullptr, *dr = nullptr;
    cudaHostAlloc(&hs, n * sizeof(unsigned), cudaHostAllocMapped);
    cudaHostAlloc(&hr, n * sizeof(unsigned), cudaHostAllocMapped);
    cudaHostGetDevicePointer(&ds, hs, 0);
    cudaHostGetDevicePointer(&dr, hr, 0);
    char what[64];
    std::snprintf(what, sizeof what, "mapped host, %u elements", n);
    // Sends and receives name the host view; kernels the device view (the
    // same pointer under UVA).
    ping_pong(comm, cs, ds, dr, n, rounds, bad_dev, what);
    cudaFreeHost(hs);
    cudaFreeHost(hr);
  }
  // Device buffers: the engine's GPU-aware path underneath.
  if (std::getenv("STREAM_TEST_NO_DEVICE") == nullptr) {
    for (unsigned n : {1u, 4096u, 1u << 22}) {
      unsigned *ds = nullptr, *dr = nullptr;
      cudaMalloc(&ds, n * sizeof(unsigned));
      cudaMalloc(&dr, n * sizeof(unsigned));
      char what[64];
      std::snprintf(what, sizeof what, "device, %u elements", n);
      ping_pong(comm, cs, ds, dr, n, small ? 5 : 50, bad_dev, what);
      cudaFree(ds);
      cudaFree(dr);
    }
  }

  // The host does not wait for the stream: enqueue behind a long kernel.
  {
    int clock_khz = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, gpu);
    unsigned *hb = nullptr, *db = nullptr;
    cudaHostAlloc(&hb, 2 * sizeof(unsigned), cudaHostAllocMapped);
    cudaHostGetDevicePointer(&db, hb, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    spin<<<1, 1, 0, cs>>>(static_cast<long long>(clock_khz) * 100);  // ~100 ms
    const auto t0 = std::chrono::steady_clock::now();
    if (size == 1) {
      MPI_Request req[2];
      fill<<<1, 32, 0, cs>>>(db, 1, 77);
      MPIX_Irecv_enqueue(db + 1, 1, MPI_UNSIGNED, 0, 0, comm, &req[0]);
      MPIX_Isend_enqueue(db, 1, MPI_UNSIGNED, 0, 0, comm, &req[1]);
      MPIX_Waitall_enqueue(2, req, MPI_STATUSES_IGNORE);
      check<<<1, 32, 0, cs>>>(db + 1, 1, 77, bad_dev);
    } else if (g_rank == 0) {
      fill<<<1, 32, 0, cs>>>(db, 1, 77);
      MPIX_Send_enqueue(db, 1, MPI_UNSIGNED, 1, 0, comm);
    } else {
      MPIX_Recv_enqueue(db, 1, MPI_UNSIGNED, 0, 0, comm, MPI_STATUS_IGNORE);
      check<<<1, 32, 0, cs>>>(db, 1, 77, bad_dev);
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    CHECK(ms < 50.0, "enqueuing behind a 100 ms kernel took %.1f ms (the host waited for the stream)", ms);
    cudaStreamSynchronize(cs);
    unsigned bad = 0;
    cudaMemcpy(&bad, bad_dev, sizeof bad, cudaMemcpyDeviceToHost);
    CHECK(bad == 0, "behind a long kernel: wrong value");
    cudaMemset(bad_dev, 0, sizeof(unsigned));
    cudaFreeHost(hb);
  }

  // Many operations in flight.
  {
    const char *k_env = std::getenv("STREAM_TEST_MANY");
    const int k = k_env ? std::atoi(k_env) : 4000;
    unsigned *hb = nullptr, *db = nullptr;
    cudaHostAlloc(&hb, 2 * sizeof(unsigned) * k, cudaHostAllocMapped);
    cudaHostGetDevicePointer(&db, hb, 0);
    many_in_flight(comm, cs, db, k, bad_dev);
    cudaFreeHost(hb);
  }

  MPI_Comm_free(&comm);
  CHECK(MPIX_Stream_free(&stream) == MPI_SUCCESS, "MPIX_Stream_free");
  cudaStreamDestroy(cs);
  cudaFree(bad_dev);
  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf(total == 0 ? " No Errors\n" : " Found %d errors\n", total);
  MPI_Finalize();
  return total != 0;
}
