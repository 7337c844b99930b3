// Stream triggers over CUDA stream memory operations. The driver functions
// come through cudart's cudaGetDriverEntryPointByVersion, so libmpix needs
// no -lcuda at link time (the driver is loaded by cudart anyway).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "cuda_check.h"

#include <cstdint>
#include <mutex>

#include "stream_trigger.h"

namespace mpix::device {
namespace {

struct DriverOps {
  PFN_cuStreamWriteValue32_v11070 write_value32 = nullptr;
  PFN_cuStreamWaitValue32_v11070 wait_value32 = nullptr;
  bool ok() const { return write_value32 != nullptr && wait_value32 != nullptr; }
};

const DriverOps &driver_ops() {
  static DriverOps ops;
  static std::once_flag once;
  std::call_once(once, [] {
    cudaDriverEntryPointQueryResult q;
    void *fn = nullptr;
    if (device::cuda_ok(cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, 12000, cudaEnableDefault, &q)) &&
        q == cudaDriverEntryPointSuccess)
      ops.write_value32 = reinterpret_cast<PFN_cuStreamWriteValue32_v11070>(fn);
    fn = nullptr;
    if (device::cuda_ok(cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &fn, 12000, cudaEnableDefault, &q)) &&
        q == cudaDriverEntryPointSuccess)
      ops.wait_value32 = reinterpret_cast<PFN_cuStreamWaitValue32_v11070>(fn);
  });
  return ops;
}

// The two words on separate cache lines: the GPU polls `done` while the host
// polls `trigger`, and neither should bounce the other's line.
struct alignas(64) Words {
  volatile std::uint32_t trigger;
  char pad[60];
  volatile std::uint32_t done;
};

}  // namespace

struct StreamTrigger::Impl {
  cudaStream_t stream = nullptr;
  int device = 0;
  Words *words = nullptr;      // host view (pinned, mapped)
  CUdeviceptr trigger_dev = 0;  // device views of the same words
  CUdeviceptr done_dev = 0;
  ~Impl() {
    if (words != nullptr) cudaFreeHost(words);
  }
};

StreamTrigger::StreamTrigger(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StreamTrigger::~StreamTrigger() = default;

std::unique_ptr<StreamTrigger> StreamTrigger::create(void *cuda_stream, Status *status) {
  int ngpu = 0;
  if (!device::cuda_ok(cudaGetDeviceCount(&ngpu)) || ngpu == 0 || !driver_ops().ok()) {
    *status = Status::kNoGpu;
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->stream = static_cast<cudaStream_t>(cuda_stream);
  if (!device::cuda_ok(cudaStreamGetDevice(impl->stream, &impl->device))) {
    if (!device::cuda_ok(cudaGetDevice(&impl->device))) {
      *status = Status::kCudaError;
      return nullptr;
    }
  }
  void *mem = nullptr;
  // Portable: the stream's device may differ from the current one.
  if (!device::cuda_ok(cudaHostAlloc(&mem, sizeof(Words), cudaHostAllocMapped | cudaHostAllocPortable))) {
    *status = Status::kCudaError;
    return nullptr;
  }
  impl->words = static_cast<Words *>(mem);
  impl->words->trigger = 0;
  impl->words->done = 0;
  void *dev = nullptr;
  if (!device::cuda_ok(cudaHostGetDevicePointer(&dev, mem, 0))) {
    *status = Status::kCudaError;
    return nullptr;
  }
  const auto base = reinterpret_cast<CUdeviceptr>(dev);
  impl->trigger_dev = base + offsetof(Words, trigger);
  impl->done_dev = base + offsetof(Words, done);
  *status = Status::kOk;
  return std::unique_ptr<StreamTrigger>(new StreamTrigger(std::move(impl)));  // NOLINT: private constructor
}

Status StreamTrigger::push(std::uint32_t seq, bool wait) {
  const DriverOps &ops = driver_ops();
  auto stream = reinterpret_cast<CUstream>(impl_->stream);
  // Default flags: the write waits for earlier work and fences its writes.
  if (ops.write_value32(stream, impl_->trigger_dev, seq, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS)
    return Status::kCudaError;
  if (wait && ops.wait_value32(stream, impl_->done_dev, seq, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS)
    return Status::kCudaError;
  return Status::kOk;
}

std::uint32_t StreamTrigger::triggered() const {
  return __atomic_load_n(&impl_->words->trigger, __ATOMIC_ACQUIRE);
}

void StreamTrigger::complete(std::uint32_t seq) {
  // Release: the received data (written by this thread or by copies it
  // waited for) is visible to the GPU before the stream moves on.
  __atomic_store_n(&impl_->words->done, seq, __ATOMIC_RELEASE);
}

void *StreamTrigger::cuda_stream() const { return impl_->stream; }

void StreamTrigger::make_current() const {
  int cur = -1;
  if (!device::cuda_ok(cudaGetDevice(&cur)) || cur != impl_->device) device::cuda_ok(cudaSetDevice(impl_->device));
}

}  // namespace mpix::device
