// Matching rate of the GPU batch matcher (device/match_gpu.h) against the
// CPU batch matcher (match/batch.h) on the same batches, in one run.
//
// A batch of size n: n arrivals and n receives with the same keys in another
// order, so every entry matches (n pairs); multiplicity m: a share m of the
// keys identical, the rest unique (papers/000 ch. 6.3.2). Rates are pairs
// per second:
//   kernel: device arrays in and out (gpu_match_batch_*_device), timed by
//           CUDA events on the stream: the matching alone;
//   e2e:    host arrays in and out (gpu_match_batch_*), wall clock: copies
//           to and from the GPU included, what the engine pays;
//   cpu:    match_batch_* on one core, wall clock.
// The bandwidth floor: each pair must at least read its two entries and
// write its pair record (2*24 + 24 = 72 bytes); over the device bandwidth
// measured here with a copy kernel that gives the fastest possible rate, and
// "floor%" is the kernel rate as a share of it.
//
// Usage: bench_gpu_match [--csv PATH] [--max N] [--cpu-max N]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "device/copy.h"
#include "device/match_gpu.h"
#include "test/gpu/match_gen.h"

namespace {

using namespace mpix::match;
using mpix::device::GpuMatchScratch;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

#define CUDA_OK(x)                                                              \
  do {                                                                          \
    const cudaError_t e_ = (x);                                                 \
    if (e_ != cudaSuccess) {                                                    \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));             \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

__global__ void copy_kernel(const uint4 *in, uint4 *out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = in[i];
}

// Device memory bandwidth (bytes read + written per second) of a plain copy.
double measure_bandwidth() {
  const std::size_t bytes = std::size_t{1} << 30, n = bytes / sizeof(uint4);
  uint4 *a = nullptr, *b = nullptr;
  CUDA_OK(cudaMalloc(&a, bytes));
  CUDA_OK(cudaMalloc(&b, bytes));
  CUDA_OK(cudaMemset(a, 1, bytes));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  copy_kernel<<<sms * 8, 512>>>(a, b, n);
  float best = 1e30f;
  for (int i = 0; i < 10; ++i) {
    cudaEventRecord(e0);
    copy_kernel<<<sms * 8, 512>>>(a, b, n);
    cudaEventRecord(e1);
    CUDA_OK(cudaEventSynchronize(e1));
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    best = std::min(best, ms);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(a);
  cudaFree(b);
  return 2.0 * bytes / (best * 1e-3);
}

struct Row {
  const char *variant;
  std::uint32_t n;
  int mult;
  std::uint32_t pairs;
  double cpu_s, kernel_s, e2e_s;
};

// Best of repeated runs (at least `min_runs`, until `budget` seconds).
template <class F>
double best_time(F &&f, int min_runs, double budget) {
  double best = 1e30, total = 0;
  for (int i = 0; i < 200 && (i < min_runs || total < budget); ++i) {
    const double t = f();
    best = std::min(best, t);
    total += t;
  }
  return best;
}

}  // namespace

int main(int argc, char **argv) {
  std::string csv = "bench_gpu_match.csv";
  std::uint32_t max_n = 1u << 24, cpu_max = 1u << 24;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--csv")) csv = argv[i + 1];
    else if (!std::strcmp(argv[i], "--max")) max_n = static_cast<std::uint32_t>(std::strtoul(argv[i + 1], nullptr, 0));
    else if (!std::strcmp(argv[i], "--cpu-max"))
      cpu_max = static_cast<std::uint32_t>(std::strtoul(argv[i + 1], nullptr, 0));
  }
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
    std::printf("skipped: no GPU\n");
    return 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  const double bw = measure_bandwidth();
  const double bytes_per_pair = 2.0 * sizeof(BatchItem) + sizeof(BatchPair);
  const double ceiling = bw / bytes_per_pair;
  std::printf("# GPU: %s; copy-kernel bandwidth %.0f GB/s; %.0f bytes per pair -> floor rate %.1f G pairs/s\n",
              prop.name, bw / 1e9, bytes_per_pair, ceiling / 1e9);

