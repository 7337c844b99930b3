// bench_gpu_copy: what one small host-driven GPU data movement costs, issue
// to completion seen by the host — the building blocks of mpix's
// small-message device path (device/copy.cu). One process, no MPI.
//
//   d2h-sync     cudaMemcpyAsync device -> pinned host, cudaStreamSynchronize
//   d2h-query    the same, completion by spinning on cudaStreamQuery
//   d2h-event    the same, cudaEventRecord + spinning on cudaEventQuery
//                (mpix's copy_async + event_poll)
//   h2d-sync     pinned host -> device, cudaStreamSynchronize
//   d2d-sync     device -> device on one GPU, cudaStreamSynchronize
//   kernel-flag  a 1-thread kernel copies the bytes into host-mapped pinned
//                memory and raises a flag there; the host spins on the flag
//   kernel-sync  the same kernel, cudaStreamSynchronize
//   resident-d2h mpix's resident copy kernel (device/kernel_copy.cu, compiled
//   resident-h2d in): a descriptor in pinned memory, the kernel's completion
//   resident-d2d word spun on; h2d of up to 35 bytes rides in the descriptor
//   resident-floor  a resident 1-thread kernel echoes a host-written word
//                back to host memory (the floor of any resident kernel)
//   ptr-attr     one cudaPointerGetAttributes (what classifying a buffer costs)
//   attrs-N-host, attrs-N-dev  one cuPointerGetAttributes of N attributes on
//                pageable host or device memory: mpix's own classification
//                (device/memtype.cc: 3 for a receive, 7 for a send)
//
// Options: -n ITERS (default 2000), -b BYTES (default 8), --spin (context
// with cudaDeviceScheduleSpin), --yield (cudaDeviceScheduleYield).
// Prints one line per method: median and mean microseconds.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "device/kernel_copy.h"
#include "device/memtype.h"

namespace {

__global__ void copy_and_flag(const unsigned char *src, unsigned char *dst, std::size_t n,
                              volatile unsigned *flag, unsigned seq) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = src[i];
  __threadfence_system();
  *flag = seq;
}

