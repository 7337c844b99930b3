// Differential test of the GPU batch matcher (device/match_gpu.h) against
// the CPU one (match/batch.h) on random batches: sizes 0 .. 16M,
// multiplicity 0 .. 100%, skewed keys, tiny key spaces, all unmatched, all
// matched, lopsided sides. Checked for both variants: pairs of equal keys
// with the right cookies, nothing used twice, every entry either paired or
// unmatched, unmatched indexes in increasing order, as many pairs as the
// CPU (a matching of equal keys that large is maximum, hence maximal); for
// fifo, the very same pairs and unmatched lists as the CPU. The device-array
// variant must give what the host-array variant gives.
//
// GPU_MATCH_SMALL=1 (test/gpu/run.sh sets it under compute-sanitizer) keeps
// batches at most 64K.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "device/copy.h"
#include "device/match_gpu.h"
#include "match_gen.h"

namespace {

using namespace mpix::match;
using mpix::device::GpuMatchScratch;
using gen::Batch;

int g_errors = 0;

#define EXPECT(cond, ...)                                   \
  do {                                                      \
    if (!(cond)) {                                          \
      if (++g_errors <= 20) {                               \
        std::fprintf(stderr, "%s: ", what.c_str());         \
        std::fprintf(stderr, __VA_ARGS__);                  \
        std::fprintf(stderr, "\n");                         \
      }                                                     \
      return;                                               \
    }                                                       \
  } while (0)

struct Result {
  BatchCounts counts{};
  std::vector<BatchPair> pairs;
  std::vector<std::uint32_t> ua, ur;
  void size_for(const Batch &b) {
    pairs.assign(std::min(b.arrivals.size(), b.receives.size()), BatchPair{});
    ua.assign(b.arrivals.size(), 0xdeadbeef);
    ur.assign(b.receives.size(), 0xdeadbeef);
  }
  BatchOutput out() { return BatchOutput{pairs.data(), ua.data(), ur.data()}; }
  void trim() {
    pairs.resize(counts.pairs);
    ua.resize(counts.unmatched_arrivals);
    ur.resize(counts.unmatched_receives);
  }
};

template <class T>
struct DeviceArray {
  T *p = nullptr;
  explicit DeviceArray(std::size_t n) {
    if (cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T)) != cudaSuccess) p = nullptr;
  }
  ~DeviceArray() { cudaFree(p); }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;
};

