// The GPU memory behind an MPIX_Device_comm (include/mpix_device.h): this
// rank's mailbox (allocated, zeroed, exported by CUDA IPC) and the peers'
// mailboxes mapped into this process. Free of MPI: mpix/device_handle.cc
// exchanges the IPC handles. Stub in devcomm_none.cc without CUDA.
#ifndef MPIX_DEVICE_DEVCOMM_H
#define MPIX_DEVICE_DEVCOMM_H


#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ipc.h"
#include "mpix_device/proto.h"
#include "status.h"

namespace mpix::device {


class DevComm {
 public:
  // Allocates the mailbox on the current GPU for `h` (channels, slots,
  // slot_bytes, posted, rank, size, tag_ub set); fills the layout.
  static std::unique_ptr<DevComm> create(const MPIX_Device_comm &h, Status *status);
  DevComm() = default;  // empty; create() makes usable ones
  ~DevComm();
  DevComm(const DevComm &) = delete;
  DevComm &operator=(const DevComm &) = delete;

  // This mailbox's IPC handle (kIpcHandleBytes).
  const unsigned char *ipc_handle() const { return handle_; }
  // This mailbox's GPU as a PCI bus id (kGpuIdBytes, NUL-terminated): ranks
  // with equal ids share one GPU, so they synchronise at GPU scope.
  static constexpr std::size_t kGpuIdBytes = 32;
  const char *gpu_id() const { return gpu_id_; }
  // Whether this GPU's link to the GPU with PCI bus id `peer_id` carries
  // native atomics (false when that GPU is not visible to this process).
  bool native_atomics_with(const char *peer_id) const;
  // Maps every peer's mailbox (handles: size * kIpcHandleBytes, by rank).
  Status connect(const unsigned char *handles);
  const MPIX_Device_comm &handle() const { return h_; }
  // Unmaps the peers' mailboxes (idempotent; also done by the destructor).
  // CUDA leaves it undefined when an exporter frees memory a peer still has
  // mapped, so every rank closes its mappings before any rank frees its
  // mailbox: mpix/device_handle.cc calls this, then a barrier, then destroys.
  void close_peers();

 private:
  MPIX_Device_comm h_{};
  int device_ = 0;
  void *mailbox_ = nullptr;
  void *bases_dev_ = nullptr;
  std::vector<void *> mapped_;  // peers' mailboxes opened here
  unsigned char handle_[kIpcHandleBytes] = {};
  char gpu_id_[kGpuIdBytes] = {};
};

// Host memory the GPU reads and writes directly (pinned, mapped; with
// unified addressing its device address is its host address), and zeroed
// device memory. nullptr without CUDA or a GPU.
void *mapped_alloc(std::size_t bytes);
void mapped_free(void *p);
void *device_alloc_zero(std::size_t bytes);
void device_free(void *p);

}  // namespace mpix::device

#endif
