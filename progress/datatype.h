// What the point-to-point layer and its transports need to know about a
// datatype.
#ifndef MPIX_PROGRESS_DATATYPE_H
#define MPIX_PROGRESS_DATATYPE_H

#include <mpi.h>

namespace mpix::progress {

struct Layout {
  MPI_Count bytes = 0;      // count elements, packed
  MPI_Count type_size = 0;  // one element, packed
  MPI_Aint true_lb = 0;     // where the data starts relative to buf
  bool contiguous = false;  // count elements are one block of `bytes` at buf + true_lb
};

// Whether one element of type is its predefined elements back to back in
// typemap order. A true extent equal to the size is not enough: a struct
// may list its blocks in another order than memory holds them.
inline bool dense_in_order(MPI_Datatype type) {
  int ni = 0, na = 0, nd = 0, combiner = MPI_COMBINER_NAMED;
  PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
  if (combiner == MPI_COMBINER_NAMED) return true;
  if ((combiner != MPI_COMBINER_CONTIGUOUS && combiner != MPI_COMBINER_DUP) || nd != 1 || ni > 1 || na != 0)
    return false;
  int ints[1] = {0};
  MPI_Aint addrs[1] = {0};
  MPI_Datatype inner = MPI_DATATYPE_NULL;
  PMPI_Type_get_contents(type, ni, na, nd, ints, addrs, &inner);
  const bool dense = dense_in_order(inner);
  int inner_combiner = MPI_COMBINER_NAMED;
  PMPI_Type_get_envelope(inner, &ni, &na, &nd, &inner_combiner);
  if (inner_combiner != MPI_COMBINER_NAMED) PMPI_Type_free(&inner);
  return dense;
}

// The predefined types most messages use, with their sizes: their layout
// needs no MPI call on the latency path (sizes are fixed by the C types).
inline int common_type_size(MPI_Datatype type) {
  struct Known {
    MPI_Datatype type;
    int size;
  };
  static const Known known[] = {
      {MPI_BYTE, 1},           {MPI_CHAR, 1},          {MPI_INT, sizeof(int)},
      {MPI_DOUBLE, sizeof(double)}, {MPI_FLOAT, sizeof(float)}, {MPI_LONG, sizeof(long)},
      {MPI_UNSIGNED, sizeof(unsigned)}, {MPI_LONG_LONG, sizeof(long long)},
      {MPI_UNSIGNED_CHAR, 1},  {MPI_UINT64_T, 8},      {MPI_INT64_T, 8},
  };
  for (const Known &k : known)
    if (k.type == type) return k.size;
  return -1;
}

// layout_of() of a type that is not one of the common ones (MPI calls).
Layout layout_of_other(MPI_Datatype type, MPI_Count count);

// Inline for the common types: a receive classifies its buffer with it, and
// the call itself cost as much as the rest of it.
inline Layout layout_of(MPI_Datatype type, MPI_Count count) {
  if (const int size = common_type_size(type); size > 0) {
    Layout l;
    l.type_size = size;
    l.bytes = size * count;
    l.contiguous = true;
    return l;
  }
  return layout_of_other(type, count);
}

// Predefined types need no reference; derived ones may be freed by the
// application while an operation on them is pending (MPI allows it).
inline bool is_derived(MPI_Datatype type) {
  if (common_type_size(type) > 0) return false;  // no MPI call on the latency path
  int ni = 0, na = 0, nd = 0, combiner = MPI_COMBINER_NAMED;
  PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
  return combiner != MPI_COMBINER_NAMED;
}

// MPI_Pack of count elements at buf (NULL: MPI_BOTTOM) into a packed byte
// buffer; MPI error code.
int pack_bytes(const void *buf, int count, MPI_Datatype dtype, void *out, int out_bytes, MPI_Comm comm);
// The received packed bytes at in into a receive of count elements at buf
// (NULL: MPI_BOTTOM): the elements they fill, and where they end inside an
// element (a message shorter than the receive's type), that element's
// leading bytes in type order; what lies past the message keeps its
// bytes. At most count elements (the caller truncates in_bytes first).
// MPI error code.
int unpack_bytes(const void *in, int in_bytes, void *buf, int count, MPI_Datatype dtype, MPI_Comm comm);

}  // namespace mpix::progress

#endif
