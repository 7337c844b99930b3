#include "datatype.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace mpix::progress {

namespace {

// MPICH 4.0.2's MPI_Pack/MPI_Unpack reject a NULL buffer even with a
// datatype of absolute addresses (MPI_BOTTOM), which MPI allows. The same
// data is then described as count elements at a displacement of -kAnchor
// from the non-NULL address kAnchor, which lands on the same bytes.
constexpr MPI_Aint kAnchor = 4096;

class BottomView {
 public:
  // count elements from byte `offset` past MPI_BOTTOM.
  BottomView(MPI_Datatype dtype, int count, MPI_Aint offset = 0) {
    int len = count;
    MPI_Aint disp = offset - kAnchor;
    if (PMPI_Type_create_hindexed(1, &len, &disp, dtype, &type_) == MPI_SUCCESS) PMPI_Type_commit(&type_);
  }
  ~BottomView() {
    if (type_ != MPI_DATATYPE_NULL) PMPI_Type_free(&type_);
  }
  BottomView(const BottomView &) = delete;
  BottomView &operator=(const BottomView &) = delete;
  MPI_Datatype type() const { return type_; }
  static void *base() { return reinterpret_cast<void *>(static_cast<std::uintptr_t>(kAnchor)); }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

// count whole elements of packed data at in into buf (NULL: MPI_BOTTOM),
// starting `offset` bytes past it.
int unpack_whole(const void *in, int in_bytes, void *buf, MPI_Aint offset, int count, MPI_Datatype dtype,
                 MPI_Comm comm) {
  int position = 0;
  if (buf != nullptr) return PMPI_Unpack(in, in_bytes, &position, static_cast<char *>(buf) + offset, count, dtype, comm);
  BottomView view(dtype, count, offset);
  if (view.type() == MPI_DATATYPE_NULL) return MPI_ERR_TYPE;
  return PMPI_Unpack(in, in_bytes, &position, BottomView::base(), 1, view.type(), comm);
}

int pack_whole(const void *buf, MPI_Aint offset, int count, MPI_Datatype dtype, void *out, int out_bytes,
               MPI_Comm comm) {
  int position = 0;
  if (buf != nullptr)
    return PMPI_Pack(static_cast<const char *>(buf) + offset, count, dtype, out, out_bytes, &position, comm);
  BottomView view(dtype, count, offset);
  if (view.type() == MPI_DATATYPE_NULL) return MPI_ERR_TYPE;
  return PMPI_Pack(BottomView::base(), 1, view.type(), out, out_bytes, &position, comm);
}
}  // namespace

int pack_bytes(const void *buf, int count, MPI_Datatype dtype, void *out, int out_bytes, MPI_Comm comm) {
  return pack_whole(buf, 0, count, dtype, out, out_bytes, comm);
}

int unpack_bytes(const void *in, int in_bytes, void *buf, int count, MPI_Datatype dtype, MPI_Comm comm) {
  MPI_Count size = 0;
  PMPI_Type_size_x(dtype, &size);
  if (in_bytes <= 0 || size <= 0 || count <= 0) return MPI_SUCCESS;
  const MPI_Count whole = std::min<MPI_Count>(count, in_bytes / size);
  if (whole > 0) {
    const int rc = unpack_whole(in, static_cast<int>(whole * size), buf, 0, static_cast<int>(whole), dtype, comm);
    if (rc != MPI_SUCCESS) return rc;
  }
  const MPI_Count rest = std::min<MPI_Count>(in_bytes, count * size) - whole * size;
  if (rest <= 0) return MPI_SUCCESS;
  // The message ends inside element `whole` (shorter than its receive's
  // type: MPI writes the locations it covers, in type order). MPI_Unpack
  // moves whole elements only, so that element's current bytes are packed,
  // the message's rest laid over their start, and the element unpacked
  // again: the locations past the message get back the bytes they held.
  // (Dropping the partial element instead left its bytes unwritten while
  // the status counted them.)
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(dtype, &lb, &extent);
  const MPI_Aint at = static_cast<MPI_Aint>(whole) * extent;
  std::vector<char> element(static_cast<std::size_t>(size));
  int rc = pack_whole(buf, at, 1, dtype, element.data(), static_cast<int>(size), comm);
  if (rc != MPI_SUCCESS) return rc;
  std::memcpy(element.data(), static_cast<const char *>(in) + whole * size, static_cast<std::size_t>(rest));
  return unpack_whole(element.data(), static_cast<int>(size), buf, at, 1, dtype, comm);
}

Layout layout_of_other(MPI_Datatype type, MPI_Count count) {
  Layout l;
  PMPI_Type_size_x(type, &l.type_size);
  l.bytes = l.type_size * count;
  MPI_Count true_lb = 0, true_extent = 0, lb = 0, extent = 0;
  PMPI_Type_get_true_extent_x(type, &true_lb, &true_extent);
  PMPI_Type_get_extent_x(type, &lb, &extent);
  l.true_lb = static_cast<MPI_Aint>(true_lb);
  // One element is dense when its true extent is its size; count elements
  // stay dense when the stride (extent) adds no gap either.
  l.contiguous =
      true_extent == l.type_size && (count <= 1 || extent == l.type_size) && dense_in_order(type);
  return l;
}

}  // namespace mpix::progress
