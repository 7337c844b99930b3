#include <cuda_runtime.h>

#include "cuda_check.h"
#include "devcomm.h"

namespace mpix::device {

std::unique_ptr<DevComm> DevComm::create(const MPIX_Device_comm &h, Status *status) {
  int n = 0;
  if (!cuda_ok(cudaGetDeviceCount(&n)) || n == 0) {
    *status = Status::kNoGpu;
    return nullptr;
  }
  auto d = std::make_unique<DevComm>();
  d->h_ = h;
  *status = Status::kCudaError;
  if (!cuda_ok(cudaGetDevice(&d->device_))) return nullptr;
  if (!cuda_ok(cudaDeviceGetPCIBusId(d->gpu_id_, sizeof d->gpu_id_, d->device_))) return nullptr;
  const std::uint64_t bytes = mpixd_layout(&d->h_, 0);
  if (!cuda_ok(cudaMalloc(&d->mailbox_, bytes))) {
    d->mailbox_ = nullptr;
    return nullptr;
  }
  if (!cuda_ok(cudaMemset(d->mailbox_, 0, bytes))) return nullptr;
  if (!cuda_ok(cudaMalloc(&d->bases_dev_, sizeof(char *) * h.size))) {
    d->bases_dev_ = nullptr;
    return nullptr;
  }
  if (!cuda_ok(cudaDeviceSynchronize())) return nullptr;
  if (ipc_export(d->mailbox_, d->handle_) != Status::kOk) return nullptr;
  d->h_.local = static_cast<char *>(d->mailbox_);
  d->h_.bases = static_cast<char *const *>(d->bases_dev_);
  *status = Status::kOk;
  return d;
}

Status DevComm::connect(const unsigned char *handles) {
  std::vector<char *> bases(h_.size, nullptr);
  for (int r = 0; r < h_.size; ++r) {
    if (r == h_.rank) {
      bases[r] = static_cast<char *>(mailbox_);
      continue;
    }
    void *p = nullptr;
    if (const Status st = ipc_open(handles + static_cast<std::size_t>(r) * kIpcHandleBytes, device_, &p);
        st != Status::kOk)
      return st;
    mapped_.push_back(p);
    bases[r] = static_cast<char *>(p);
  }
  if (!cuda_ok(cudaMemcpy(bases_dev_, bases.data(), sizeof(char *) * h_.size, cudaMemcpyHostToDevice)))
    return Status::kCudaError;
  return Status::kOk;
}

bool DevComm::native_atomics_with(const char *peer_id) const {
  int peer = -1, v = 0;
  if (!cuda_ok(cudaDeviceGetByPCIBusId(&peer, peer_id)) || peer == device_) return false;
  return cuda_ok(cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrNativeAtomicSupported, device_, peer)) && v != 0;
}

void DevComm::close_peers() {
  for (void *p : mapped_) ipc_close(p);
  mapped_.clear();
}

DevComm::~DevComm() {
  // The mailbox lives on device_, which need not be current now (another
  // thread, or the application switched GPUs): synchronise and free there,
  // then restore the caller's device.
  int old = -1;
  if (!cuda_ok(cudaGetDevice(&old))) old = -1;
  const bool switched = old != device_ && cuda_ok(cudaSetDevice(device_));
  // Kernels using the handle must have ended: the communicator is being
  // freed, collectively.
  cudaDeviceSynchronize();
  close_peers();
  if (bases_dev_) cudaFree(bases_dev_);
  if (mailbox_) cudaFree(mailbox_);
  if (switched && old >= 0) cudaSetDevice(old);
  (void)cudaGetLastError();  // nothing sticky for the application
}

void *mapped_alloc(std::size_t bytes) {
  int n = 0;
  if (!cuda_ok(cudaGetDeviceCount(&n)) || n == 0) return nullptr;
  void *p = nullptr;
  if (!cuda_ok(cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable))) return nullptr;
  __builtin_memset(p, 0, bytes);
  void *d = nullptr;
  // The device calls use the pointer as is: unified addressing must map it
  // to the same address (true on every 64-bit platform CUDA supports).
  if (!cuda_ok(cudaHostGetDevicePointer(&d, p, 0)) || d != p) {
    cudaFreeHost(p);
    return nullptr;
  }
  return p;
}

void mapped_free(void *p) {
  if (p) cudaFreeHost(p);
}

void *device_alloc_zero(std::size_t bytes) {
  int n = 0;
  if (!cuda_ok(cudaGetDeviceCount(&n)) || n == 0) return nullptr;
  void *p = nullptr;
  if (!cuda_ok(cudaMalloc(&p, bytes))) return nullptr;
  if (!cuda_ok(cudaMemset(p, 0, bytes)) || !cuda_ok(cudaDeviceSynchronize())) {
    cudaFree(p);
    return nullptr;
  }
  return p;
}

void device_free(void *p) {
  if (p) cudaFree(p);
}

}  // namespace mpix::device
