#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <vector>

#include "copy.h"
#include "cuda_check.h"
#include "device_scope.h"
#include "ipc.h"

namespace mpix::device {
namespace {

struct Event {
  cudaEvent_t event = nullptr;
  int device = 0;
};

// Streams and events per device, created on first use. The engine lock
// serialises the point-to-point layer, but a progress thread of the stream
// API may copy too: a mutex keeps the tables consistent (held only around
// table updates, never across a wait).
struct State {
  std::mutex mutex;
  std::vector<cudaStream_t> streams;
  std::vector<std::unique_ptr<Event>> all_events;
  std::vector<Event *> free_events;
};

State &state() {
  static State s;
  return s;
}

// The copy stream of device (current device made `device` by the caller).
cudaError_t stream_of(int device, cudaStream_t *out) {
  State &s = state();
  std::lock_guard<std::mutex> g(s.mutex);
  if (device < 0) return cudaErrorInvalidDevice;
  if (static_cast<std::size_t>(device) >= s.streams.size()) s.streams.resize(static_cast<std::size_t>(device) + 1);
  cudaStream_t &st = s.streams[static_cast<std::size_t>(device)];
  if (st == nullptr) {
    // Highest priority: a message copy is latency the application waits on,
    // its kernels can yield the copy engines for a moment.
    int lo = 0, hi = 0;
    cudaDeviceGetStreamPriorityRange(&lo, &hi);
    const cudaError_t e = cudaStreamCreateWithPriority(&st, cudaStreamNonBlocking, hi);
    if (!cuda_ok(e)) {
      st = nullptr;
      return e;
    }
  }
  *out = st;
  return cudaSuccess;
}

cudaError_t event_get(int device, Event **out) {
  State &s = state();
  std::lock_guard<std::mutex> g(s.mutex);
  for (std::size_t i = s.free_events.size(); i-- > 0;) {
    if (s.free_events[i]->device == device) {
      *out = s.free_events[i];
      s.free_events.erase(s.free_events.begin() + static_cast<std::ptrdiff_t>(i));
      return cudaSuccess;
    }
  }
  auto ev = std::make_unique<Event>();
  ev->device = device;
  MPIX_CUDA_TRY(cudaEventCreateWithFlags(&ev->event, cudaEventDisableTiming));
  *out = ev.get();
  s.all_events.push_back(std::move(ev));
  return cudaSuccess;
}

void event_put(Event *ev) {
  State &s = state();
  std::lock_guard<std::mutex> g(s.mutex);
  s.free_events.push_back(ev);
}

}  // namespace

int current_device() {
  int d = 0;
  return cuda_ok(cudaGetDevice(&d)) ? d : 0;
}

Status copy_sync(void *dst, const void *src, std::size_t n, int device) {
  if (n == 0) return Status::kOk;
  DeviceScope scope(device);
  cudaStream_t st = nullptr;
  cudaError_t e = stream_of(device, &st);
  if (e == cudaSuccess) e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, st);
  if (e == cudaSuccess) e = cudaStreamSynchronize(st);
  return cuda_status(e);
}

Status copy_async(void *dst, const void *src, std::size_t n, int device, CopyEvent *out) {
  DeviceScope scope(device);
  cudaStream_t st = nullptr;
  Event *ev = nullptr;
  cudaError_t e = stream_of(device, &st);
  if (e == cudaSuccess && n > 0) e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, st);
  if (e == cudaSuccess) e = event_get(device, &ev);
  if (e == cudaSuccess) e = cudaEventRecord(ev->event, st);
  if (!cuda_ok(e)) {
    if (ev != nullptr) event_put(ev);
    return Status::kCudaError;
  }
  *out = ev;
  return Status::kOk;
}

Status event_poll(CopyEvent handle) {
  auto *ev = static_cast<Event *>(handle);
  const cudaError_t e = cudaEventQuery(ev->event);
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return Status::kNotReady;
  }
  event_put(ev);
  return cuda_status(e);
}

void event_drop(CopyEvent handle) {
  auto *ev = static_cast<Event *>(handle);
  // The copy may still run: wait, so that the event is idle when reused.
  cudaEventSynchronize(ev->event);
  (void)cudaGetLastError();
  event_put(ev);
}

void *pinned_alloc(std::size_t n) {
  void *p = nullptr;
  // Portable: usable by every GPU's copy engines, whichever device is current.
  return cuda_ok(cudaHostAlloc(&p, n, cudaHostAllocPortable)) ? p : nullptr;
}

void pinned_free(void *p) {
  if (p != nullptr) cudaFreeHost(p);
}

void copy_finalize() {
  State &s = state();
  std::lock_guard<std::mutex> g(s.mutex);
  for (cudaStream_t &st : s.streams)
    if (st != nullptr) {
      cudaStreamSynchronize(st);
      cudaStreamDestroy(st);
      st = nullptr;
    }
  for (auto &ev : s.all_events) cudaEventDestroy(ev->event);
  s.all_events.clear();
  s.free_events.clear();
  (void)cudaGetLastError();
}

Status ipc_export(void *base, unsigned char handle[kIpcHandleBytes]) {
  static_assert(sizeof(cudaIpcMemHandle_t) == kIpcHandleBytes, "IPC handle size");
  cudaIpcMemHandle_t h;
  const cudaError_t e = cudaIpcGetMemHandle(&h, base);
  if (!cuda_ok(e)) return Status::kCudaError;
  __builtin_memcpy(handle, &h, kIpcHandleBytes);
  return Status::kOk;
}

Status ipc_open(const unsigned char handle[kIpcHandleBytes], int device, void **ptr) {
  DeviceScope scope(device);
  cudaIpcMemHandle_t h;
  __builtin_memcpy(&h, handle, kIpcHandleBytes);
  const cudaError_t e = cudaIpcOpenMemHandle(ptr, h, cudaIpcMemLazyEnablePeerAccess);
  return cuda_status(e);
}

Status ipc_close(void *ptr) {
  const cudaError_t e = cudaIpcCloseMemHandle(ptr);
  return cuda_status(e);
}

}  // namespace mpix::device
