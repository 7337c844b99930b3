// MPIX_Comm_device_handle: the host side of device-callable send/recv
// (include/mpix_device.h). What a handle owns (IPC mailboxes, or the proxy
// queue) hangs on the communicator as an attribute, so MPI_Comm_free (or
// MPI_Finalize) releases it.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "device_handle.h"
#include "device/kernel_copy.h"
#include "mpix_device.h"
#include "src/errors.h"
#include "src/p2p/engine.h"
#include "src/runtime_state.h"

using namespace mpix;
using mpix::devhandle::DeviceHandle;

namespace {

int g_keyval = MPI_KEYVAL_INVALID;

int delete_devcomm(MPI_Comm, int, void *attr, void *) {
  std::unique_ptr<DeviceHandle> owned(static_cast<DeviceHandle *>(attr));
  return MPI_SUCCESS;
}

Err status_error(device::Status s) {
  switch (s) {
    case device::Status::kOk: return Err::kCount;
    case device::Status::kNoCuda: return Err::kDeviceBufferNoCuda;
    case device::Status::kNoGpu: return Err::kDeviceNoGpu;
    case device::Status::kCudaError:
    case device::Status::kNotReady:  // answers of copies, not made here
    case device::Status::kDeclined: break;
  }
  return Err::kDeviceSetup;
}

// Every rank's outcome: the worst one, so all ranks fail together.
int agree(MPI_Comm comm, Err mine) {
  int e = static_cast<int>(mine), worst = 0;
  if (e == static_cast<int>(Err::kCount)) e = -1;
  PMPI_Allreduce(&e, &worst, 1, MPI_INT, MPI_MAX, comm);
  return worst;
}

}  // namespace

namespace mpix::devhandle {

Layout layout_from_config() {
  const Config &cfg = runtime().config;
  return Layout{static_cast<unsigned>(cfg.device_channels), static_cast<unsigned>(cfg.device_ring),
                static_cast<unsigned>(cfg.device_slot_bytes), static_cast<unsigned>(cfg.device_table),
                static_cast<unsigned>(cfg.device_keys), static_cast<unsigned>(cfg.device_lane_tags),
                static_cast<unsigned>(cfg.device_mid_ring), static_cast<unsigned>(cfg.device_mid_max)};
}

Err create(MPI_Comm comm, bool ipc_only, const Layout &layout, std::unique_ptr<DeviceHandle> *out) {
  MPIX_Device_comm h{};
  PMPI_Comm_rank(comm, &h.rank);
  PMPI_Comm_size(comm, &h.size);
  // Agreed on: the layouts must be identical.
  const Config &cfg = runtime().config;
  unsigned sizes[8] = {layout.channels, layout.ring,      layout.slot_bytes, layout.table,
                       layout.keys,     layout.lane_tags, layout.mid_ring,   layout.mid_max};
  PMPI_Allreduce(MPI_IN_PLACE, sizes, 8, MPI_UNSIGNED, MPI_MAX, comm);
  h.channels = sizes[0];
  h.slots = sizes[1];
  h.slot_bytes = sizes[2];
  h.buckets = sizes[3];
  h.keys = sizes[4];
  h.lane_tags = sizes[5];
  // Medium messages: a message never needs more slots than its ring has.
  h.mid_max = std::min(sizes[7], sizes[6] * (MPIXD_MID_SLOT_BYTES / 2));
  h.mid_slots = h.mid_max > 0 ? sizes[6] : 0;
  int *tag_ub = nullptr;
  int has_ub = 0;
  PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &has_ub);
  h.tag_ub = has_ub && tag_ub ? *tag_ub : 32767;

  // The pure-GPU path needs every peer on this node (CUDA IPC); otherwise,
  // or when asked (MPIX_DEVICE_PATH=proxy), the proxy path.
  MPI_Comm node = MPI_COMM_NULL;
  PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0;
  PMPI_Comm_size(node, &node_size);
  PMPI_Comm_free(&node);
  int proxy = node_size != h.size || cfg.device_proxy;
  PMPI_Allreduce(MPI_IN_PLACE, &proxy, 1, MPI_INT, MPI_MAX, comm);
  if (proxy && ipc_only) return Err::kCount;

