// bench_stream: stream-triggered ping-pong between two GPUs (one rank each).
//
//   enqueue  MPIX_Send_enqueue / MPIX_Recv_enqueue on a CUDA stream, every
//            iteration enqueued before one cudaStreamSynchronize: the host
//            never waits per message (device buffers)
//   nccl     ncclSend / ncclRecv on a stream, same pattern (libnccl.so.2
//            loaded at run time; skipped where it is missing)
//
// Each method is timed twice: by the host's clock around the loop that
// enqueues the rounds while the GPU runs them (a host that launches slower
// than the GPU runs is what this one measures), and "queued": every round
// enqueued behind a gate kernel first, then the gate opened and the rounds
// timed by CUDA events on the stream, which is the GPU's time alone.
//
// Half round trip per message size, as a table and as CSV lines
// ("csv,<method>,<bytes>,<usec>,<GB/s>", methods enqueue, enqueue_queued,
// nccl, nccl_queued). Options: -n ITERS (default 1000 for small sizes,
// scaled down for large; at most 200 queued: CUDA blocks a launch once a
// stream holds about a thousand), -m MAXBYTES (default 4 MiB; sizes 8 B, x4
// up to it), -S BYTES,BYTES,... (these sizes instead), -x 1 (also both ways
// at once: Irecv, Isend, Waitall per exchange on each rank, NCCL's grouped
// recv and send beside it; "exchange" columns, time per exchange and
// bidirectional GB/s).
// Run: mpiexec -n 2 bench/bench_stream
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mpix.h"
#include "test/gpu/gpu_common.h"

#include "nccl_loader.h"

namespace {


int g_rank = 0;

int iters_for(std::size_t bytes, int base) {
  if (bytes <= 65536) return base;
  const long scaled = static_cast<long>(base) * 65536 / static_cast<long>(bytes);
  return scaled < 20 ? 20 : static_cast<int>(scaled);
}

// Half round trip in microseconds of `iters` ping-pongs issued by `round`.
template <class Round>
double time_pingpong(cudaStream_t cs, int iters, Round round) {
  for (int i = 0; i < 10; ++i) round();  // warm-up: connections, IPC handles
  cudaStreamSynchronize(cs);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) round();
  cudaStreamSynchronize(cs);
  const double t = MPI_Wtime() - t0;
  double tmax = 0;
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return tmax / iters / 2 * 1e6;
}

__global__ void gate_kernel(const volatile int *open) {
  while (*open == 0) __nanosleep(100);
}

