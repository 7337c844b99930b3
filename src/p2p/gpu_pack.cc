#include "gpu_pack.h"

#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>

#include "device/copy.h"
#include "device/gpu.h"
#include "device/kernel_copy.h"
#include "device/memtype.h"
#include "src/errors.h"

namespace mpix::p2p {
namespace {

// Memory a typed buffer touches: [lb, lb + bytes) relative to buf.
struct Extent {
  MPI_Aint lb = 0;
  std::size_t bytes = 0;
};

Extent extent_of(MPI_Datatype dtype, MPI_Count count) {
  MPI_Count true_lb = 0, true_extent = 0, lb = 0, extent = 0;
  PMPI_Type_get_true_extent_x(dtype, &true_lb, &true_extent);
  PMPI_Type_get_extent_x(dtype, &lb, &extent);
  Extent e;
  if (count <= 0) return e;
  MPI_Count first = true_lb, last = true_lb + true_extent;
  const MPI_Count shift = (count - 1) * extent;
  if (shift < 0) first += shift;
  else last += shift;
  e.lb = static_cast<MPI_Aint>(first);
  e.bytes = static_cast<std::size_t>(last - first);
  return e;
}

// MPI_Pack/MPI_Unpack take int counts: larger non-contiguous transfers are
// refused rather than cut short.
bool packable(MPI_Count count, std::size_t bytes) {
  return count <= INT_MAX && bytes <= static_cast<std::size_t>(INT_MAX);
}

// A copy between host memory and device memory of GPU dev, waited for:
// small ones by the resident copy kernel (no launch, no copy-engine job),
// the rest, or all where that kernel cannot run, by the copy engines.
device::Status copy_now(void *dst, bool dst_host, const void *src, bool src_host, std::size_t n, int dev) {
  const device::Status st = device::kernel_copy(dst, dst_host, src, src_host, n, dev);
  return st == device::Status::kDeclined ? device::copy_sync(dst, src, n, dev) : st;
}

// An MPI code for a copy's outcome.
int copy_result(device::Status st, const char *what) {
  return st == device::Status::kOk ? MPI_SUCCESS : cuda_error(st, what);
}

}  // namespace

device::Status copy_to_host(void *dst, const void *src, std::size_t n, int dev) {
  return copy_now(dst, true, src, false, n, dev);
}

int cuda_error(device::Status st, const char *what) {
  if (st == device::Status::kNoCuda) return error_code(Err::kDeviceBufferNoCuda);
  std::fprintf(stderr, "[mpix] GPU %s failed: %s\n", what, device::status_string(st));
  return MPI_ERR_OTHER;
}

int pack_device(const void *buf, MPI_Count count, MPI_Datatype dtype, const Layout &l, int dev, char *out,
                std::size_t bytes, MPI_Comm comm) {
  if (bytes == 0) return MPI_SUCCESS;
  if (l.contiguous) {
    return copy_result(copy_now(out, true, byte_at(buf, l.true_lb), false, bytes, dev), "copy to host");
  }
  if (!packable(count, bytes)) return MPI_ERR_COUNT;
  // A host image of the extent, packed by the MPI library as usual.
  const Extent e = extent_of(dtype, count);
  auto image = std::make_unique<char[]>(e.bytes);
  const int err = copy_result(copy_now(image.get(), true, byte_at(buf, e.lb), false, e.bytes, dev), "copy to host");
  if (err != MPI_SUCCESS) return err;
  return pack_bytes(byte_at(image.get(), -e.lb), static_cast<int>(count), dtype, out, static_cast<int>(bytes), comm);
}

int unpack_anywhere(const char *packed, std::size_t n, void *rbuf, MPI_Count count, MPI_Datatype dtype,
                    MPI_Comm comm) {
  if (n == 0) return MPI_SUCCESS;
  const Layout l = layout_of(dtype, count);
  const device::PtrInfo where = device::query(rbuf);  // one driver call, host or device
  const bool dev = where.kind == device::MemKind::kDevice;
  if (l.contiguous) {
    if (!dev) {
      std::memcpy(byte_at(rbuf, l.true_lb), packed, n);
      return MPI_SUCCESS;
    }
    if (!device::compiled_with_cuda()) return error_code(Err::kDeviceBufferNoCuda);
    return copy_result(copy_now(byte_at(rbuf, l.true_lb), false, packed, true, n, where.device), "copy to device");
  }
  if (!packable(count, n)) return MPI_ERR_COUNT;
  if (!dev) return unpack_bytes(packed, static_cast<int>(n), rbuf, count, dtype, comm);
  if (!device::compiled_with_cuda()) return error_code(Err::kDeviceBufferNoCuda);
  const int devno = where.device;
  // Read the extent back first: unpacking writes only the typed bytes, and
  // the gaps between them must keep what the device holds.
  const Extent e = extent_of(dtype, count);
  auto image = std::make_unique<char[]>(e.bytes);
  const int err = copy_result(copy_now(image.get(), true, byte_at(rbuf, e.lb), false, e.bytes, devno), "copy to host");
  if (err != MPI_SUCCESS) return err;
  const int rc = unpack_bytes(packed, static_cast<int>(n), byte_at(image.get(), -e.lb), count, dtype, comm);
  if (rc != MPI_SUCCESS) return rc;
  return copy_result(copy_now(byte_at(rbuf, e.lb), false, image.get(), true, e.bytes, devno), "copy to device");
}

}  // namespace mpix::p2p
