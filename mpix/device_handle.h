// The memory behind an MPIX_Device_comm (IPC mailboxes, or the proxy queue)
// and its collective creation: MPIX_Comm_device_handle's, and stream
// communicators' private one (mpix/enqueue_kernel.cc).
#ifndef MPIX_MPIX_DEVICE_HANDLE_H
#define MPIX_MPIX_DEVICE_HANDLE_H

#include <mpi.h>

#include <memory>

#include "device/devcomm.h"
#include "device_proxy.h"
#include "mpix_device/proto.h"
#include "src/errors.h"

namespace mpix::devhandle {

// Destroyed collectively (MPI_Comm_free, or a failed creation that every
// rank agreed on): CUDA leaves it undefined when a process frees memory
// that another process still has mapped, and MPI_Comm_free does not
// synchronise, so every rank unmaps its peers' mailboxes, then a barrier on
// a private communicator (the one being freed can no longer be used inside
// its delete callback), then each frees its own. The proxy path does not
// need the barrier but takes the same path, so that CPU-only tests run it.
struct DeviceHandle {
  MPIX_Device_comm h{};
  MPI_Comm sync = MPI_COMM_NULL;
  std::unique_ptr<device::DevComm> ipc;
  std::unique_ptr<devproxy::ProxyQueue> proxy;
  DeviceHandle() = default;
  DeviceHandle(const DeviceHandle &) = delete;
  DeviceHandle &operator=(const DeviceHandle &) = delete;
  ~DeviceHandle() {
    if (ipc) ipc->close_peers();
    if (sync != MPI_COMM_NULL) {
      PMPI_Barrier(sync);
      PMPI_Comm_free(&sync);
    }
  }
};


// The sizes of a device communicator's mailboxes (see
// MPIX_Comm_device_handle(3)); every rank must use the same.
struct Layout {
  unsigned channels, ring, slot_bytes, table, keys, lane_tags, mid_ring, mid_max;
};
// What the MPIX_DEVICE_* settings ask for.
Layout layout_from_config();

// Creates comm's device communicator (collective over comm; every rank gets
// the same outcome). ipc_only: where the ranks are not all on this node or
// MPIX_DEVICE_PATH=proxy asks for the proxy, nothing is created and *out
// stays null. Returns Err::kCount on success, else the error of the worst
// rank.
Err create(MPI_Comm comm, bool ipc_only, const Layout &layout, std::unique_ptr<DeviceHandle> *out);

}  // namespace mpix::devhandle

#endif