  BatchScratch cpu_scratch;
  GpuMatchScratch gpu_scratch, dev_scratch;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<Row> rows;
  const std::uint32_t sizes[] = {256, 1u << 10, 1u << 12, 1u << 14, 1u << 16, 1u << 18, 1u << 20, 1u << 22, 1u << 24};
  const int mults[] = {0, 10, 30, 50, 100};
  std::printf("%-9s %9s %5s %10s %10s %10s %10s %8s %8s %6s\n", "variant", "n", "mult%", "pairs", "cpu_M/s",
              "kernel_M/s", "e2e_M/s", "x_kernel", "x_e2e", "floor%");
  std::uint64_t seed = 7;
  for (std::uint32_t n : sizes) {
    if (n > max_n) continue;
    for (int m : mults) {
      const gen::Batch b = gen::multiplicity_batch(n, m / 100.0, 1.0, seed++);
      // Device copies for the kernel-only timing.
      BatchItem *da = nullptr, *dr = nullptr;
      BatchPair *dp = nullptr;
      std::uint32_t *dua = nullptr, *dur = nullptr;
      CUDA_OK(cudaMalloc(&da, n * sizeof(BatchItem)));
      CUDA_OK(cudaMalloc(&dr, n * sizeof(BatchItem)));
      CUDA_OK(cudaMalloc(&dp, n * sizeof(BatchPair)));
      CUDA_OK(cudaMalloc(&dua, n * sizeof(std::uint32_t)));
      CUDA_OK(cudaMalloc(&dur, n * sizeof(std::uint32_t)));
      CUDA_OK(cudaMemcpy(da, b.arrivals.data(), n * sizeof(BatchItem), cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemcpy(dr, b.receives.data(), n * sizeof(BatchItem), cudaMemcpyHostToDevice));
      std::vector<BatchPair> pairs(n);
      std::vector<std::uint32_t> ua(n), ur(n);
      const BatchOutput hout{pairs.data(), ua.data(), ur.data()};
      const BatchOutput dout{dp, dua, dur};
      const double budget = n >= (1u << 22) ? 0.3 : 0.1;
      for (const bool fifo : {false, true}) {
        BatchCounts c{};
        std::uint32_t cpu_pairs = 0;
        double cpu_s = 0;
        if (n <= cpu_max) {
          cpu_s = best_time(
              [&] {
                const auto t0 = Clock::now();
                c = fifo ? match_batch_fifo(b.arrivals.data(), n, b.receives.data(), n, hout, cpu_scratch)
                         : match_batch_unordered(b.arrivals.data(), n, b.receives.data(), n, hout, cpu_scratch);
                return seconds_since(t0);
              },
              n >= (1u << 22) ? 1 : 3, n >= (1u << 22) ? 0.0 : budget);
          cpu_pairs = c.pairs;
        }
        const double kernel_s = best_time(
            [&] {
              cudaEventRecord(e0, nullptr);
              const mpix::device::Status rc =
                  fifo ? mpix::device::gpu_match_batch_fifo_device(da, n, dr, n, dout, &c, dev_scratch, nullptr)
                       : mpix::device::gpu_match_batch_unordered_device(da, n, dr, n, dout, &c, dev_scratch, nullptr);
              cudaEventRecord(e1, nullptr);
              cudaEventSynchronize(e1);
              if (rc != mpix::device::Status::kOk) {
                std::fprintf(stderr, "GPU matcher: %s\n", mpix::device::status_string(rc));
                std::exit(1);
              }
              float ms = 0;
              cudaEventElapsedTime(&ms, e0, e1);
              return ms * 1e-3;
            },
            5, budget);
        const std::uint32_t gpu_pairs = c.pairs;
        const double e2e_s = best_time(
            [&] {
              const auto t0 = Clock::now();
              const mpix::device::Status rc =
                  fifo ? mpix::device::gpu_match_batch_fifo(b.arrivals.data(), n, b.receives.data(), n, hout, &c,
                                                            gpu_scratch)
                       : mpix::device::gpu_match_batch_unordered(b.arrivals.data(), n, b.receives.data(), n, hout, &c,
                                                                 gpu_scratch);
              if (rc != mpix::device::Status::kOk) std::exit(1);
              return seconds_since(t0);
            },
            3, budget);
        if (gpu_pairs != n || c.pairs != n || (n <= cpu_max && cpu_pairs != n)) {
          std::fprintf(stderr, "wrong pair count at n=%u: gpu %u/%u cpu %u\n", n, gpu_pairs, c.pairs, cpu_pairs);
          return 1;
        }
        const Row r{fifo ? "fifo" : "unordered", n, m, n, cpu_s, kernel_s, e2e_s};
        rows.push_back(r);
        const double cpu_rate = cpu_s > 0 ? n / cpu_s / 1e6 : 0;
        const double k_rate = n / kernel_s / 1e6, e_rate = n / e2e_s / 1e6;
        std::printf("%-9s %9u %5d %10u %10.1f %10.1f %10.1f %8.1f %8.2f %6.1f\n", r.variant, n, m, n, cpu_rate,
                    k_rate, e_rate, cpu_s > 0 ? cpu_s / kernel_s : 0, cpu_s > 0 ? cpu_s / e2e_s : 0,
                    100.0 * n / kernel_s / ceiling);
        std::fflush(stdout);
      }
      cudaFree(da);
      cudaFree(dr);
      cudaFree(dp);
      cudaFree(dua);
      cudaFree(dur);
    }
  }
  // Offload threshold: the smallest size from which the host-array GPU path
  // beats the CPU for every multiplicity (unordered, what regions use).
  std::uint32_t threshold = 0;
  for (std::uint32_t n : sizes) {
    bool wins = false, any = false;
    for (const Row &r : rows)
      if (r.n == n && !std::strcmp(r.variant, "unordered") && r.cpu_s > 0) {
        if (!any) wins = true;
        any = true;
        wins = wins && r.e2e_s < r.cpu_s;
      }
    if (any && wins) {
      threshold = n;
      break;
    }
  }
  std::printf("# offload threshold (host arrays, GPU end-to-end faster than the CPU at every multiplicity): %u\n",
              threshold);
  if (FILE *f = std::fopen(csv.c_str(), "w")) {
    std::fprintf(f, "variant,n,multiplicity_pct,pairs,cpu_s,kernel_s,e2e_s,cpu_Mps,kernel_Mps,e2e_Mps,"
                    "floor_fraction,bandwidth_GBps\n");
    for (const Row &r : rows)
      std::fprintf(f, "%s,%u,%d,%u,%.9f,%.9f,%.9f,%.3f,%.3f,%.3f,%.4f,%.1f\n", r.variant, r.n, r.mult, r.pairs,
                   r.cpu_s, r.kernel_s, r.e2e_s, r.cpu_s > 0 ? r.pairs / r.cpu_s / 1e6 : 0.0,
                   r.pairs / r.kernel_s / 1e6, r.pairs / r.e2e_s / 1e6, r.pairs / r.kernel_s / ceiling, bw / 1e9);
    std::fclose(f);
  }
  return 0;
}
