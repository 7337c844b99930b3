// What the host side of mpix asks of the GPU layer. Usable from host-only
// translation units; in a build without CUDA the stub (gpu_none.cc) answers.
#ifndef MPIX_DEVICE_GPU_H
#define MPIX_DEVICE_GPU_H

namespace mpix::device {

// True when the library was built with CUDA.
bool compiled_with_cuda();

// Number of GPUs this process can use; 0 without CUDA, driver or device.
int device_count();

// "NVIDIA H200 (sm_90), driver 13.0" for GPU `device`, or a reason why none.
void describe(int device, char *buf, int len);

}  // namespace mpix::device

#endif
