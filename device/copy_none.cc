// The GPU data paths of a build without CUDA: every device operation fails
// with Status::kNoCuda, which the point-to-point layer reports as
// MPIX_ERR_NO_CUDA (the host-memory parts of the protocols need none of it).
#include "copy.h"
#include "ipc.h"

namespace mpix::device {

int current_device() { return 0; }
Status copy_sync(void *, const void *, std::size_t, int) { return Status::kNoCuda; }
Status copy_async(void *, const void *, std::size_t, int, CopyEvent *) { return Status::kNoCuda; }
Status event_poll(CopyEvent) { return Status::kNoCuda; }
void event_drop(CopyEvent) {}
void *pinned_alloc(std::size_t) { return nullptr; }
void pinned_free(void *) {}
void copy_finalize() {}

Status ipc_export(void *, unsigned char *) { return Status::kNoCuda; }
Status ipc_open(const unsigned char *, int, void **) { return Status::kNoCuda; }
Status ipc_close(void *) { return Status::kNoCuda; }

}  // namespace mpix::device
