// Builds without CUDA: no device communicators.
#include "devcomm.h"

namespace mpix::device {

std::unique_ptr<DevComm> DevComm::create(const MPIX_Device_comm &, Status *status) {
  *status = Status::kNoCuda;
  return nullptr;
}
DevComm::~DevComm() = default;
Status DevComm::connect(const unsigned char *) { return Status::kNoCuda; }
void DevComm::close_peers() {}
bool DevComm::native_atomics_with(const char *) const { return false; }
void *mapped_alloc(std::size_t) { return nullptr; }
void mapped_free(void *) {}
void *device_alloc_zero(std::size_t) { return nullptr; }
void device_free(void *) {}

}  // namespace mpix::device
