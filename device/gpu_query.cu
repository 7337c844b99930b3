#include <cuda_runtime.h>

#include <cstdio>

#include "gpu.h"

namespace mpix::gpu {

bool compiled_with_cuda() { return true; }

int device_count() {
  int n = 0;
  // Fails with cudaErrorNoDevice / cudaErrorInsufficientDriver on machines
  // without a GPU; that is an answer (0), not an error.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

void describe(int device, char *buf, int len) {
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    std::snprintf(buf, static_cast<size_t>(len), "no GPU %d (%s)", device,
                  cudaGetErrorString(cudaGetLastError()));
    return;
  }
  int driver = 0;
  cudaDriverGetVersion(&driver);
  std::snprintf(buf, static_cast<size_t>(len), "%s (sm_%d%d, %d SMs), driver CUDA %d.%d", prop.name,
                prop.major, prop.minor, prop.multiProcessorCount, driver / 1000, (driver % 1000) / 10);
}

}  // namespace mpix::gpu
