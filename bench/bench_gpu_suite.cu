// The device-buffer suite every GPU-MPI user runs first, in the shapes of
// the OSU micro-benchmarks, three ways in one run (two ranks, one GPU each,
// or both on one GPU under MPS):
//   latency  ping-pong half round trip (us)
//   bw       rank 0 sends a window of 64 nonblocking messages, rank 1
//            receives them and answers with one 4-byte message (GB/s)
//   bibw     both ranks send and receive a window of 64 at once (GB/s)
//   mr       messages per second of the bw loop (osu_mbw_mr, one pair)
// Methods:
//   mpix    MPI calls on device buffers of a no-wildcard communicator
//   staged  native MPI on MPI_COMM_WORLD with pinned host buffers and
//           cudaMemcpy around each message, what an application does over an
//           MPI that is not CUDA-aware (skipped under MPIX_INTERCEPT=all)
//   nccl    ncclSend/ncclRecv (a window in one group), stream synchronised
//           once per window or per one-way message (two GPUs only)
// Usage: mpiexec -n 2 bench_gpu_suite [out.csv] [max_bytes] [min_bytes]
// Prints one table per measure; CSV rows: bytes,method,measure,value.
// BENCH_SPLIT=1: each rank also prints where its mpix windows' time went
// (posting the 64 calls, their MPI_Waitall, the acknowledgement), ns per
// message, to say which side bounds the message rate, and what one
// pointer query costs the process right after.
#include <cuda_runtime.h>
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "mpix.h"
#include "test/gpu/gpu_common.h"

#include "nccl_loader.h"

namespace {

constexpr int kWindow = 64;
int g_rank = 0;

// BENCH_SPLIT: the mpix bw loop's time by phase on this rank.
struct Split {
  bool on = false;
  double post = 0, wait = 0, ack = 0;
  long windows = 0;
  void reset() { post = wait = ack = 0, windows = 0; }
} g_split;

struct Row {
  size_t bytes;
  std::string method, measure;
  double value;
};

int lat_iters(size_t n) { return static_cast<int>(std::clamp<size_t>((size_t(64) << 20) / std::max<size_t>(n, 1), 20, 2000)); }
int win_iters(size_t n) {
  return static_cast<int>(std::clamp<size_t>((size_t(1) << 30) / (std::max<size_t>(n, 1) * kWindow), 5, 200));
}

double max_over_ranks(double t) {
  double m = 0;
  MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

// Seconds for iters rounds of f (after warm-up rounds), slowest rank.
double timed(int iters, const std::function<void()> &f) {
  for (int i = 0; i < std::max(2, iters / 10); ++i) f();
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) f();
  return max_over_ranks(MPI_Wtime() - t0);
}

// One method: how it moves one message each way, and a window of them.
struct Method {
  const char *name;
  std::function<void(bool send, size_t n)> one_way;               // blocking
  std::function<void(bool send, size_t n)> window;                // kWindow messages one way, completed
  std::function<void(size_t n)> bi_window;                        // kWindow each way at once
  std::function<void(bool send)> ack;                             // the bw loop's answer
};

}  // namespace

