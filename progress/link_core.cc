#include "link_core.h"

#include <cstring>

#include "datatype.h"

namespace mpix::progress {

MPI_Status make_status(int error, std::size_t bytes) {
  MPI_Status st{};
  st.MPI_SOURCE = MPI_ANY_SOURCE;
  st.MPI_TAG = MPI_ANY_TAG;
  st.MPI_ERROR = error;
  PMPI_Status_set_elements_x(&st, MPI_BYTE, static_cast<MPI_Count>(bytes));
  return st;
}

std::vector<int> world_ranks(MPI_Comm comm) {
  int size = 0;
  PMPI_Comm_size(comm, &size);
  std::vector<int> ranks(static_cast<std::size_t>(size)), world(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) ranks[static_cast<std::size_t>(i)] = i;
  MPI_Group group = MPI_GROUP_NULL, world_group = MPI_GROUP_NULL;
  PMPI_Comm_group(comm, &group);
  PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
  PMPI_Group_translate_ranks(group, size, ranks.data(), world_group, world.data());
  PMPI_Group_free(&group);
  PMPI_Group_free(&world_group);
  return world;
}

int rendezvous_source(const void *buf, int count, MPI_Datatype dtype, bool copy, MPI_Comm comm, const void **src,
                      std::size_t *n, std::unique_ptr<char[]> *owned) {
  const Layout l = layout_of(dtype, count);
  *n = static_cast<std::size_t>(l.bytes);
  *src = static_cast<const char *>(buf) + l.true_lb;
  if (!copy && l.contiguous) return MPI_SUCCESS;
  *owned = std::make_unique<char[]>(*n);
  if (l.contiguous) {
    if (*n > 0) std::memcpy(owned->get(), *src, *n);
  } else {
    const int rc = pack_bytes(buf, count, dtype, owned->get(), static_cast<int>(*n), comm);
    if (rc != MPI_SUCCESS) return rc;
  }
  *src = owned->get();
  return MPI_SUCCESS;
}

}  // namespace mpix::progress