// The floor under any resident kernel: one thread spins on a word of
// pinned host memory and echoes each new value into another, so a sample
// is one host write seen by the GPU plus one GPU write seen by the host.
__global__ void echo(const volatile unsigned *ping, volatile unsigned *pong) {
  for (unsigned last = 0;;) {
    const unsigned v = *ping;
    if (v == last) continue;
    last = v;
    *pong = v;
    if (v == ~0u) return;
  }
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class F>
void measure(const char *name, int iters, F f) {
  for (int i = 0; i < 50; ++i) f(i);
  std::vector<double> t(static_cast<std::size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    const double t0 = now_us();
    f(i);
    t[static_cast<std::size_t>(i)] = now_us() - t0;
  }
  double sum = 0;
  for (double x : t) sum += x;
  std::sort(t.begin(), t.end());
  std::printf("%-12s %10.2f %10.2f\n", name, t[t.size() / 2], sum / iters);
  std::printf("csv,%s,%.3f,%.3f\n", name, t[t.size() / 2], sum / iters);
}

#define CK(x)                                                                      \
  do {                                                                             \
    cudaError_t e_ = (x);                                                          \
    if (e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

}  // namespace

int main(int argc, char **argv) {
  int iters = 2000;
  std::size_t bytes = 8;
  unsigned flags = cudaDeviceScheduleAuto;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-n") == 0 && i + 1 < argc) iters = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "-b") == 0 && i + 1 < argc) bytes = std::strtoull(argv[++i], nullptr, 10);
    else if (std::strcmp(argv[i], "--spin") == 0) flags = cudaDeviceScheduleSpin;
    else if (std::strcmp(argv[i], "--yield") == 0) flags = cudaDeviceScheduleYield;
  }
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
    std::printf("bench_gpu_copy: skipped: no GPU\n");
    return 0;
  }
  CK(cudaSetDeviceFlags(flags | cudaDeviceMapHost));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t ev;
  CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  unsigned char *d0 = nullptr, *d1 = nullptr, *h = nullptr;
  unsigned *hflag = nullptr, *dflag = nullptr;
  unsigned char *hmapped = nullptr, *dmapped = nullptr;
  CK(cudaMalloc(&d0, bytes + 1));
  CK(cudaMalloc(&d1, bytes + 1));
  CK(cudaHostAlloc(&h, bytes + 1, cudaHostAllocPortable));
  CK(cudaHostAlloc(&hflag, sizeof *hflag, cudaHostAllocMapped));
  CK(cudaHostAlloc(&hmapped, bytes + 1, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(reinterpret_cast<void **>(&dflag), hflag, 0));
  CK(cudaHostGetDevicePointer(reinterpret_cast<void **>(&dmapped), hmapped, 0));
  *hflag = 0;
  std::printf("# bench_gpu_copy: %zu bytes, %d iterations, schedule %s; microseconds issue -> host sees done\n",
              bytes, iters, flags == cudaDeviceScheduleSpin ? "spin" : flags == cudaDeviceScheduleYield ? "yield" : "auto");
  std::printf("%-12s %10s %10s\n", "method", "median", "mean");
  measure("d2h-sync", iters, [&](int) {
    CK(cudaMemcpyAsync(h, d0, bytes, cudaMemcpyDefault, s));
    CK(cudaStreamSynchronize(s));
  });
  measure("d2h-query", iters, [&](int) {
    CK(cudaMemcpyAsync(h, d0, bytes, cudaMemcpyDefault, s));
    while (cudaStreamQuery(s) == cudaErrorNotReady) {
    }
  });
  measure("d2h-event", iters, [&](int) {
    CK(cudaMemcpyAsync(h, d0, bytes, cudaMemcpyDefault, s));
    CK(cudaEventRecord(ev, s));
    while (cudaEventQuery(ev) == cudaErrorNotReady) {
    }
  });
  measure("h2d-sync", iters, [&](int) {
    CK(cudaMemcpyAsync(d0, h, bytes, cudaMemcpyDefault, s));
    CK(cudaStreamSynchronize(s));
  });
  measure("d2d-sync", iters, [&](int) {
    CK(cudaMemcpyAsync(d1, d0, bytes, cudaMemcpyDefault, s));
    CK(cudaStreamSynchronize(s));
  });
  measure("kernel-flag", iters, [&](int i) {
    const unsigned seq = static_cast<unsigned>(i) + 1000000u;
    copy_and_flag<<<1, 1, 0, s>>>(d0, dmapped, bytes, dflag, seq);
    while (*reinterpret_cast<volatile unsigned *>(hflag) != seq) {
    }
  });
  CK(cudaStreamSynchronize(s));
  measure("kernel-sync", iters, [&](int i) {
    copy_and_flag<<<1, 1, 0, s>>>(d0, dmapped, bytes, dflag, static_cast<unsigned>(i));
    CK(cudaStreamSynchronize(s));
  });
  CK(cudaStreamSynchronize(s));
  {
    unsigned *ping = nullptr, *pong = nullptr, *dping = nullptr, *dpong = nullptr;
    CK(cudaHostAlloc(&ping, 64, cudaHostAllocMapped));
    CK(cudaHostAlloc(&pong, 64, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer(reinterpret_cast<void **>(&dping), ping, 0));
    CK(cudaHostGetDevicePointer(reinterpret_cast<void **>(&dpong), pong, 0));
    *ping = *pong = 0;
    echo<<<1, 1, 0, s>>>(dping, dpong);
    measure("resident-floor", iters, [&](int i) {
      const unsigned seq = static_cast<unsigned>(i) + 1u;
      *reinterpret_cast<volatile unsigned *>(ping) = seq;
      while (*reinterpret_cast<volatile unsigned *>(pong) != seq) {
      }
    });
    *reinterpret_cast<volatile unsigned *>(ping) = ~0u;
    CK(cudaStreamSynchronize(s));
    cudaFreeHost(ping);
    cudaFreeHost(pong);
  }
  mpix::device::KernelCopyConfig kc;
  kc.enabled = true;
  kc.max_bytes = std::max<std::size_t>(bytes, 8192);
  kc.device_max = kc.max_bytes;
  kc.idle_us = 100000;
  mpix::device::kernel_copy_configure(kc);
  std::vector<unsigned char> pageable(bytes + 1);
  const auto resident = [&](void *dst, bool dh, const void *src, bool sh) {
    const mpix::device::Status e = mpix::device::kernel_copy(dst, dh, src, sh, bytes, 0);
    if (e != mpix::device::Status::kOk) {
      std::fprintf(stderr, "kernel_copy: %s\n", mpix::device::status_string(e));
      std::exit(1);
    }
  };
  measure("resident-d2h", iters, [&](int) { resident(pageable.data(), true, d0, false); });
  measure("resident-h2d", iters, [&](int) { resident(d0, false, pageable.data(), true); });
  measure("resident-d2d", iters, [&](int) { resident(d1, false, d0, false); });
  std::printf("resident kernel launches: %llu\n",
              static_cast<unsigned long long>(mpix::device::kernel_copy_stats().launches));
  mpix::device::kernel_copy_finalize();
  measure("ptr-attr", iters, [&](int) {
    cudaPointerAttributes a{};
    CK(cudaPointerGetAttributes(&a, d0 + 1));
  });
  using AttrsFn = int (*)(unsigned, int *, void **, unsigned long long);
  void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (auto attrs_fn = libcuda ? reinterpret_cast<AttrsFn>(dlsym(libcuda, "cuPointerGetAttributes")) : nullptr) {
    namespace cu = mpix::device::cu;
    int ids[] = {cu::kAttrMemoryType,      cu::kAttrIsManaged,       cu::kAttrDeviceOrdinal, cu::kAttrBufferId,
                 cu::kAttrIsLegacyIpcCapable, cu::kAttrRangeStartAddr, cu::kAttrRangeSize};
    const auto ask = [&](const void *p, unsigned n) {
      unsigned long long v[7] = {};
      void *data[7];
      for (unsigned i = 0; i < 7; ++i) data[i] = &v[i];
      if (attrs_fn(n, ids, data, reinterpret_cast<unsigned long long>(p)) != 0) std::exit(1);
    };
    measure("attrs-2-host", iters, [&](int) { ask(pageable.data(), 2); });
    measure("attrs-7-host", iters, [&](int) { ask(pageable.data(), 7); });
    measure("attrs-3-dev", iters, [&](int) { ask(d0 + 1, 3); });
    measure("attrs-7-dev", iters, [&](int) { ask(d0 + 1, 7); });
  }
  cudaFree(d0);
  cudaFree(d1);
  cudaFreeHost(h);
  cudaFreeHost(hflag);
  cudaFreeHost(hmapped);
  return 0;
}