int main(int argc, char **argv) {
  int ngpu = 0;
  if (!mpix_test::init_two_ranks_with_gpu(&argc, &argv, &g_rank, &ngpu)) return 77;
  const char *csv_path = argc > 1 ? argv[1] : nullptr;
  const size_t max_bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : size_t(4) << 20;
  const size_t min_bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1;
  const int peer = 1 - g_rank;
  g_split.on = std::getenv("BENCH_SPLIT") != nullptr && std::strcmp(std::getenv("BENCH_SPLIT"), "0") != 0;

  unsigned char *dsend = nullptr, *drecv = nullptr;
  CHECK_CUDA(cudaMalloc(&dsend, max_bytes));
  CHECK_CUDA(cudaMalloc(&drecv, max_bytes));
  CHECK_CUDA(cudaMemset(dsend, g_rank + 1, max_bytes));
  CHECK_CUDA(cudaMemset(drecv, 0, max_bytes));
  // Staged baseline: one pinned host buffer per message of a window.
  std::vector<unsigned char *> hsend(kWindow), hrecv(kWindow);
  for (int i = 0; i < kWindow; ++i) {
    CHECK_CUDA(cudaMallocHost(&hsend[i], max_bytes));
    CHECK_CUDA(cudaMallocHost(&hrecv[i], max_bytes));
  }
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  MPI_Comm nw;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  int world_handled = 0;
  MPIX_Comm_is_handled(MPI_COMM_WORLD, &world_handled);

  Nccl nccl;
  NcclComm ncomm = nullptr;
  const bool have_nccl = nccl.world_comm(ngpu > 1, &ncomm);  // NCCL refuses two ranks on one GPU

  std::vector<Method> methods;
  MPI_Request reqs[2 * kWindow];
  int ackbuf = 0;
  methods.push_back(Method{
      "mpix",
      [&](bool send, size_t n) {
        if (send) MPI_Send(dsend, static_cast<int>(n), MPI_BYTE, peer, 1, nw);
        else MPI_Recv(drecv, static_cast<int>(n), MPI_BYTE, peer, 1, nw, MPI_STATUS_IGNORE);
      },
      [&](bool send, size_t n) {
        const double t0 = MPI_Wtime();
        for (int i = 0; i < kWindow; ++i) {
          if (send) MPI_Isend(dsend, static_cast<int>(n), MPI_BYTE, peer, 2, nw, &reqs[i]);
          else MPI_Irecv(drecv, static_cast<int>(n), MPI_BYTE, peer, 2, nw, &reqs[i]);
        }
        const double t1 = MPI_Wtime();
        MPI_Waitall(kWindow, reqs, MPI_STATUSES_IGNORE);
        g_split.post += t1 - t0, g_split.wait += MPI_Wtime() - t1, ++g_split.windows;
      },
      [&](size_t n) {
        for (int i = 0; i < kWindow; ++i) MPI_Irecv(drecv, static_cast<int>(n), MPI_BYTE, peer, 3, nw, &reqs[i]);
        for (int i = 0; i < kWindow; ++i) MPI_Isend(dsend, static_cast<int>(n), MPI_BYTE, peer, 3, nw, &reqs[kWindow + i]);
        MPI_Waitall(2 * kWindow, reqs, MPI_STATUSES_IGNORE);
      },
      [&](bool send) {
        const double t0 = MPI_Wtime();
        if (send) MPI_Send(&ackbuf, 1, MPI_INT, peer, 4, nw);
        else MPI_Recv(&ackbuf, 1, MPI_INT, peer, 4, nw, MPI_STATUS_IGNORE);
        g_split.ack += MPI_Wtime() - t0;
      }});
  if (!world_handled)
    methods.push_back(Method{
        "staged",
        [&](bool send, size_t n) {
          if (send) {
            cudaMemcpy(hsend[0], dsend, n, cudaMemcpyDeviceToHost);
            MPI_Send(hsend[0], static_cast<int>(n), MPI_BYTE, peer, 11, MPI_COMM_WORLD);
          } else {
            MPI_Recv(hrecv[0], static_cast<int>(n), MPI_BYTE, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            cudaMemcpy(drecv, hrecv[0], n, cudaMemcpyHostToDevice);
          }
        },
        [&](bool send, size_t n) {
          for (int i = 0; i < kWindow; ++i) {
            if (send) {
              cudaMemcpy(hsend[i], dsend, n, cudaMemcpyDeviceToHost);
              MPI_Isend(hsend[i], static_cast<int>(n), MPI_BYTE, peer, 12, MPI_COMM_WORLD, &reqs[i]);
            } else {
              MPI_Irecv(hrecv[i], static_cast<int>(n), MPI_BYTE, peer, 12, MPI_COMM_WORLD, &reqs[i]);
            }
          }
          MPI_Waitall(kWindow, reqs, MPI_STATUSES_IGNORE);
          if (!send)
            for (int i = 0; i < kWindow; ++i) cudaMemcpyAsync(drecv, hrecv[i], n, cudaMemcpyHostToDevice, stream);
          cudaStreamSynchronize(stream);
        },
        [&](size_t n) {
          for (int i = 0; i < kWindow; ++i)
            MPI_Irecv(hrecv[i], static_cast<int>(n), MPI_BYTE, peer, 13, MPI_COMM_WORLD, &reqs[i]);
          for (int i = 0; i < kWindow; ++i) {
            cudaMemcpy(hsend[i], dsend, n, cudaMemcpyDeviceToHost);
            MPI_Isend(hsend[i], static_cast<int>(n), MPI_BYTE, peer, 13, MPI_COMM_WORLD, &reqs[kWindow + i]);
          }
          MPI_Waitall(2 * kWindow, reqs, MPI_STATUSES_IGNORE);
          for (int i = 0; i < kWindow; ++i) cudaMemcpyAsync(drecv, hrecv[i], n, cudaMemcpyHostToDevice, stream);
          cudaStreamSynchronize(stream);
        },
        [&](bool send) {
          if (send) MPI_Send(&ackbuf, 1, MPI_INT, peer, 14, MPI_COMM_WORLD);
          else MPI_Recv(&ackbuf, 1, MPI_INT, peer, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }});
  if (have_nccl)
    methods.push_back(Method{
        "nccl",
        [&](bool send, size_t n) {
          if (send) nccl.send(dsend, n, kNcclInt8, peer, ncomm, stream);
          else nccl.recv(drecv, n, kNcclInt8, peer, ncomm, stream);
          cudaStreamSynchronize(stream);
        },
        [&](bool send, size_t n) {
          nccl.group_start();
          for (int i = 0; i < kWindow; ++i) {
            if (send) nccl.send(dsend, n, kNcclInt8, peer, ncomm, stream);
            else nccl.recv(drecv, n, kNcclInt8, peer, ncomm, stream);
          }
          nccl.group_end();
          cudaStreamSynchronize(stream);
        },
        [&](size_t n) {
          nccl.group_start();
          for (int i = 0; i < kWindow; ++i) {
            nccl.recv(drecv, n, kNcclInt8, peer, ncomm, stream);
            nccl.send(dsend, n, kNcclInt8, peer, ncomm, stream);
          }
          nccl.group_end();
          cudaStreamSynchronize(stream);
        },
        [&](bool send) {
          if (send) nccl.send(dsend, 4, kNcclInt8, peer, ncomm, stream);
          else nccl.recv(drecv, 4, kNcclInt8, peer, ncomm, stream);
          cudaStreamSynchronize(stream);
        }});

  std::vector<Row> rows;
  if (g_rank == 0) {
    std::printf("# device-buffer suite, 2 ranks on GPU %d and %d, window %d%s%s\n", 0, 1 % ngpu, kWindow,
                have_nccl ? "" : " (no NCCL column: one GPU, or libnccl not found)",
                world_handled ? " (no staged column: MPI_COMM_WORLD is handled by mpix)" : "");
    std::printf("%10s %8s %12s %12s %12s %14s\n", "bytes", "method", "latency us", "bw GB/s", "bibw GB/s", "mr msg/s");
    std::fflush(stdout);
  }
  for (size_t n = min_bytes; n <= max_bytes; n *= 2) {
    for (Method &m : methods) {
      const int li = lat_iters(n);
      const double lat = timed(li, [&] {
        m.one_way(g_rank == 0, n);
        m.one_way(g_rank != 0, n);
      }) / (2.0 * li) * 1e6;
      const int wi = win_iters(n);
      g_split.reset();
      const double tbw = timed(wi, [&] {
        m.window(g_rank == 0, n);
        m.ack(g_rank != 0);
      });
      if (g_split.on && g_split.windows > 0 && std::strcmp(m.name, "mpix") == 0) {
        const double per = 1e9 / (double(g_split.windows) * kWindow);
        std::fprintf(stderr, "# split %zu B, rank %d (%s), ns per message: post %.1f wait %.1f ack %.1f\n", n, g_rank,
                     g_rank == 0 ? "sender" : "receiver", g_split.post * per, g_split.wait * per, g_split.ack * per);
        // What one pointer query costs this process now: mpix makes one
        // per send and per receive of a device buffer.
        constexpr int kQueries = 20000;
        cudaPointerAttributes attr{};
        const double q0 = MPI_Wtime();
        for (int i = 0; i < kQueries; ++i) (void)cudaPointerGetAttributes(&attr, g_rank == 0 ? dsend : drecv);
        std::fprintf(stderr, "# split %zu B, rank %d: cudaPointerGetAttributes %.1f ns per call, on CPU %d\n", n, g_rank,
                     (MPI_Wtime() - q0) * 1e9 / kQueries, sched_getcpu());
      }
      const double tbi = timed(wi, [&] { m.bi_window(n); });
      const double msgs = double(kWindow) * wi;
      const double bw = msgs * n / tbw / 1e9, bibw = 2 * msgs * n / tbi / 1e9, mr = msgs / tbw;
      rows.push_back({n, m.name, "latency_us", lat});
      rows.push_back({n, m.name, "bw_GBps", bw});
      rows.push_back({n, m.name, "bibw_GBps", bibw});
      rows.push_back({n, m.name, "mr_msgps", mr});
      if (g_rank == 0) {
        std::printf("%10zu %8s %12.2f %12.3f %12.3f %14.0f\n", n, m.name, lat, bw, bibw, mr);
        std::fflush(stdout);
      }
    }
  }

  // Every window and round trip above wrote the peer's pattern; check it
  // once more on the largest size through mpix.
  CHECK_CUDA(cudaMemset(drecv, 0, max_bytes));
  MPI_Sendrecv(dsend, static_cast<int>(max_bytes), MPI_BYTE, peer, 5, drecv, static_cast<int>(max_bytes), MPI_BYTE,
               peer, 5, nw, MPI_STATUS_IGNORE);
  std::vector<unsigned char> host(max_bytes);
  CHECK_CUDA(cudaMemcpy(host.data(), drecv, max_bytes, cudaMemcpyDeviceToHost));
  bool ok = std::all_of(host.begin(), host.end(), [&](unsigned char c) { return c == peer + 1; });
  int all_ok = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (g_rank == 0) {
    std::printf("data check: %s\n", all_ok ? "ok" : "WRONG DATA");
    if (csv_path != nullptr)
      if (std::FILE *f = std::fopen(csv_path, "w")) {
        std::fprintf(f, "bytes,method,measure,value\n");
        for (const Row &r : rows) std::fprintf(f, "%zu,%s,%s,%.4f\n", r.bytes, r.method.c_str(), r.measure.c_str(), r.value);
        std::fclose(f);
      }
  }
  if (have_nccl) nccl.comm_destroy(ncomm);
  MPI_Comm_free(&nw);
  cudaStreamDestroy(stream);
  cudaFree(dsend);
  cudaFree(drecv);
  for (int i = 0; i < kWindow; ++i) {
    cudaFreeHost(hsend[i]);
    cudaFreeHost(hrecv[i]);
  }
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