// The same, every round enqueued behind a closed gate before it opens.
template <class Round>
double time_pingpong_queued(cudaStream_t cs, int iters, Round round, volatile int *gate) {
  if (iters > 200) iters = 200;
  for (int i = 0; i < 10; ++i) round();
  cudaStreamSynchronize(cs);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  *gate = 0;
  gate_kernel<<<1, 1, 0, cs>>>(gate);
  cudaEventRecord(e0, cs);
  for (int i = 0; i < iters; ++i) round();
  cudaEventRecord(e1, cs);
  MPI_Barrier(MPI_COMM_WORLD);
  *gate = 1;
  cudaStreamSynchronize(cs);
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  double t = ms / 1e3, tmax = 0;
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return tmax / iters / 2 * 1e6;
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int base_iters = 1000;
  std::size_t max_bytes = std::size_t{4} << 20;
  std::vector<std::size_t> sizes;
  bool exchange = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "-n") == 0) base_iters = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "-m") == 0) max_bytes = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "-x") == 0) exchange = std::atoi(argv[i + 1]) != 0;
    if (std::strcmp(argv[i], "-S") == 0)
      for (char *p = argv[i + 1]; *p != '\0';) {
        char *end = nullptr;
        const std::size_t v = std::strtoull(p, &end, 10);
        if (end == p) break;
        if (v > 0) sizes.push_back(v);
        p = *end == ',' ? end + 1 : end;
      }
  }
  if (sizes.empty())
    for (std::size_t bytes = 8; bytes <= max_bytes; bytes *= 4) sizes.push_back(bytes);
  for (std::size_t b : sizes) max_bytes = std::max(max_bytes, b);
  if (mpix_test::use_gpu_of_rank(g_rank) < 0 || size != 2) {
    if (g_rank == 0) std::printf("bench_stream: needs 2 ranks and a GPU (skipped)\n");
    MPI_Finalize();
    return 0;
  }
  cudaStream_t cs;
  cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking);
  const int peer = 1 - g_rank;

  MPIX_Stream stream = MPIX_STREAM_NULL;
  if (mpix_test::cuda_stream_create(cs, &stream) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Comm comm;
  MPIX_Stream_comm_create(MPI_COMM_WORLD, stream, &comm);

  Nccl nccl;
  NcclComm ncomm = nullptr;
  const bool have_nccl = nccl.world_comm(true, &ncomm);

  int *gate = nullptr;  // mapped host memory
  cudaHostAlloc(&gate, sizeof(int), cudaHostAllocMapped);
  char *sbuf = nullptr, *rbuf = nullptr;
  cudaMalloc(&sbuf, max_bytes);
  cudaMalloc(&rbuf, max_bytes);
  cudaMemset(sbuf, 1, max_bytes);

  struct Row {
    std::size_t bytes;
    double enqueue_us, nccl_us, enqueue_q_us, nccl_q_us;
    double exchange_us = -1, nccl_exchange_us = -1;  // -x: both ways at once, per exchange
  };
  std::vector<Row> rows;
  for (const std::size_t bytes : sizes) {
    const int iters = iters_for(bytes, base_iters);
    const int n = static_cast<int>(bytes);
    Row row{bytes, 0, -1, 0, -1, -1, -1};
    const auto enqueue_round = [&] {
      if (g_rank == 0) {
        MPIX_Send_enqueue(sbuf, n, MPI_BYTE, peer, 0, comm);
        MPIX_Recv_enqueue(rbuf, n, MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE);
      } else {
        MPIX_Recv_enqueue(rbuf, n, MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE);
        MPIX_Send_enqueue(sbuf, n, MPI_BYTE, peer, 0, comm);
      }
    };
    row.enqueue_us = time_pingpong(cs, iters, enqueue_round);
    row.enqueue_q_us = time_pingpong_queued(cs, iters, enqueue_round, gate);
    // Both ways at once, as a halo exchange or bidirectional bandwidth
    // test posts them: nonblocking send and receive, one wait.
    const auto exchange_round = [&] {
      MPI_Request q[2];
      MPIX_Irecv_enqueue(rbuf, n, MPI_BYTE, peer, 1, comm, &q[0]);
      MPIX_Isend_enqueue(sbuf, n, MPI_BYTE, peer, 1, comm, &q[1]);
      MPIX_Waitall_enqueue(2, q, MPI_STATUSES_IGNORE);
    };
    if (exchange) row.exchange_us = 2 * time_pingpong(cs, iters, exchange_round);
    if (have_nccl) {
      const auto nccl_round = [&] {
        if (g_rank == 0) {
          nccl.send(sbuf, bytes, kNcclInt8, peer, ncomm, cs);
          nccl.recv(rbuf, bytes, kNcclInt8, peer, ncomm, cs);
        } else {
          nccl.recv(rbuf, bytes, kNcclInt8, peer, ncomm, cs);
          nccl.send(sbuf, bytes, kNcclInt8, peer, ncomm, cs);
        }
      };
      row.nccl_us = time_pingpong(cs, iters, nccl_round);
      row.nccl_q_us = time_pingpong_queued(cs, iters, nccl_round, gate);
      const auto nccl_exchange = [&] {
        nccl.group_start();
        nccl.recv(rbuf, bytes, kNcclInt8, peer, ncomm, cs);
        nccl.send(sbuf, bytes, kNcclInt8, peer, ncomm, cs);
        nccl.group_end();
      };
      if (exchange) row.nccl_exchange_us = 2 * time_pingpong(cs, iters, nccl_exchange);
    }
    rows.push_back(row);
  }

  if (g_rank == 0) {
    char lib[MPIX_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPIX_Get_library_version(lib, &len);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    std::printf("# bench_stream: ping-pong half round trip, device buffers, %s\n# %s\n", prop.name, lib);
    std::printf("%12s %12s %8s %12s %8s %12s %8s %12s", "bytes", "enqueue(us)", "GB/s", "queued(us)", "GB/s",
                "nccl(us)", "GB/s", "queued(us)");
    if (exchange) std::printf(" %12s %8s %12s %8s", "exchange(us)", "bibw", "nccl-exch", "bibw");
    std::printf("\n");
    for (const Row &r : rows) {
      std::printf("%12zu %12.2f %8.2f %12.2f %8.2f", r.bytes, r.enqueue_us, r.bytes / r.enqueue_us / 1e3,
                  r.enqueue_q_us, r.bytes / r.enqueue_q_us / 1e3);
      if (r.nccl_us >= 0)
        std::printf(" %12.2f %8.2f %12.2f", r.nccl_us, r.bytes / r.nccl_us / 1e3, r.nccl_q_us);
      else
        std::printf(" %12s %8s %12s", "n/a", "n/a", "n/a");
      if (exchange) {
        std::printf(" %12.2f %8.2f", r.exchange_us, 2.0 * r.bytes / r.exchange_us / 1e3);
        if (r.nccl_exchange_us >= 0)
          std::printf(" %12.2f %8.2f", r.nccl_exchange_us, 2.0 * r.bytes / r.nccl_exchange_us / 1e3);
      }
      std::printf("\n");
    }
    const auto csv = [](const char *method, std::size_t bytes, double us) {
      if (us >= 0) std::printf("csv,%s,%zu,%.3f,%.3f\n", method, bytes, us, bytes / us / 1e3);
    };
    for (const Row &r : rows) {
      csv("enqueue", r.bytes, r.enqueue_us);
      csv("enqueue_queued", r.bytes, r.enqueue_q_us);
      csv("nccl", r.bytes, r.nccl_us);
      csv("nccl_queued", r.bytes, r.nccl_q_us);
      csv("exchange", r.bytes, r.exchange_us);
      csv("nccl_exchange", r.bytes, r.nccl_exchange_us);
    }
  }
  if (ncomm != nullptr) nccl.comm_destroy(ncomm);
  cudaFree(sbuf);
  cudaFree(rbuf);
  cudaFreeHost(gate);
  MPI_Comm_free(&comm);
  MPIX_Stream_free(&stream);
  cudaStreamDestroy(cs);
  MPI_Finalize();
  return 0;
}