  if (proxy && runtime().thread_underlying != MPI_THREAD_MULTIPLE) return Err::kNoThreadMultiple;
  auto owner = std::make_unique<DeviceHandle>();
  // Split, not dup: no attributes or info of comm are carried over.
  PMPI_Comm_split(comm, 0, h.rank, &owner->sync);
  if (proxy) {
    h.path = MPIXD_PATH_PROXY;
    owner->proxy = devproxy::ProxyQueue::create(comm, &h, static_cast<std::uint32_t>(cfg.device_proxy_queue),
                                                static_cast<std::uint32_t>(cfg.device_proxy_inline),
                                                cfg.device_proxy_hostmem);
    const int worst = agree(comm, owner->proxy ? Err::kCount : Err::kDeviceSetup);
    if (worst >= 0) return static_cast<Err>(worst);
  } else {
    device::Status st = device::Status::kOk;
    owner->ipc = device::DevComm::create(h, &st);
    int worst = agree(comm, status_error(st));
    if (worst >= 0) return static_cast<Err>(worst);
    std::vector<unsigned char> all(static_cast<std::size_t>(h.size) * device::kIpcHandleBytes);
    PMPI_Allgather(owner->ipc->ipc_handle(), device::kIpcHandleBytes, MPI_BYTE, all.data(), device::kIpcHandleBytes,
                   MPI_BYTE, comm);
    st = owner->ipc->connect(all.data());
    worst = agree(comm, status_error(st));
    if (worst >= 0) return static_cast<Err>(worst);
    h = owner->ipc->handle();
    // Peers on this GPU synchronise at GPU scope, the others at system
    // scope (mpixd_near).
    constexpr int kId = static_cast<int>(device::DevComm::kGpuIdBytes);
    std::vector<char> ids(static_cast<std::size_t>(h.size) * kId);
    PMPI_Allgather(owner->ipc->gpu_id(), kId, MPI_CHAR, ids.data(), kId, MPI_CHAR, comm);
    for (int r = 0; r < h.size && r < 64; ++r) {
      const char *id = ids.data() + static_cast<std::size_t>(r) * kId;
      const std::uint64_t bit = std::uint64_t{1} << r;
      if (std::strncmp(id, owner->ipc->gpu_id(), kId) == 0) h.gpu_peers |= bit;
      // Tiny messages by 16-byte atomics to other GPUs only where asked
      // and the link has native atomics (the sender decides alone: the
      // receiver tells a cell from an entry by its key).
      if ((h.gpu_peers & bit) != 0 || (cfg.device_far_cells && owner->ipc->native_atomics_with(id)))
        h.cell_peers |= bit;
    }
  }
  owner->h = h;
  *out = std::move(owner);
  return Err::kCount;
}

}  // namespace mpix::devhandle

int MPIX_Comm_device_handle(MPI_Comm comm, MPIX_Device_comm *handle) {
  if (!runtime_active()) return raise_error(comm, Err::kNotInitialized, __func__);
  if (comm == MPI_COMM_NULL) return raise_error(comm, Err::kInvalidComm, __func__);
  if (handle == nullptr) return raise_error(comm, Err::kInvalidArg, __func__);
  auto c = p2p::p2p_find(comm);
  if (!c || !c->handled() || !c->hints().no_wildcards())
    return raise_error(comm, Err::kDeviceCommNotHandled, __func__);
  if (g_keyval == MPI_KEYVAL_INVALID)
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_devcomm, &g_keyval, nullptr);
  void *attr = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, g_keyval, &attr, &found);
  if (found) {  // one set of mailboxes per communicator
    *handle = static_cast<DeviceHandle *>(attr)->h;
    return MPI_SUCCESS;
  }
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) return raise_error(comm, Err::kInvalidComm, __func__);
  // The application's kernels that use the handle may spin until mpix moved
  // their messages: what mpix launches for them must be loaded before.
  device::kernel_copy_preload();
  std::unique_ptr<DeviceHandle> owner;
  const Err e = devhandle::create(comm, false, devhandle::layout_from_config(), &owner);
  if (e != Err::kCount) return raise_error(comm, e, __func__);
  *handle = owner->h;
  PMPI_Comm_set_attr(comm, g_keyval, owner.release());
  return MPI_SUCCESS;
}
