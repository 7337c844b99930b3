// Builds without CUDA: no device communicators.
#include "devcomm.h"

namespace mpix::device {

std::unique_ptr<DevComm> DevComm::create(const MPIX_Device_comm &, DevStatus *status) {
  *status = DevStatus::kNoCuda;
  return nullptr;
}
DevComm::~DevComm() = default;
DevStatus DevComm::connect(const unsigned char *) { return DevStatus::kNoCuda; }

}  // namespace mpix::device
