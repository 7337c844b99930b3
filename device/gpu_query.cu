#include <cuda_runtime.h>

#include <cstdio>

#include "cuda_check.h"
#include "gpu.h"

namespace mpix::device {

bool compiled_with_cuda() { return true; }

int device_count() {
  int n = 0;
  // Fails with cudaErrorNoDevice / cudaErrorInsufficientDriver on machines
  // without a GPU; that is an answer (0), not an error.
  return mpix::device::cuda_ok(cudaGetDeviceCount(&n)) ? n : 0;
}

void describe(int device, char *buf, int len) {
  cudaDeviceProp prop;
  const cudaError_t e = cudaGetDeviceProperties(&prop, device);
  if (!mpix::device::cuda_ok(e)) {
    std::snprintf(buf, static_cast<size_t>(len), "no GPU %d (%s)", device, cudaGetErrorString(e));
    return;
  }
  int driver = 0;
  cudaDriverGetVersion(&driver);
  std::snprintf(buf, static_cast<size_t>(len), "%s (sm_%d%d, %d SMs), driver CUDA %d.%d", prop.name,
                prop.major, prop.minor, prop.multiProcessorCount, driver / 1000, (driver % 1000) / 10);
}

}  // namespace mpix::device
