// GPU copies for the point-to-point data paths (IPC and staging), behind a
// host-only interface: copy.cu implements it with the CUDA runtime, and
// copy_none.cc answers "no CUDA" in builds without it.
//
// Every copy runs on a stream of mpix's own per device (non-blocking, so it
// never waits for the application's default-stream work, and the
// application's streams never wait for it). Functions return a Status
// (device/status.h): kOk, kCudaError (status_string() names the CUDA
// failure) or, in a build without CUDA, kNoCuda.
#ifndef MPIX_DEVICE_COPY_H
#define MPIX_DEVICE_COPY_H

#include <cstddef>

#include "status.h"

namespace mpix::device {

// A recorded point on a copy stream; pooled, never created per chunk.
using CopyEvent = void *;

// The device the calling thread works on (cudaGetDevice), 0 on failure.
int current_device();

// Copies n bytes (any direction, cudaMemcpyDefault) on device's copy stream
// and waits for them.
Status copy_sync(void *dst, const void *src, std::size_t n, int device);

// Starts the copy and records an event after it; *ev to be polled.
Status copy_async(void *dst, const void *src, std::size_t n, int device, CopyEvent *ev);
// kOk: done; kNotReady: still running; a failure: the copy failed. The
// event goes back to the pool unless kNotReady.
Status event_poll(CopyEvent ev);
// Gives back an event not polled to completion (after an error).
void event_drop(CopyEvent ev);

// Page-locked host memory for staging (cudaMallocHost), so that copies are
// true DMA overlapping the network; nullptr on failure.
void *pinned_alloc(std::size_t n);
void pinned_free(void *p);

// Releases streams and pooled events (MPI_Finalize).
void copy_finalize();

}  // namespace mpix::device

#endif
