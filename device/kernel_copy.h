// Small copies between host and device memory without a launch or a copy-
// engine job per copy: a resident kernel of one thread block per GPU reads
// copy descriptors from pinned host memory, copies, and raises a completion
// word in host memory that the caller spins on.
//
// Why: a host-issued cudaMemcpyAsync + synchronisation of 8 bytes costs
// 5-9 us on an H100/H200 (bench/RESULTS.md, "What one small host-driven GPU
// operation costs"); the eager path of a device-buffer message did two of
// them. The resident kernel picks a descriptor up in one PCIe read and
// signals in one posted write: 4.3-5.3 us a copy on H100/H200, the floor
// of any host-to-GPU-to-host signal there without GDRCopy.
//
// Descriptor protocol (pinned host memory, 64 bytes = one cache line):
// eight 64-bit words, each carrying the slot's lap tag in its top byte, so
// the kernel reads the whole descriptor in one round trip and takes it
// only when every word carries the tag it expects (a torn read of a line
// being written shows a mix of tags and is read again). Payloads up to
// 35 bytes ride in the descriptor, 7 bytes per word (kernel_copy_desc.h);
// larger host sources are copied into the slot's pinned staging first.
// The kernel handles descriptors in sequence order, reads the next 16 in
// one round trip, takes the complete ones in a row together, and writes the
// number of the last one done; the host may have up to 63 in flight
// (kernel_copy_post), and waits for one (kernel_copy) for copies whose
// result it must read out of the staging.
//
// The kernel exits after MPIX_GPU_KERNEL_COPY_IDLE_US without work (so an
// application's cudaDeviceSynchronize or cudaFree waits at most that long
// for it) and is launched again by the next copy. A copy whose kernel
// exited before taking it is found by querying the kernel's stream while
// waiting, and the kernel relaunched at that descriptor.
//
// Host-only interface: kernel_copy.cu implements it, kernel_copy_none.cc
// answers Status::kDeclined (callers fall back to copy_sync).
#ifndef MPIX_DEVICE_KERNEL_COPY_H
#define MPIX_DEVICE_KERNEL_COPY_H

#include <cstddef>
#include <cstdint>

#include "status.h"

namespace mpix::device {

struct KernelCopyConfig {
  bool enabled = false;        // MPIX_GPU_KERNEL_COPY
  std::size_t max_bytes = 0;   // MPIX_GPU_KERNEL_COPY_MAX: with a host side
  std::size_t device_max = 0;  // MPIX_GPU_KERNEL_COPY_DEVICE_MAX: device to device (peer memory)
  unsigned idle_us = 100;      // MPIX_GPU_KERNEL_COPY_IDLE_US
};

void kernel_copy_configure(const KernelCopyConfig &config);

// Copies n bytes on GPU `device` and waits for them. A side marked *_host
// is any host memory (pageable too: it goes through the slot's pinned
// staging); the other side is device memory of `device` or mapped into it.
// kOk, kCudaError (status_string()), or kDeclined where it cannot take the
// copy (off, too large, no GPU, or the kernel could not be started): use
// copy_sync instead.
Status kernel_copy(void *dst, bool dst_host, const void *src, bool src_host, std::size_t n, int device);

// Without waiting: a copy into device memory (of `device` or mapped into
// it) from device memory, or from host memory (src_host). The kernel takes
// the descriptors a caller posted in a row at once (one pickup, one signal
// for a window of messages), so a receiver with many messages arriving
// posts them all and tests later. kOk: *ticket names it (a 0-byte copy:
// nothing to wait for); kDeclined: not taken (as kernel_copy, or the ring
// is full): copy elsewhere.
struct KernelCopyTicket {
  void *ring = nullptr;  // the GPU's ring (lives until kernel_copy_finalize)
  std::uint64_t seq = 0;
};
Status kernel_copy_post(void *dst, const void *src, bool src_host, std::size_t n, int device, KernelCopyTicket *ticket);
// kOk: the posted copy is done (by the kernel, or by the copy engines had
// the kernel not started in time: never kDeclined once posted);
// kNotReady; kCudaError.
Status kernel_copy_test(const KernelCopyTicket &ticket);

struct KernelCopyStats {
  std::uint64_t copies = 0;    // copies done by the resident kernel
  std::uint64_t launches = 0;  // times it was (re)started
};
KernelCopyStats kernel_copy_stats();

// Loads the copy kernel into the current device's context now. Under
// CUDA's lazy loading (the default since 12.2) a kernel's first launch
// loads it, and loading may wait for the kernels already running: a launch
// behind an application kernel that spins until mpix moved its message
// (the device proxy path, a persistent kernel) waits forever, with the
// thread that would have moved it. So whatever lets the application start
// such kernels (MPIX_Comm_device_handle, MPIX_Stream_comm_create) loads it
// first. Once per device; nothing when kernel copies are off.
void kernel_copy_preload();

// Stops the kernels and frees their memory (MPI_Finalize).
void kernel_copy_finalize();

}  // namespace mpix::device

#endif
