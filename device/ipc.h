// CUDA IPC between processes of one node (implemented beside the copies in
// copy.cu): the sender exports the allocation holding its buffer, the
// receiver maps it once and copies from it with the copy engines (copy.h).
// Results as in status.h. Stubs in copy_none.cc for builds without CUDA.
#ifndef MPIX_DEVICE_IPC_H
#define MPIX_DEVICE_IPC_H

#include <cstddef>

#include "status.h"

namespace mpix::device {

constexpr std::size_t kIpcHandleBytes = 64;  // sizeof(cudaIpcMemHandle_t)

// Handle of the allocation starting at base (its RANGE_START_ADDR).
Status ipc_export(void *base, unsigned char handle[kIpcHandleBytes]);
// Maps a peer's handle into this process (peer access enabled lazily);
// *ptr is the peer's base address as seen here.
Status ipc_open(const unsigned char handle[kIpcHandleBytes], int device, void **ptr);
Status ipc_close(void *ptr);

}  // namespace mpix::device

#endif