// The device-array variant, with inputs and outputs copied by the test:
// nullptr, or what failed.
const char *run_device(bool fifo, const Batch &b, Result &res, GpuMatchScratch &gs) {
  const std::size_t na = b.arrivals.size(), nr = b.receives.size();
  DeviceArray<BatchItem> da(na), dr(nr);
  DeviceArray<BatchPair> dp(std::min(na, nr));
  DeviceArray<std::uint32_t> dua(na), dur(nr);
  if (!da.p || !dr.p || !dp.p || !dua.p || !dur.p) return cudaGetErrorString(cudaErrorMemoryAllocation);
  cudaMemcpy(da.p, b.arrivals.data(), na * sizeof(BatchItem), cudaMemcpyHostToDevice);
  cudaMemcpy(dr.p, b.receives.data(), nr * sizeof(BatchItem), cudaMemcpyHostToDevice);
  const BatchOutput out{dp.p, dua.p, dur.p};
  const auto n_a = static_cast<std::uint32_t>(na), n_r = static_cast<std::uint32_t>(nr);
  const mpix::device::Status rc =
      fifo ? mpix::device::gpu_match_batch_fifo_device(da.p, n_a, dr.p, n_r, out, &res.counts, gs, nullptr)
           : mpix::device::gpu_match_batch_unordered_device(da.p, n_a, dr.p, n_r, out, &res.counts, gs, nullptr);
  if (rc != mpix::device::Status::kOk) return mpix::device::status_string(rc);
  res.trim();
  cudaMemcpy(res.pairs.data(), dp.p, res.pairs.size() * sizeof(BatchPair), cudaMemcpyDeviceToHost);
  cudaMemcpy(res.ua.data(), dua.p, res.ua.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost);
  cudaMemcpy(res.ur.data(), dur.p, res.ur.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost);
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

bool by_arrival(const BatchPair &x, const BatchPair &y) { return x.arrival < y.arrival; }

void check(const std::string &what, bool fifo, const Batch &b, const Result &cpu, const Result &gpu) {
  const auto &a = b.arrivals;
  const auto &r = b.receives;
  EXPECT(gpu.counts.pairs == cpu.counts.pairs, "pairs %u, CPU %u", gpu.counts.pairs, cpu.counts.pairs);
  EXPECT(gpu.counts.unmatched_arrivals == cpu.counts.unmatched_arrivals, "unmatched arrivals %u, CPU %u",
         gpu.counts.unmatched_arrivals, cpu.counts.unmatched_arrivals);
  EXPECT(gpu.counts.unmatched_receives == cpu.counts.unmatched_receives, "unmatched receives %u, CPU %u",
         gpu.counts.unmatched_receives, cpu.counts.unmatched_receives);
  std::vector<std::uint8_t> used_a(a.size(), 0), used_r(r.size(), 0);
  for (const BatchPair &p : gpu.pairs) {
    EXPECT(p.arrival < a.size() && p.receive < r.size(), "pair (%u, %u) out of range", p.arrival, p.receive);
    EXPECT(a[p.arrival].key == r[p.receive].key, "pair (%u, %u) of different keys", p.arrival, p.receive);
    EXPECT(p.arrival_cookie == a[p.arrival].cookie && p.receive_cookie == r[p.receive].cookie,
           "pair (%u, %u) with wrong cookies", p.arrival, p.receive);
    EXPECT(!used_a[p.arrival]++, "arrival %u matched twice", p.arrival);
    EXPECT(!used_r[p.receive]++, "receive %u matched twice", p.receive);
  }
  for (std::size_t i = 0; i < gpu.ua.size(); ++i) {
    EXPECT(gpu.ua[i] < a.size() && !used_a[gpu.ua[i]]++, "unmatched arrival %u invalid or used", gpu.ua[i]);
    EXPECT(i == 0 || gpu.ua[i - 1] < gpu.ua[i], "unmatched arrivals out of order at %zu", i);
  }
  for (std::size_t i = 0; i < gpu.ur.size(); ++i) {
    EXPECT(gpu.ur[i] < r.size() && !used_r[gpu.ur[i]]++, "unmatched receive %u invalid or used", gpu.ur[i]);
    EXPECT(i == 0 || gpu.ur[i - 1] < gpu.ur[i], "unmatched receives out of order at %zu", i);
  }
  // Counts equal and nothing used twice: every entry accounted for once.
  if (!fifo) return;
  EXPECT(gpu.ua == cpu.ua, "unmatched arrivals differ from the CPU's");
  EXPECT(gpu.ur == cpu.ur, "unmatched receives differ from the CPU's");
  std::vector<BatchPair> g = gpu.pairs, c = cpu.pairs;
  std::sort(g.begin(), g.end(), by_arrival);
  std::sort(c.begin(), c.end(), by_arrival);
  for (std::size_t i = 0; i < g.size(); ++i)
    EXPECT(g[i].arrival == c[i].arrival && g[i].receive == c[i].receive,
           "fifo pair of arrival %u: receive %u, CPU (%u, %u)", g[i].arrival, g[i].receive, c[i].arrival,
           c[i].receive);
}

void same_results(const std::string &what, const Result &x, const Result &y) {
  EXPECT(x.counts.pairs == y.counts.pairs && x.ua == y.ua && x.ur == y.ur, "device variant: other counts/lists");
  for (std::size_t i = 0; i < x.pairs.size(); ++i)
    EXPECT(x.pairs[i].arrival == y.pairs[i].arrival && x.pairs[i].receive == y.pairs[i].receive &&
               x.pairs[i].arrival_cookie == y.pairs[i].arrival_cookie &&
               x.pairs[i].receive_cookie == y.pairs[i].receive_cookie,
           "device variant: pair %zu differs", i);
}

struct Runner {
  BatchScratch cpu_scratch;
  GpuMatchScratch gpu_scratch;
  GpuMatchScratch device_scratch;
  int cases = 0;

  void run(const std::string &name, const Batch &b, bool with_device) {
    for (const bool fifo : {true, false}) {
      const std::string what = name + (fifo ? " fifo" : " unordered");
      Result cpu, gpu;
      cpu.size_for(b);
      gpu.size_for(b);
      const auto na = static_cast<std::uint32_t>(b.arrivals.size());
      const auto nr = static_cast<std::uint32_t>(b.receives.size());
      cpu.counts = fifo ? match_batch_fifo(b.arrivals.data(), na, b.receives.data(), nr, cpu.out(), cpu_scratch)
                        : match_batch_unordered(b.arrivals.data(), na, b.receives.data(), nr, cpu.out(),
                                                cpu_scratch);
      cpu.trim();
      const mpix::device::Status rc =
          fifo ? mpix::device::gpu_match_batch_fifo(b.arrivals.data(), na, b.receives.data(), nr, gpu.out(),
                                                    &gpu.counts, gpu_scratch)
               : mpix::device::gpu_match_batch_unordered(b.arrivals.data(), na, b.receives.data(), nr, gpu.out(),
                                                         &gpu.counts, gpu_scratch);
      ++cases;
      if (rc != mpix::device::Status::kOk) {
        std::fprintf(stderr, "%s: GPU matcher failed: %s\n", what.c_str(), mpix::device::status_string(rc));
        ++g_errors;
        continue;
      }
      gpu.trim();
      check(what, fifo, b, cpu, gpu);
      if (with_device) {
        Result dev;
        dev.size_for(b);
        if (const char *failed = run_device(fifo, b, dev, device_scratch)) {
          std::fprintf(stderr, "%s: device variant failed: %s\n", what.c_str(), failed);
          ++g_errors;
        } else {
          same_results(what, gpu, dev);
        }
      }
    }
  }
};

}  // namespace

