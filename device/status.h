// What the GPU code's host-side calls report: one result type for every
// file of device/ (the public C API keeps its own MPIX_DEVICE_* codes; the
// layers above turn these into their own codes once, where they call in:
// Err values in mpix/, MPI error codes in src/p2p).
//
// The convention, for every host-facing function of device/ that can fail:
//   - it returns a Status (or, where it makes an object, takes a Status *
//     beside returning nullptr);
//   - kOk is success; kNotReady and kDeclined are answers, not failures
//     (a copy still running; work the caller must do another way);
//   - kCudaError means a CUDA call failed: the device code has recorded that
//     call's text for the calling thread, and status_string() returns it, as
//     CUDA's cudaGetLastError() keeps a per-thread error. Read it before the
//     thread's next device call. CUDA's own error codes never leave device/.
#ifndef MPIX_DEVICE_STATUS_H
#define MPIX_DEVICE_STATUS_H

namespace mpix::device {

enum class Status {
  kOk,
  kNoCuda,     // built without CUDA
  kNoGpu,      // no usable GPU (or a CUDA feature the call needs is missing)
  kCudaError,  // a CUDA call failed (status_string() names it)
  kNotReady,   // event_poll: the copy is still running
  kDeclined    // kernel_copy: not taken (off, too large, kernel unavailable): use copy_sync
};

namespace detail {
// The text of this thread's latest CUDA failure (static strings of CUDA's).
inline const char *&cuda_error_text() {
  static thread_local const char *text = "unknown CUDA error";
  return text;
}
}  // namespace detail

// Records the text of a failed CUDA call (device/cuda_check.h does, for
// every call it checks) for status_string().
inline void note_cuda_error(const char *text) { detail::cuda_error_text() = text; }

// What s means, for messages; for kCudaError the failed CUDA call's text.
inline const char *status_string(Status s) {
  switch (s) {
    case Status::kOk: return "no error";
    case Status::kNoCuda: return "mpix was built without CUDA";
    case Status::kNoGpu: return "no usable GPU";
    case Status::kCudaError: return detail::cuda_error_text();
    case Status::kNotReady: return "not ready";
    case Status::kDeclined: return "declined";
  }
  return "unknown status";
}

}  // namespace mpix::device

#endif
