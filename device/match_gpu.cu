// GPU batch matching (see match_gpu.h for the algorithm and contract).
//
// Items of a batch are numbered 0..N-1: arrivals first (0..n_a-1), then
// receives (n_a..N-1). Each distinct key is named by its representative, the
// item that inserted it into the hash table; sorting the items stably by
// representative gives, per key, a segment [start, aend) of arrivals then
// [aend, end) of receives, both in input order.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include <algorithm>

#include "cuda_check.h"
#include "device_scope.h"
#include "match_gpu.h"

namespace mpix::device {

using match::BatchCounts;
using match::BatchItem;
using match::BatchKey;
using match::BatchOutput;
using match::BatchPair;

namespace {

constexpr std::uint32_t kEmpty = 0xffffffffu;
constexpr std::uint32_t kNone = 0xffffffffu;
constexpr int kBlock = 256;

// Grow-only device buffer: cudaMalloc only when a larger batch comes.
struct DeviceBuffer {
  void *ptr = nullptr;
  std::size_t bytes = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { reset(); }
  void reset() {
    if (ptr != nullptr) cudaFree(ptr);
    ptr = nullptr;
    bytes = 0;
  }
  cudaError_t reserve(std::size_t n) {
    if (n <= bytes) return cudaSuccess;
    reset();
    // Headroom, so that a slowly growing batch does not reallocate each time.
    const std::size_t want = n + n / 4;
    MPIX_CUDA_TRY(cudaMalloc(&ptr, want));
    bytes = want;
    return cudaSuccess;
  }
  template <class T>
  T *as() const {
    return static_cast<T *>(ptr);
  }
};


__device__ __forceinline__ BatchKey key_of(const BatchItem *a, const BatchItem *r, std::uint32_t n_a,
                                           std::uint32_t item) {
  return item < n_a ? a[item].key : r[item - n_a].key;
}

__device__ __forceinline__ bool same(BatchKey x, BatchKey y) {
  return x.context == y.context && x.source == y.source && x.tag == y.tag;
}

// Finds or inserts each item's key; rep[i]: the representative of i's key.
__global__ void k_insert(const BatchItem *a, const BatchItem *r, std::uint32_t n_a, std::uint32_t n,
                         std::uint32_t *table, std::uint32_t mask, std::uint32_t *rep, std::uint32_t *idx) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const BatchKey k = key_of(a, r, n_a, i);
    std::uint32_t h = static_cast<std::uint32_t>(batch_key_hash(k)) & mask;
    std::uint32_t found = kEmpty;
    for (;;) {
      std::uint32_t owner = table[h];
      if (owner == kEmpty) {
        owner = atomicCAS(&table[h], kEmpty, i);
        if (owner == kEmpty) {
          found = i;
          break;
        }
      }
      if (same(key_of(a, r, n_a, owner), k)) {
        found = owner;
        break;
      }
      h = (h + 1) & mask;
    }
    rep[i] = found;
    idx[i] = i;
  }
}

// Segment bounds per representative, each written by exactly one thread.
__global__ void k_segments(const std::uint32_t *rep, const std::uint32_t *idx, std::uint32_t n_a,
                           std::uint32_t n, std::uint32_t *start, std::uint32_t *aend, std::uint32_t *end) {
  for (std::uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < n; p += gridDim.x * blockDim.x) {
    const std::uint32_t s = rep[p];
    const bool head = p == 0 || rep[p - 1] != s;
    const bool tail = p + 1 == n || rep[p + 1] != s;
    const bool arrival = idx[p] < n_a;
    if (head) start[s] = p;
    if (head && !arrival) aend[s] = p;
    if (arrival && (tail || idx[p + 1] >= n_a)) aend[s] = p + 1;
    if (tail) end[s] = p + 1;
  }
}

// Pairs within each segment. flag[i]: arrival i matched / receive unmatched
// (the entries that go to pairs and to unmatched_receives respectively).
template <bool kFifo>
__global__ void k_pair(const std::uint32_t *rep, const std::uint32_t *idx, std::uint32_t n_a, std::uint32_t n,
                       const std::uint32_t *start, const std::uint32_t *aend, const std::uint32_t *end,
                       std::uint32_t *partner, std::uint32_t *flag) {
  for (std::uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < n; p += gridDim.x * blockDim.x) {
    const std::uint32_t s = rep[p];
    const std::uint32_t item = idx[p];
    const std::uint32_t st = start[s], ae = aend[s], en = end[s];
    const std::uint32_t na = ae - st, nr = en - ae;
    if (item < n_a) {
      const std::uint32_t k = p - st;
      const bool matched = k < nr;
      partner[item] = matched ? idx[kFifo ? ae + k : en - 1 - k] - n_a : kNone;
      flag[item] = matched;
    } else {
      const std::uint32_t k = p - ae;
      // fifo: the first na receives are taken; unordered: the last na.
      const bool matched = kFifo ? k < na : nr - 1 - k < na;
      flag[item] = !matched;
    }
  }
}

