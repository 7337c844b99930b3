#include "memtype.h"

#include <dlfcn.h>

#include <atomic>

namespace mpix::device {
namespace {

DriverApi g_loaded{};
bool g_tried = false;

}  // namespace

// &g_loaded once libcuda resolved (memtype.h).
std::atomic<const DriverApi *> detail::g_api{nullptr};
using detail::g_api;

void memtype_init(bool enabled) {
  if (!enabled) {
    g_api.store(nullptr, std::memory_order_release);
    return;
  }
  if (!g_tried) {
    g_tried = true;
    // Loading the driver does not initialise it: until the application (or
    // mpix's own CUDA code) calls cuInit, every query answers "not
    // initialised" at once, which means no device memory can exist yet.
    // The handle is kept for the life of the process (the runtime holds it
    // too), so it is never dlclose'd.
    if (void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
      g_loaded.get_attribute = reinterpret_cast<decltype(g_loaded.get_attribute)>(dlsym(h, "cuPointerGetAttribute"));
      g_loaded.get_attributes =
          reinterpret_cast<decltype(g_loaded.get_attributes)>(dlsym(h, "cuPointerGetAttributes"));
    }
  }
  if (g_loaded.get_attribute != nullptr && g_loaded.get_attributes != nullptr)
    g_api.store(&g_loaded, std::memory_order_release);
}

void memtype_set_driver_for_testing(const DriverApi *api) { g_api.store(api, std::memory_order_release); }

namespace {

// Older drivers reject attributes they do not know, failing the whole
// cuPointerGetAttributes: ask the essentials one at a time. *ordinal is
// left as the caller set it when its own call fails.
bool essentials(const DriverApi *api, const void *p, unsigned long long *type, unsigned long long *managed,
                int *ordinal) {
  const auto ptr = reinterpret_cast<unsigned long long>(p);
  unsigned t = 0;
  if (api->get_attribute(&t, cu::kAttrMemoryType, ptr) != cu::kSuccess) return false;
  *type = t;
  api->get_attribute(managed, cu::kAttrIsManaged, ptr);
  api->get_attribute(ordinal, cu::kAttrDeviceOrdinal, ptr);
  return true;
}

}  // namespace

int detail::device_of_driver(const DriverApi *api, const void *p) {
  // cuPointerGetAttributes answers for plain host memory too (type 0), where
  // cuPointerGetAttribute fails with CUDA_ERROR_INVALID_VALUE, an error
  // compute-sanitizer reports on every host send. Managed memory reports
  // DEVICE and is told apart by the second attribute. "Not initialised"
  // ends it at once (here and in query): no device memory exists before
  // cuInit, and the one-attribute fallback would only fail again, a second
  // call per host send and receive in a process that never touched CUDA
  // where libcuda is installed.
  unsigned long long type = 0, managed = 0, ordinal = 0;
  int attrs[] = {cu::kAttrMemoryType, cu::kAttrIsManaged, cu::kAttrDeviceOrdinal};
  void *data[] = {&type, &managed, &ordinal};
  if (const int rc = api->get_attributes(3, attrs, data, reinterpret_cast<unsigned long long>(p)); rc != cu::kSuccess) {
    int o = 0;
    if (rc == cu::kNotInitialized || !essentials(api, p, &type, &managed, &o)) return -1;
    ordinal = static_cast<unsigned long long>(static_cast<unsigned>(o));
  }
  if (static_cast<unsigned>(type) != cu::kMemoryTypeDevice || managed != 0) return -1;
  return static_cast<int>(static_cast<unsigned>(ordinal));
}

PtrInfo query(const void *p) {
  PtrInfo info;
  const DriverApi *api = g_api.load(std::memory_order_acquire);
  if (api == nullptr || p == nullptr) return info;
  // Every slot is 8 zeroed bytes: the driver writes 1 (bool), 4 or 8 bytes
  // depending on the attribute, and on a little-endian host the low bytes
  // are what we read back.
  unsigned long long type = 0, id = 0, managed = 0, ordinal = 0, ipc = 0, start = 0, size = 0;
  int attrs[] = {cu::kAttrMemoryType,      cu::kAttrBufferId,        cu::kAttrIsManaged, cu::kAttrDeviceOrdinal,
                 cu::kAttrIsLegacyIpcCapable, cu::kAttrRangeStartAddr, cu::kAttrRangeSize};
  void *data[] = {&type, &id, &managed, &ordinal, &ipc, &start, &size};
  const unsigned n = sizeof attrs / sizeof attrs[0];
  if (const int rc = api->get_attributes(n, attrs, data, reinterpret_cast<unsigned long long>(p)); rc != cu::kSuccess) {
    int o = -1;
    if (rc == cu::kNotInitialized || !essentials(api, p, &type, &managed, &o)) return info;
    ordinal = static_cast<unsigned long long>(static_cast<unsigned>(o));
    ipc = 0;  // unknown: the staging path is always correct
  }
  if (static_cast<unsigned>(type) != cu::kMemoryTypeDevice) return info;
  if (static_cast<unsigned>(managed) != 0) {
    info.kind = MemKind::kManaged;
    return info;
  }
  info.kind = MemKind::kDevice;
  info.device = static_cast<int>(static_cast<unsigned>(ordinal));
  info.buffer_id = id;
  info.base = static_cast<std::uintptr_t>(start);
  info.size = static_cast<std::size_t>(size);
  // The sender exports a handle once per buffer id: no id, no IPC.
  info.ipc_capable = static_cast<unsigned>(ipc) != 0 && info.base != 0 && info.size != 0 && info.buffer_id != 0;
  return info;
}

}  // namespace mpix::device
