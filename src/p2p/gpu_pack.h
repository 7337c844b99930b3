// Moving typed buffers between device memory and host bytes: what every
// path that stages device data through the host needs (the GPU protocols
// of handled communicators, gpu_path.cc, and device buffers on
// communicators the MPI library matches, staged.cc).
//
// Contiguous data moves in one copy. A non-contiguous datatype on the
// device is handled through a host image of its extent: the sender copies
// the extent down and the MPI library packs it; the receiver reads the
// extent back first (so the gaps between elements keep what the device
// holds), unpacks into it and copies it up.
#ifndef MPIX_SRC_P2P_GPU_PACK_H
#define MPIX_SRC_P2P_GPU_PACK_H

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "datatype.h"
#include "device/status.h"

namespace mpix::p2p {

// buf + off, for offsets that may be negative (lower bounds).
inline char *byte_at(const void *buf, MPI_Aint off) {
  return reinterpret_cast<char *>(reinterpret_cast<std::intptr_t>(buf) + off);
}

// The MPI error code for a failed device call `what` (the boundary where
// device::Status becomes an MPI code): MPIX_ERR_NO_CUDA in a build without
// CUDA, else MPI_ERR_OTHER with the CUDA failure reported on stderr.
int cuda_error(device::Status st, const char *what);

// Packs the `bytes` packed bytes of (buf, count, dtype), which lie on GPU
// `dev`, into host memory `out` (l: layout_of(dtype, count)).
int pack_device(const void *buf, MPI_Count count, MPI_Datatype dtype, const Layout &l, int dev, char *out,
                std::size_t bytes, MPI_Comm comm);

// Copies n bytes of device memory of GPU dev into host memory (any), and
// waits: kOk or the failure.
device::Status copy_to_host(void *dst, const void *src, std::size_t n, int dev);

// Writes n packed bytes into (rbuf, count, dtype), host or device memory.
int unpack_anywhere(const char *packed, std::size_t n, void *rbuf, MPI_Count count, MPI_Datatype dtype,
                    MPI_Comm comm);

}  // namespace mpix::p2p

#endif