__global__ void k_scatter(const BatchItem *a, const BatchItem *r, std::uint32_t n_a, std::uint32_t n,
                          const std::uint32_t *partner, const std::uint32_t *flag, const std::uint32_t *pos,
                          BatchOutput out, BatchCounts *counts) {
  const std::uint32_t pairs = n_a > 0 ? pos[n_a - 1] + flag[n_a - 1] : 0;
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const std::uint32_t q = pos[i];
    if (i < n_a) {
      if (flag[i]) {
        const std::uint32_t j = partner[i];
        out.pairs[q] = BatchPair{i, j, a[i].cookie, r[j].cookie};
      } else {
        out.unmatched_arrivals[i - q] = i;
      }
    } else if (flag[i]) {
      out.unmatched_receives[q - pairs] = i - n_a;
    }
    if (i + 1 == n) {
      const std::uint32_t total = q + flag[i];
      *counts = BatchCounts{pairs, n_a - pairs, total - pairs};
    }
  }
}

unsigned grid_for(std::uint32_t n) {
  const std::uint32_t blocks = (n + kBlock - 1) / kBlock;
  return std::max(1u, std::min(blocks, 1u << 20));
}

int bits_for(std::uint32_t n) {  // bits of the largest representative, n-1
  int b = 1;
  while (b < 32 && (std::uint64_t{1} << b) < n) ++b;
  return b;
}

}  // namespace

struct GpuMatchScratch::Impl {
  int device = -1;
  cudaStream_t stream = nullptr;  // own stream of the host-array variant
  DeviceBuffer table, rep, idx, rep_sorted, idx_sorted, start, aend, end, partner, flag, pos, temp;
  DeviceBuffer host_in, host_out;  // device copies of a host batch
  BatchCounts *counts_dev = nullptr;
  BatchCounts *counts_host = nullptr;  // pinned: the result's 12 bytes come back without staging

