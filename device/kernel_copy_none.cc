// Without CUDA there is no resident copy kernel: every copy is refused with
// Status::kDeclined (and none can be asked for: no device memory exists).
#include "kernel_copy.h"

namespace mpix::device {

void kernel_copy_configure(const KernelCopyConfig &) {}
Status kernel_copy(void *, bool, const void *, bool, std::size_t, int) { return Status::kDeclined; }
Status kernel_copy_post(void *, const void *, bool, std::size_t, int, KernelCopyTicket *) { return Status::kDeclined; }
Status kernel_copy_test(const KernelCopyTicket &) { return Status::kOk; }
KernelCopyStats kernel_copy_stats() { return {}; }
void kernel_copy_preload() {}
void kernel_copy_finalize() {}

}  // namespace mpix::device
