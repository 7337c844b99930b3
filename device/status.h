// What the GPU code's host-side set-up and launch calls report: one result
// type for every file of device/ (the public C API keeps its own
// MPIX_DEVICE_* codes; the layers above turn these into Err values).
#ifndef MPIX_DEVICE_STATUS_H
#define MPIX_DEVICE_STATUS_H

namespace mpix::device {

enum class Status {
  kOk,
  kNoCuda,    // built without CUDA
  kNoGpu,     // no usable GPU (or a CUDA feature the call needs is missing)
  kCudaError  // a CUDA call failed
};

}  // namespace mpix::device

#endif