  ~Impl() {
    DeviceScope scope(device);
    if (counts_dev != nullptr) cudaFree(counts_dev);
    if (counts_host != nullptr) cudaFreeHost(counts_host);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  std::size_t bytes() const {
    std::size_t b = 0;
    for (const DeviceBuffer *d : {&table, &rep, &idx, &rep_sorted, &idx_sorted, &start, &aend, &end, &partner,
                                  &flag, &pos, &temp, &host_in, &host_out})
      b += d->bytes;
    return b;
  }

  cudaError_t prepare(std::uint32_t n, std::uint32_t cap, cudaStream_t s) {
    if (device < 0 && !cuda_ok(cudaGetDevice(&device))) return cudaErrorNoDevice;
    if (counts_dev == nullptr) MPIX_CUDA_TRY(cudaMalloc(&counts_dev, sizeof(BatchCounts)));
    if (counts_host == nullptr) MPIX_CUDA_TRY(cudaMallocHost(&counts_host, sizeof(BatchCounts)));
    const std::size_t words = std::size_t{n} * sizeof(std::uint32_t);
    for (DeviceBuffer *d : {&rep, &idx, &rep_sorted, &idx_sorted, &start, &aend, &end, &partner, &flag, &pos})
      MPIX_CUDA_TRY(d->reserve(words));
    MPIX_CUDA_TRY(table.reserve(std::size_t{cap} * sizeof(std::uint32_t)));
    std::size_t sort_bytes = 0, scan_bytes = 0;
    MPIX_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, rep.as<std::uint32_t>(),
                                                  rep_sorted.as<std::uint32_t>(), idx.as<std::uint32_t>(),
                                                  idx_sorted.as<std::uint32_t>(), n, 0, bits_for(n), s));
    MPIX_CUDA_TRY(
        cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, flag.as<std::uint32_t>(), pos.as<std::uint32_t>(), n, s));
    return temp.reserve(std::max(sort_bytes, scan_bytes));
  }

  template <bool kFifo>
  cudaError_t run(const BatchItem *a, std::uint32_t n_a, const BatchItem *r, std::uint32_t n_r,
                  const BatchOutput &out, cudaStream_t s) {
    const std::uint32_t n = n_a + n_r;
    std::uint32_t cap = 64;
    while (cap < 2u * n && cap < 0x80000000u) cap *= 2;
    MPIX_CUDA_TRY(prepare(n, cap, s));
    auto *table_p = table.as<std::uint32_t>();
    auto *rep_p = rep.as<std::uint32_t>(), *idx_p = idx.as<std::uint32_t>();
    auto *reps = rep_sorted.as<std::uint32_t>(), *idxs = idx_sorted.as<std::uint32_t>();
    auto *st = start.as<std::uint32_t>(), *ae = aend.as<std::uint32_t>(), *en = end.as<std::uint32_t>();
    auto *part = partner.as<std::uint32_t>(), *fl = flag.as<std::uint32_t>(), *ps = pos.as<std::uint32_t>();
    const unsigned grid = grid_for(n);
    MPIX_CUDA_TRY(cudaMemsetAsync(table_p, 0xff, std::size_t{cap} * sizeof(std::uint32_t), s));
    k_insert<<<grid, kBlock, 0, s>>>(a, r, n_a, n, table_p, cap - 1, rep_p, idx_p);
    std::size_t temp_bytes = temp.bytes;
    MPIX_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.ptr, temp_bytes, rep_p, reps, idx_p, idxs, n, 0, bits_for(n), s));
    k_segments<<<grid, kBlock, 0, s>>>(reps, idxs, n_a, n, st, ae, en);
    k_pair<kFifo><<<grid, kBlock, 0, s>>>(reps, idxs, n_a, n, st, ae, en, part, fl);
    temp_bytes = temp.bytes;
    MPIX_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp.ptr, temp_bytes, fl, ps, n, s));
    k_scatter<<<grid, kBlock, 0, s>>>(a, r, n_a, n, part, fl, ps, out, counts_dev);
    MPIX_CUDA_TRY(cudaGetLastError());  // the launches
    MPIX_CUDA_TRY(cudaMemcpyAsync(counts_host, counts_dev, sizeof(BatchCounts), cudaMemcpyDeviceToHost, s));
    MPIX_CUDA_TRY(cudaStreamSynchronize(s));
    return cudaSuccess;
  }

  template <bool kFifo>
  cudaError_t device_call(const BatchItem *a, std::uint32_t n_a, const BatchItem *r, std::uint32_t n_r,
                          const BatchOutput &out, BatchCounts *counts, cudaStream_t s) {
    if (n_a == 0 && n_r == 0) {
      *counts = BatchCounts{0, 0, 0};
      return cudaSuccess;
    }
    if (std::uint64_t{n_a} + n_r >= kGpuMatchMaxItems) return cudaErrorInvalidValue;
    DeviceScope scope(device);
    MPIX_CUDA_TRY(run<kFifo>(a, n_a, r, n_r, out, s));
    *counts = *counts_host;
    return cudaSuccess;
  }

  template <bool kFifo>
  cudaError_t host_call(const BatchItem *a, std::uint32_t n_a, const BatchItem *r, std::uint32_t n_r,
                        const BatchOutput &out, BatchCounts *counts) {
    if (n_a == 0 && n_r == 0) {
      *counts = BatchCounts{0, 0, 0};
      return cudaSuccess;
    }
    if (std::uint64_t{n_a} + n_r >= kGpuMatchMaxItems) return cudaErrorInvalidValue;
    if (device < 0 && !cuda_ok(cudaGetDevice(&device))) return cudaErrorNoDevice;
    DeviceScope scope(device);
    if (stream == nullptr) MPIX_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const std::size_t in_a = std::size_t{n_a} * sizeof(BatchItem), in_r = std::size_t{n_r} * sizeof(BatchItem);
    const std::uint32_t max_pairs = std::min(n_a, n_r);
    const std::size_t out_p = std::size_t{max_pairs} * sizeof(BatchPair);
    const std::size_t out_ua = std::size_t{n_a} * sizeof(std::uint32_t);
    const std::size_t out_ur = std::size_t{n_r} * sizeof(std::uint32_t);
    MPIX_CUDA_TRY(host_in.reserve(in_a + in_r));
    MPIX_CUDA_TRY(host_out.reserve(out_p + out_ua + out_ur));
    auto *da = host_in.as<BatchItem>();
    auto *dr = da + n_a;
    char *o = host_out.as<char>();
    const BatchOutput dout{reinterpret_cast<BatchPair *>(o), reinterpret_cast<std::uint32_t *>(o + out_p),
                           reinterpret_cast<std::uint32_t *>(o + out_p + out_ua)};
    if (n_a > 0) MPIX_CUDA_TRY(cudaMemcpyAsync(da, a, in_a, cudaMemcpyHostToDevice, stream));
    if (n_r > 0) MPIX_CUDA_TRY(cudaMemcpyAsync(dr, r, in_r, cudaMemcpyHostToDevice, stream));
    MPIX_CUDA_TRY(run<kFifo>(da, n_a, dr, n_r, dout, stream));
    const BatchCounts c = *counts_host;
    // Only the filled parts come back.
    if (c.pairs > 0)
      MPIX_CUDA_TRY(cudaMemcpyAsync(out.pairs, dout.pairs, std::size_t{c.pairs} * sizeof(BatchPair),
                                    cudaMemcpyDeviceToHost, stream));
    if (c.unmatched_arrivals > 0)
      MPIX_CUDA_TRY(cudaMemcpyAsync(out.unmatched_arrivals, dout.unmatched_arrivals,
                                    std::size_t{c.unmatched_arrivals} * sizeof(std::uint32_t), cudaMemcpyDeviceToHost,
                                    stream));
    if (c.unmatched_receives > 0)
      MPIX_CUDA_TRY(cudaMemcpyAsync(out.unmatched_receives, dout.unmatched_receives,
                                    std::size_t{c.unmatched_receives} * sizeof(std::uint32_t), cudaMemcpyDeviceToHost,
                                    stream));
    MPIX_CUDA_TRY(cudaStreamSynchronize(stream));
    *counts = c;
    return cudaSuccess;
  }
};

