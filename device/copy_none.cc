// The GPU data paths of a build without CUDA: every device operation fails
// with kErrNoCuda, which the point-to-point layer reports as
// MPIX_ERR_NO_CUDA (the host-memory parts of the protocols need none of it).
#include "copy.h"
#include "ipc.h"

namespace mpix::device {

const char *error_string(int err) {
  return err == kErrNoCuda ? "mpix was built without CUDA" : "CUDA error (mpix built without CUDA)";
}
int current_device() { return 0; }
int copy_sync(void *, const void *, std::size_t, int) { return kErrNoCuda; }
int copy_async(void *, const void *, std::size_t, int, CopyEvent *) { return kErrNoCuda; }
int event_poll(CopyEvent) { return -kErrNoCuda; }
void event_drop(CopyEvent) {}
void *pinned_alloc(std::size_t) { return nullptr; }
void pinned_free(void *) {}
void copy_finalize() {}

int ipc_export(void *, unsigned char *) { return kErrNoCuda; }
int ipc_open(const unsigned char *, int, void **) { return kErrNoCuda; }
int ipc_close(void *) { return kErrNoCuda; }

}  // namespace mpix::device
