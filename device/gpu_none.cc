// The GPU layer of a build without CUDA: no devices, ever.
#include <cstdio>

#include "gpu.h"

namespace mpix::device {

bool compiled_with_cuda() { return false; }

int device_count() { return 0; }

void describe(int device, char *buf, int len) {
  std::snprintf(buf, static_cast<size_t>(len), "no GPU %d (built without CUDA)", device);
}

}  // namespace mpix::device
