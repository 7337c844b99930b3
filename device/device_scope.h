// Makes a device current for a scope and restores the caller's on exit: the
// application's notion of "current GPU" must not change under it. CUDA
// translation units only (device/*.cu).
#ifndef MPIX_DEVICE_DEVICE_SCOPE_H
#define MPIX_DEVICE_DEVICE_SCOPE_H

#include <cuda_runtime.h>

namespace mpix::device {

class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&old_) != cudaSuccess) old_ = -1;
    if (device >= 0 && device != old_) switched_ = cudaSetDevice(device) == cudaSuccess;
  }
  ~DeviceScope() {
    if (switched_ && old_ >= 0) cudaSetDevice(old_);
  }
  DeviceScope(const DeviceScope &) = delete;
  DeviceScope &operator=(const DeviceScope &) = delete;

 private:
  int old_ = -1;
  bool switched_ = false;
};

}  // namespace mpix::device

#endif