int main() {
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0 || !mpix::device::gpu_match_available()) {
    std::printf("skipped: no GPU\n");
    return 77;
  }
  const bool small = std::getenv("GPU_MATCH_SMALL") != nullptr;
  const std::uint32_t max_n = small ? 1u << 16 : 1u << 24;
  Runner t;
  std::uint64_t seed = 1;
  // Edge sizes, one side empty, and lopsided sides.
  t.run("empty", Batch{}, true);
  for (std::uint32_t n : {1u, 2u, 3u, 31u, 257u}) {
    t.run("tiny n=" + std::to_string(n), gen::tiny_keys_batch(n, n, seed++), true);
    t.run("no receives n=" + std::to_string(n), gen::tiny_keys_batch(n, 0, seed++), true);
    t.run("no arrivals n=" + std::to_string(n), gen::tiny_keys_batch(0, n, seed++), true);
  }
  t.run("lopsided 5000/300", gen::tiny_keys_batch(5000, 300, seed++), true);
  t.run("lopsided 300/5000", gen::tiny_keys_batch(300, 5000, seed++), true);
  // Multiplicity 0 .. 100% at several sizes, fully and partly matching.
  for (std::uint32_t n : {1000u, 65536u, 1u << 20}) {
    if (n > max_n) continue;
    for (double m : {0.0, 0.1, 0.3, 0.5, 0.9, 1.0})
      for (double overlap : {1.0, 0.7})
        t.run("multiplicity " + std::to_string(m) + " overlap " + std::to_string(overlap) + " n=" +
                  std::to_string(n),
              gen::multiplicity_batch(n, m, overlap, seed++), n <= 65536);
  }
  // Skewed keys (power law), few and many distinct keys.
  for (std::uint32_t n : {4097u, 1u << 18}) {
    if (n > max_n) continue;
    t.run("skewed few keys n=" + std::to_string(n), gen::skewed_batch(n, n + 11, 64, 3.0, seed++), true);
    t.run("skewed many keys n=" + std::to_string(n), gen::skewed_batch(n - 5, n, n, 4.0, seed++), true);
  }
  // All unmatched: same sources and tags, other contexts.
  {
    Batch b = gen::multiplicity_batch(std::min(max_n, 1u << 18), 0.2, 1.0, seed++);
    for (auto &x : b.receives) x.key.context += 1000;
    t.run("all unmatched", b, true);
  }
  // Tiny key spaces at size: FIFO over long runs of equal keys.
  t.run("tiny keys n=1M", gen::tiny_keys_batch(std::min(max_n, 1u << 20), std::min(max_n, 1u << 20) - 77, seed++),
        false);
  // The largest batches: 16M against 16M, all matched and partly matched.
  t.run("16M multiplicity 0.3", gen::multiplicity_batch(max_n, 0.3, 1.0, seed++), !small);
  t.run("16M skewed", gen::skewed_batch(max_n, max_n, max_n / 4, 2.0, seed++), false);
  // Back to a small batch: the grown scratch must still give right answers.
  t.run("small after large", gen::tiny_keys_batch(100, 90, seed++), true);
  std::printf("%d cases (x2 variants), GPU scratch %zu MB\n", t.cases / 2, t.gpu_scratch.bytes() >> 20);
  if (g_errors == 0) std::fputs(" No Errors\n", stdout);  // one write: see test/mpi/mtest.h mtest_printf
  else std::printf(" Found %d errors\n", g_errors);
  return g_errors != 0;
}
