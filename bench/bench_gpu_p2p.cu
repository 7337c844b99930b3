// Device-buffer ping-pong between two ranks (one GPU each), 8 B .. 256 MiB,
// three ways in one run so that they are measured side by side:
//   mpix    MPI_Send/MPI_Recv of device buffers on a no-wildcard communicator
//           (libmpix: CUDA IPC or pipelined staging underneath)
//   staged  the MPI library natively (MPI_COMM_WORLD, not handled by mpix)
//           with cudaMemcpy to and from host buffers around each message:
//           what an application does over an MPI that is not CUDA-aware
//   nccl    ncclSend/ncclRecv on a stream, synchronised per message
//           (libnccl.so.2 loaded at run time; skipped where it is missing)
// Prints half round-trip latency and bandwidth per size and writes CSV to
// argv[1] if given. Usage: mpiexec -n 2 bench_gpu_p2p [out.csv] [max_bytes]
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mpix.h"
#include "test/gpu/gpu_common.h"

#include "nccl_loader.h"

namespace {



int iterations(size_t n) {
  const size_t budget = size_t(1) << 29;  // bytes moved per size and mode, about
  return static_cast<int>(std::clamp<size_t>(budget / std::max<size_t>(n, 1), 10, 2000));
}

struct Result {
  size_t bytes;
  const char *mode;
  double half_rtt_us;
  double gbps;
};

int g_rank = 0;

// Times iters round trips of `one_way` (a function that moves n bytes to
// the peer or from it, depending on `sending`).
template <class F>
double time_pingpong(int iters, F one_way) {
  const int warmup = std::max(2, iters / 10);
  for (int i = 0; i < warmup; ++i) {
    one_way(g_rank == 0);
    one_way(g_rank != 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    one_way(g_rank == 0);
    one_way(g_rank != 0);
  }
  const double t = MPI_Wtime() - t0;
  double max_t = 0;
  MPI_Allreduce(&t, &max_t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return max_t / (2.0 * iters) * 1e6;
}

}  // namespace

int main(int argc, char **argv) {
  int ngpu = 0;
  if (!mpix_test::init_two_ranks_with_gpu(&argc, &argv, &g_rank, &ngpu)) return 77;
  const char *csv_path = argc > 1 ? argv[1] : nullptr;
  const size_t max_bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : size_t(256) << 20;
  const int peer = 1 - g_rank;

  unsigned char *dsend = nullptr, *drecv = nullptr, *hsend = nullptr, *hrecv = nullptr;
  CHECK_CUDA(cudaMalloc(&dsend, max_bytes));
  CHECK_CUDA(cudaMalloc(&drecv, max_bytes));
  CHECK_CUDA(cudaMemset(dsend, g_rank + 1, max_bytes));
  // The staged baseline uses pinned host buffers: the fastest a careful
  // application gets from cudaMemcpy.
  CHECK_CUDA(cudaMallocHost(&hsend, max_bytes));
  CHECK_CUDA(cudaMallocHost(&hrecv, max_bytes));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  MPI_Comm nw;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  int handled = 0;
  MPIX_Comm_is_handled(MPI_COMM_WORLD, &handled);
  if (handled && g_rank == 0)
    std::printf("warning: MPI_COMM_WORLD is handled by mpix (MPIX_INTERCEPT=all): the staged baseline is not native\n");

  Nccl nccl;
  NcclComm ncomm = nullptr;
  const bool have_nccl = nccl.world_comm(true, &ncomm);

  // Rows are printed as they are measured, so a run cut short by a time
  // limit still shows what it measured.
  if (g_rank == 0) {
    std::printf("# device-buffer ping-pong, 2 ranks, GPU %d and %d%s\n", 0, 1 % ngpu,
                have_nccl ? "" : " (NCCL not found: no nccl column)");
    std::printf("%12s %12s %10s %12s %10s %12s %10s\n", "bytes", "mpix us", "GB/s", "staged us", "GB/s", "nccl us",
                "GB/s");
    std::fflush(stdout);
  }
  std::vector<Result> results;
  for (size_t n = 8; n <= max_bytes; n *= 2) {
    const int iters = iterations(n);
    const int cnt = static_cast<int>(n);
    const double mpix_us = time_pingpong(iters, [&](bool sending) {
      if (sending) MPI_Send(dsend, cnt, MPI_BYTE, peer, 1, nw);
      else MPI_Recv(drecv, cnt, MPI_BYTE, peer, 1, nw, MPI_STATUS_IGNORE);
    });
    const double staged_us = time_pingpong(iters, [&](bool sending) {
      if (sending) {
        cudaMemcpy(hsend, dsend, n, cudaMemcpyDeviceToHost);
        MPI_Send(hsend, cnt, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
      } else {
        MPI_Recv(hrecv, cnt, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        cudaMemcpy(drecv, hrecv, n, cudaMemcpyHostToDevice);
      }
    });
    results.push_back({n, "mpix", mpix_us, n / mpix_us / 1e3});
    results.push_back({n, "staged", staged_us, n / staged_us / 1e3});
    if (have_nccl) {
      const double nccl_us = time_pingpong(iters, [&](bool sending) {
        if (sending) nccl.send(dsend, n, kNcclInt8, peer, ncomm, stream);
        else nccl.recv(drecv, n, kNcclInt8, peer, ncomm, stream);
        cudaStreamSynchronize(stream);
      });
      results.push_back({n, "nccl", nccl_us, n / nccl_us / 1e3});
    }
    if (g_rank == 0) {
      const size_t per = have_nccl ? 3 : 2;
      const size_t i = results.size() - per;
      std::printf("%12zu %12.2f %10.2f %12.2f %10.2f", results[i].bytes, results[i].half_rtt_us, results[i].gbps,
                  results[i + 1].half_rtt_us, results[i + 1].gbps);
      if (have_nccl) std::printf(" %12.2f %10.2f", results[i + 2].half_rtt_us, results[i + 2].gbps);
      std::printf("\n");
      std::fflush(stdout);
    }
  }

  // Correctness of the last (largest) mpix transfer: rank 0's bytes landed.
  // (An exchange: two blocking sends of a rendezvous-sized message facing
  // each other would each wait for the other's receive.)
  MPI_Sendrecv(dsend, static_cast<int>(max_bytes), MPI_BYTE, peer, 3, drecv, static_cast<int>(max_bytes), MPI_BYTE,
               peer, 3, nw, MPI_STATUS_IGNORE);
  unsigned char first = 0, last = 0;
  cudaMemcpy(&first, drecv, 1, cudaMemcpyDeviceToHost);
  cudaMemcpy(&last, drecv + max_bytes - 1, 1, cudaMemcpyDeviceToHost);
  const bool ok = first == peer + 1 && last == peer + 1;

  if (g_rank == 0) {
    std::printf("data check: %s\n", ok ? "ok" : "WRONG DATA");
    if (csv_path != nullptr) {
      if (std::FILE *f = std::fopen(csv_path, "w")) {
        std::fprintf(f, "bytes,mode,half_rtt_us,bandwidth_GBps\n");
        for (const Result &r : results) std::fprintf(f, "%zu,%s,%.3f,%.3f\n", r.bytes, r.mode, r.half_rtt_us, r.gbps);
        std::fclose(f);
      }
    }
  }
  if (have_nccl) nccl.comm_destroy(ncomm);
  MPI_Comm_free(&nw);
  cudaStreamDestroy(stream);
  cudaFree(dsend);
  cudaFree(drecv);
  cudaFreeHost(hsend);
  cudaFreeHost(hrecv);
  MPI_Finalize();
  return ok ? 0 : 1;
}
