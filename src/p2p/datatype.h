// What the point-to-point layer needs to know about a datatype.
#ifndef MPIX_SRC_P2P_DATATYPE_H
#define MPIX_SRC_P2P_DATATYPE_H

#include <mpi.h>

namespace mpix::p2p {

struct Layout {
  MPI_Count bytes = 0;      // count elements, packed
  MPI_Count type_size = 0;  // one element, packed
  MPI_Aint true_lb = 0;     // where the data starts relative to buf
  bool contiguous = false;  // count elements are one block of `bytes` at buf + true_lb
};

inline Layout layout_of(MPI_Datatype type, MPI_Count count) {
  Layout l;
  PMPI_Type_size_x(type, &l.type_size);
  l.bytes = l.type_size * count;
  MPI_Count true_lb = 0, true_extent = 0, lb = 0, extent = 0;
  PMPI_Type_get_true_extent_x(type, &true_lb, &true_extent);
  PMPI_Type_get_extent_x(type, &lb, &extent);
  l.true_lb = static_cast<MPI_Aint>(true_lb);
  // One element is dense when its true extent is its size; count elements
  // stay dense when the stride (extent) adds no gap either.
  l.contiguous = true_extent == l.type_size && (count <= 1 || extent == l.type_size);
  return l;
}

// Predefined types need no reference; derived ones may be freed by the
// application while an operation on them is pending (MPI allows it).
inline bool is_derived(MPI_Datatype type) {
  int ni = 0, na = 0, nd = 0, combiner = MPI_COMBINER_NAMED;
  PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
  return combiner != MPI_COMBINER_NAMED;
}

}  // namespace mpix::p2p

#endif
