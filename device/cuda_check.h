// How mpix's host code checks a CUDA runtime call (device/*.cu only), and
// how a CUDA error becomes the Status of device/status.h.
//
// A failure mpix handles (a fallback, an error class it reports, "no GPU")
// must not surface again in the application's own cudaGetLastError(), so
// every check clears CUDA's per-thread last error when the call failed; it
// also records the failure's text for status_string().
//   if (!cuda_ok(cudaMalloc(...))) return nullptr;   // any other return
//   MPIX_CUDA_TRY(cudaMemcpyAsync(...));             // in a cudaError_t function
//   return cuda_status(e);                           // where a Status leaves device/
#ifndef MPIX_DEVICE_CUDA_CHECK_H
#define MPIX_DEVICE_CUDA_CHECK_H

#include <cuda_runtime.h>

#include "status.h"

namespace mpix::device {

inline bool cuda_ok(cudaError_t e) {
  if (e == cudaSuccess) return true;
  note_cuda_error(cudaGetErrorString(e));
  (void)cudaGetLastError();
  return false;
}

// cuda_ok as a Status: kOk, or kCudaError with e's text recorded.
inline Status cuda_status(cudaError_t e) { return cuda_ok(e) ? Status::kOk : Status::kCudaError; }

}  // namespace mpix::device

#define MPIX_CUDA_TRY(call)                                             \
  do {                                                                  \
    const cudaError_t mpix_cuda_try_e_ = (call);                        \
    if (!::mpix::device::cuda_ok(mpix_cuda_try_e_)) return mpix_cuda_try_e_; \
  } while (0)

#endif
