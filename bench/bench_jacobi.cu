// bench_jacobi: 2D Jacobi with a halo exchange per iteration, one rank per
// GPU (rank % device_count), rows split across ranks. Per local grid size
// it times, in microseconds per iteration:
//
//   compute     the stencil alone (no exchange): the floor
//   exchange    the halo exchange alone (stream-triggered, no stencil)
//   host-sync   stencil; cudaStreamSynchronize; MPI_Isend/Irecv on the
//               device halos (mpix GPU-aware path); MPI_Waitall
//   stream      stencil; MPIX_Irecv/Isend_enqueue; MPIX_Waitall_enqueue:
//               no host wait
//   overlap     boundary rows; MPIX_Isend/Irecv_enqueue; interior rows while
//               the halos move; MPIX_Waitall_enqueue
//   nccl        stencil; ncclSend/ncclRecv in a group on the stream
//               (libnccl.so.2 loaded at run time; n/a where it is missing or
//               refuses, e.g. two ranks on one GPU)
//
// "hidden" = (compute + exchange - overlap) / exchange: the share of the
// exchange time the overlapped version hides behind the interior stencil.
// Every variant starts from the same grid and must end with the same
// checksum as host-sync (bit-identical arithmetic); a mismatch fails the run.
//
// Options: -n ITERS (default 200), -s "N1,N2,..." local sizes (N x N points
// per rank, default 256,1024,4096), -v "stream,nccl,..." only these variants
// (checksums are compared when host-sync is among them). CSV lines:
// csv,<N>,<variant>,<us/iter>.
// Run: mpiexec -n 2 bench/bench_jacobi
#include <cuda_runtime.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mpix.h"
#include "test/gpu/gpu_common.h"

#include "nccl_loader.h"

