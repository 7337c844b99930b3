// How mpix's host code checks a CUDA runtime call (device/*.cu only).
//
// A failure mpix handles (a fallback, an error class it reports, "no GPU")
// must not surface again in the application's own cudaGetLastError(), so
// every check clears CUDA's per-thread last error when the call failed.
//   if (!cuda_ok(cudaMalloc(...))) return nullptr;   // any other return
//   MPIX_CUDA_TRY(cudaMemcpyAsync(...));             // in a cudaError_t function
#ifndef MPIX_DEVICE_CUDA_CHECK_H
#define MPIX_DEVICE_CUDA_CHECK_H

#include <cuda_runtime.h>

namespace mpix::device {

inline bool cuda_ok(cudaError_t e) {
  if (e == cudaSuccess) return true;
  (void)cudaGetLastError();
  return false;
}

}  // namespace mpix::device

#define MPIX_CUDA_TRY(call)                                             \
  do {                                                                  \
    const cudaError_t mpix_cuda_try_e_ = (call);                        \
    if (!::mpix::device::cuda_ok(mpix_cuda_try_e_)) return mpix_cuda_try_e_; \
  } while (0)

#endif