GpuMatchScratch::GpuMatchScratch() : impl_(std::make_unique<Impl>()) {}
GpuMatchScratch::~GpuMatchScratch() = default;
std::size_t GpuMatchScratch::bytes() const { return impl_->bytes(); }
void GpuMatchScratch::release() { impl_ = std::make_unique<Impl>(); }

namespace {

// The Status a call of the matcher leaves device/ with. Failed CUDA calls
// were checked (and CUDA's last error cleared) inside; this records the
// text of those and of the matcher's own refusals.
Status result(cudaError_t e) {
  if (e == cudaSuccess) return Status::kOk;
  note_cuda_error(cudaGetErrorString(e));
  return Status::kCudaError;
}

}  // namespace

bool gpu_match_available() {
  int n = 0;
  return cuda_ok(cudaGetDeviceCount(&n)) && n > 0;
}

Status gpu_match_batch_fifo(const BatchItem *arrivals, std::uint32_t n_arrivals, const BatchItem *receives,
                            std::uint32_t n_receives, const BatchOutput &out, BatchCounts *counts,
                            GpuMatchScratch &scratch) {
  return result(scratch.impl()->host_call<true>(arrivals, n_arrivals, receives, n_receives, out, counts));
}

Status gpu_match_batch_unordered(const BatchItem *arrivals, std::uint32_t n_arrivals, const BatchItem *receives,
                                 std::uint32_t n_receives, const BatchOutput &out, BatchCounts *counts,
                                 GpuMatchScratch &scratch) {
  return result(scratch.impl()->host_call<false>(arrivals, n_arrivals, receives, n_receives, out, counts));
}

Status gpu_match_batch_fifo_device(const BatchItem *arrivals, std::uint32_t n_arrivals, const BatchItem *receives,
                                   std::uint32_t n_receives, const BatchOutput &out, BatchCounts *counts,
                                   GpuMatchScratch &scratch, void *stream) {
  return result(scratch.impl()->device_call<true>(arrivals, n_arrivals, receives, n_receives, out, counts,
                                                  static_cast<cudaStream_t>(stream)));
}

Status gpu_match_batch_unordered_device(const BatchItem *arrivals, std::uint32_t n_arrivals, const BatchItem *receives,
                                        std::uint32_t n_receives, const BatchOutput &out, BatchCounts *counts,
                                        GpuMatchScratch &scratch, void *stream) {
  return result(scratch.impl()->device_call<false>(arrivals, n_arrivals, receives, n_receives, out, counts,
                                                   static_cast<cudaStream_t>(stream)));
}

}  // namespace mpix::device