namespace {

constexpr int kBlock = 256;

// out = average of the four neighbours of in, for rows [row_begin, row_end)
// of the local block (row 0 and rows+1 are halos; column 0 and cols-1 fixed).
__global__ void stencil(const double *in, double *out, int cols, int row_begin, int row_end) {
  const long n = static_cast<long>(row_end - row_begin) * (cols - 2);
  for (long k = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; k < n;
       k += static_cast<long>(gridDim.x) * blockDim.x) {
    const long i = row_begin + k / (cols - 2);
    const long j = 1 + k % (cols - 2);
    const long c = i * cols + j;
    out[c] = 0.25 * (in[c - cols] + in[c + cols] + in[c - 1] + in[c + 1]);
  }
}

struct Grid {
  int rows = 0, cols = 0;  // interior rows of this rank; columns incl. the fixed edges
  double *a = nullptr, *b = nullptr;
  std::size_t bytes() const { return static_cast<std::size_t>(rows + 2) * cols * sizeof(double); }
  double *row(double *g, int i) const { return g + static_cast<std::size_t>(i) * cols; }
};

int blocks_for(long n) {
  const long b = (n + kBlock - 1) / kBlock;
  return static_cast<int>(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

void launch(const Grid &g, const double *in, double *out, int r0, int r1, cudaStream_t s) {
  if (r1 <= r0) return;
  stencil<<<blocks_for(static_cast<long>(r1 - r0) * (g.cols - 2)), kBlock, 0, s>>>(in, out, g.cols, r0, r1);
}

// A hot left edge, everything else zero; both buffers alike so the fixed
// edges and the outer halos stay put.
void init_grid(const Grid &g, int rank, int nranks) {
  std::vector<double> h(g.bytes() / sizeof(double), 0.0);
  for (int i = 0; i < g.rows + 2; ++i) h[static_cast<std::size_t>(i) * g.cols] = 1.0;
  if (rank == 0)
    for (int j = 0; j < g.cols; ++j) h[j] = 0.5;  // top boundary of the whole domain
  if (rank == nranks - 1)
    for (int j = 0; j < g.cols; ++j) h[static_cast<std::size_t>(g.rows + 1) * g.cols + j] = 0.25;
  cudaMemcpy(g.a, h.data(), g.bytes(), cudaMemcpyHostToDevice);
  cudaMemcpy(g.b, h.data(), g.bytes(), cudaMemcpyHostToDevice);
  // A copy from pageable memory may return before its DMA has landed, and
  // the stencil runs on a non-blocking stream that does not wait for it.
  cudaDeviceSynchronize();
}

double checksum(const Grid &g, const double *buf) {
  std::vector<double> h(g.bytes() / sizeof(double));
  cudaMemcpy(h.data(), buf, g.bytes(), cudaMemcpyDeviceToHost);
  double local = 0, sum = 0;
  for (int i = 1; i <= g.rows; ++i)
    for (int j = 0; j < g.cols; ++j) local += h[static_cast<std::size_t>(i) * g.cols + j] * (1 + (i + j) % 7);
  MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum;
}

struct Ctx {
  int rank = 0, nranks = 1, up = -1, down = -1;  // neighbours; -1 at the domain's edge
  cudaStream_t s = nullptr;
  MPI_Comm host_comm = MPI_COMM_NULL;    // no-wildcard dup: mpix's GPU-aware path
  MPI_Comm stream_comm = MPI_COMM_NULL;  // stream communicator on s
  Nccl nccl;
  NcclComm ncomm = nullptr;
};

// Tags name the direction a halo row travels.
constexpr int kTagDown = 1, kTagUp = 2;

enum class Variant { kCompute, kExchange, kHostSync, kStream, kOverlap, kNccl };
const char *name(Variant v) {
  switch (v) {
    case Variant::kCompute: return "compute";
    case Variant::kExchange: return "exchange";
    case Variant::kHostSync: return "host-sync";
    case Variant::kStream: return "stream";
    case Variant::kOverlap: return "overlap";
    case Variant::kNccl: return "nccl";
  }
  return "?";
}

// One iteration: reads in, writes out (whose halos then hold the
// neighbours' new boundary rows).
void iterate(Ctx &c, const Grid &g, double *in, double *out, Variant v) {
  const int cnt = g.cols;
  double *top = g.row(out, 1), *bottom = g.row(out, g.rows);
  double *halo_top = g.row(out, 0), *halo_bottom = g.row(out, g.rows + 1);
  switch (v) {
    case Variant::kCompute: launch(g, in, out, 1, g.rows + 1, c.s); break;
    case Variant::kHostSync: {
      launch(g, in, out, 1, g.rows + 1, c.s);
      cudaStreamSynchronize(c.s);
      MPI_Request rq[4];
      int n = 0;
      if (c.up >= 0) {
        MPI_Irecv(halo_top, cnt, MPI_DOUBLE, c.up, kTagDown, c.host_comm, &rq[n++]);
        MPI_Isend(top, cnt, MPI_DOUBLE, c.up, kTagUp, c.host_comm, &rq[n++]);
      }
      if (c.down >= 0) {
        MPI_Irecv(halo_bottom, cnt, MPI_DOUBLE, c.down, kTagUp, c.host_comm, &rq[n++]);
        MPI_Isend(bottom, cnt, MPI_DOUBLE, c.down, kTagDown, c.host_comm, &rq[n++]);
      }
      MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
      break;
    }
    case Variant::kExchange:
    case Variant::kStream:
    case Variant::kOverlap: {
      if (v == Variant::kStream) launch(g, in, out, 1, g.rows + 1, c.s);
      if (v == Variant::kOverlap) {  // the boundary rows first, so they can leave early
        launch(g, in, out, 1, 2, c.s);
        if (g.rows > 1) launch(g, in, out, g.rows, g.rows + 1, c.s);
      }
      MPI_Request rq[4];
      int n = 0;
      if (c.up >= 0) {
        MPIX_Irecv_enqueue(halo_top, cnt, MPI_DOUBLE, c.up, kTagDown, c.stream_comm, &rq[n++]);
        MPIX_Isend_enqueue(top, cnt, MPI_DOUBLE, c.up, kTagUp, c.stream_comm, &rq[n++]);
      }
      if (c.down >= 0) {
        MPIX_Irecv_enqueue(halo_bottom, cnt, MPI_DOUBLE, c.down, kTagUp, c.stream_comm, &rq[n++]);
        MPIX_Isend_enqueue(bottom, cnt, MPI_DOUBLE, c.down, kTagDown, c.stream_comm, &rq[n++]);
      }
      if (v == Variant::kOverlap) launch(g, in, out, 2, g.rows, c.s);
      MPIX_Waitall_enqueue(n, rq, MPI_STATUSES_IGNORE);
      break;
    }
    case Variant::kNccl: {
      launch(g, in, out, 1, g.rows + 1, c.s);
      const std::size_t bytes = cnt * sizeof(double);
      c.nccl.group_start();
      if (c.up >= 0) {
        c.nccl.recv(halo_top, bytes, kNcclInt8, c.up, c.ncomm, c.s);
        c.nccl.send(top, bytes, kNcclInt8, c.up, c.ncomm, c.s);
      }
      if (c.down >= 0) {
        c.nccl.recv(halo_bottom, bytes, kNcclInt8, c.down, c.ncomm, c.s);
        c.nccl.send(bottom, bytes, kNcclInt8, c.down, c.ncomm, c.s);
      }
      c.nccl.group_end();
      break;
    }
  }
}

// Runs `iters` iterations from the initial grid; returns us per iteration
// (slowest rank), the final checksum in *sum and in *issue the host's time
// per iteration to enqueue them (slowest rank): where it is as long as the
// iteration, the host's calls are the bound, not the GPUs.
double run(Ctx &c, Grid &g, Variant v, int iters, double *sum, double *issue) {
  init_grid(g, c.rank, c.nranks);
  double *in = g.a, *out = g.b;
  // Warm-up: IPC handles, connections, and the pulled halos' buffers,
  // which each host maps on a later large operation of its own after the
  // first offer (a mapping takes milliseconds: inside the timed loop it
  // was ~30 us per iteration of 200); then start over.
  for (int i = 0; i < 20; ++i) {
    iterate(c, g, in, out, v);
    std::swap(in, out);
  }
  cudaStreamSynchronize(c.s);
  MPI_Barrier(MPI_COMM_WORLD);
  init_grid(g, c.rank, c.nranks);
  in = g.a;
  out = g.b;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    iterate(c, g, in, out, v);
    std::swap(in, out);
  }
  const double ti = MPI_Wtime() - t0;
  cudaStreamSynchronize(c.s);
  const double t = MPI_Wtime() - t0;
  double tmax = 0, timax = 0;
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&ti, &timax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  *issue = timax / iters * 1e6;
  *sum = checksum(g, in);
  return tmax / iters * 1e6;
}

std::vector<int> parse_sizes(const char *s) {
  std::vector<int> v;
  for (const char *p = s; *p != '\0';) {
    v.push_back(std::atoi(p));
    const char *comma = std::strchr(p, ',');
    if (comma == nullptr) break;
    p = comma + 1;
  }
  return v;
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  Ctx c;
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c.nranks);
  int iters = 200;
  std::vector<int> sizes = {256, 1024, 4096};
  const char *only = nullptr;  // -v a,b: only these variants (e.g. for a traced run)
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "-n") == 0) iters = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "-s") == 0) sizes = parse_sizes(argv[i + 1]);
    if (std::strcmp(argv[i], "-v") == 0) only = argv[i + 1];
  }
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
    if (c.rank == 0) std::printf("bench_jacobi: skipped: no GPU\n");
    MPI_Finalize();
    return 0;
  }
  cudaSetDevice(c.rank % ngpu);
  cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking);
  c.up = c.rank > 0 ? c.rank - 1 : -1;
  c.down = c.rank + 1 < c.nranks ? c.rank + 1 : -1;

  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &c.host_comm);
  MPIX_Stream stream = MPIX_STREAM_NULL;
  if (mpix_test::cuda_stream_create(c.s, &stream) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
  MPIX_Stream_comm_create(MPI_COMM_WORLD, stream, &c.stream_comm);

  bool have_nccl = c.nccl.load();
  int all = 0, mine = have_nccl ? 1 : 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all == 1) {
    NcclUniqueId id;
    if (c.rank == 0) c.nccl.get_unique_id(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    mine = c.nccl.comm_init_rank(&c.ncomm, c.nranks, id, c.rank) == 0 ? 1 : 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  }
  have_nccl = all == 1;

  const Variant variants[] = {Variant::kCompute, Variant::kExchange, Variant::kHostSync,
                              Variant::kStream,  Variant::kOverlap,  Variant::kNccl};
  int failures = 0;
  if (c.rank == 0) {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    std::printf("# bench_jacobi: %d ranks on %d GPU(s) (%s), %d iterations, us per iteration\n", c.nranks, ngpu,
                prop.name, iters);
    std::printf("%6s %10s %10s %10s %10s %10s %10s %8s\n", "N", "compute", "exchange", "host-sync", "stream",
                "overlap", "nccl", "hidden");
  }
  std::vector<std::string> csv;
  for (int n : sizes) {
    Grid g;
    g.rows = n;
    g.cols = n + 2;
    cudaMalloc(&g.a, g.bytes());
    cudaMalloc(&g.b, g.bytes());
    double us[6] = {-1, -1, -1, -1, -1, -1}, sums[6] = {0, 0, 0, 0, 0, 0}, issue[6] = {0, 0, 0, 0, 0, 0};
    for (int k = 0; k < 6; ++k) {
      if (variants[k] == Variant::kNccl && !have_nccl) continue;
      if (only != nullptr && !mpix_test::listed(only, name(variants[k]))) continue;
      us[k] = run(c, g, variants[k], iters, &sums[k], &issue[k]);
    }
    // Stencil variants must agree exactly with host-sync; compute and
    // exchange alone compute something else and are not compared.
    for (int k = 3; k < 6; ++k)
      if (us[k] >= 0 && us[2] >= 0 && sums[k] != sums[2]) {
        ++failures;
        if (c.rank == 0)
          std::printf("MISMATCH N=%d %s checksum %.17g vs host-sync %.17g\n", n, name(variants[k]), sums[k], sums[2]);
      }
    if (c.rank == 0) {
      const double hidden = us[1] > 0 ? (us[0] + us[1] - us[4]) / us[1] : 0;
      char nccl_col[32];
      if (us[5] >= 0) std::snprintf(nccl_col, sizeof nccl_col, "%10.2f", us[5]);
      else std::snprintf(nccl_col, sizeof nccl_col, "%10s", "n/a");
      std::printf("%6d %10.2f %10.2f %10.2f %10.2f %10.2f %s %7.0f%%\n", n, us[0], us[1], us[2], us[3], us[4],
                  nccl_col, 100 * hidden);
      std::printf("%6s %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f   (host's enqueue time per iteration)\n", "issue",
                  issue[0], issue[1], issue[2], issue[3], issue[4], issue[5]);
      for (int k = 0; k < 6; ++k)
        if (us[k] >= 0) {
          csv.push_back("csv," + std::to_string(n) + "," + name(variants[k]) + "," + std::to_string(us[k]));
          csv.push_back("csv," + std::to_string(n) + ",issue-" + name(variants[k]) + "," + std::to_string(issue[k]));
        }
    }
    cudaFree(g.a);
    cudaFree(g.b);
  }
  if (c.rank == 0) {
    for (const std::string &line : csv) std::printf("%s\n", line.c_str());
    std::printf("bench_jacobi: %s\n", failures == 0 ? "all checksums agree" : "CHECKSUM MISMATCH");
  }
  if (c.ncomm != nullptr) c.nccl.comm_destroy(c.ncomm);
  MPI_Comm_free(&c.stream_comm);
  MPI_Comm_free(&c.host_comm);
  MPIX_Stream_free(&stream);
  cudaStreamDestroy(c.s);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
