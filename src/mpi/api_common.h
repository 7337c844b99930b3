// Shared by the intercepted point-to-point entry points (and the *_enqueue
// calls of mpix/): finding the communicator's state and validating
// arguments as MPI does. A request's common fields: init_request
// (src/p2p/request.h).
#ifndef MPIX_SRC_MPI_API_COMMON_H
#define MPIX_SRC_MPI_API_COMMON_H

#include <mpi.h>

#include <memory>

#include "src/comm_table.h"
#include "src/errors.h"
#include "src/p2p/datatype.h"
#include "src/p2p/engine.h"

namespace mpix::p2p {

// nullptr when comm passes straight through (the common case costs one load).
// No reference is taken: the communicator outlives the call (a request
// made by it takes one, init_request).
inline P2PComm *lookup(MPI_Comm comm) {
  if (CommTable::empty()) return nullptr;
  return p2p_find_raw(comm);
}
// With a reference: for a caller that takes comm out of the table.
inline std::shared_ptr<P2PComm> lookup_shared(MPI_Comm comm) {
  if (CommTable::empty()) return nullptr;
  return p2p_find(comm);
}

// Raises an MPI error class (or mpix Err) on comm and returns its code.
inline int raise_class(MPI_Comm comm, int cls) {
  call_errhandler(comm, cls);
  return cls;
}

int tag_ub();

// A NULL buffer is MPI_BOTTOM: legal with a derived datatype holding absolute
// addresses, and with an empty type; an error only for a predefined,
// non-empty type (as MPICH checks it).
inline bool null_buffer_allowed(MPI_Datatype dtype) {
  if (is_derived(dtype)) return true;
  MPI_Count size = 0;
  PMPI_Type_size_x(dtype, &size);
  return size == 0;
}

// MPI_SUCCESS or the class MPI would raise for these send arguments.
inline int check_send_shape(const P2PComm &c, const void *buf, int count, MPI_Datatype dtype, int dest, int tag) {
  if (count < 0) return MPI_ERR_COUNT;
  if (dtype == MPI_DATATYPE_NULL) return MPI_ERR_TYPE;
  if (buf == nullptr && count > 0 && !null_buffer_allowed(dtype)) return MPI_ERR_BUFFER;
  if (dest != MPI_PROC_NULL && (dest < 0 || dest >= c.size())) return MPI_ERR_RANK;
  if (tag < 0 || tag > tag_ub()) return MPI_ERR_TAG;
  return MPI_SUCCESS;
}

inline int check_recv_shape(const P2PComm &c, const void *buf, int count, MPI_Datatype dtype, int source, int tag) {
  if (count < 0) return MPI_ERR_COUNT;
  if (dtype == MPI_DATATYPE_NULL) return MPI_ERR_TYPE;
  if (buf == nullptr && count > 0 && !null_buffer_allowed(dtype)) return MPI_ERR_BUFFER;
  if (source != MPI_PROC_NULL && source != MPI_ANY_SOURCE && (source < 0 || source >= c.size())) return MPI_ERR_RANK;
  if (tag != MPI_ANY_TAG && (tag < 0 || tag > tag_ub())) return MPI_ERR_TAG;
  return MPI_SUCCESS;
}

// The checks of a host point-to-point call: the arguments, and that the
// communicator's traffic is not run by the GPU (an error code then).
inline int check_send_args(const P2PComm &c, const void *buf, int count, MPI_Datatype dtype, int dest, int tag) {
  if (c.gpu_run()) return error_code(Err::kStreamHostCall);
  return check_send_shape(c, buf, count, dtype, dest, tag);
}
inline int check_recv_args(const P2PComm &c, const void *buf, int count, MPI_Datatype dtype, int source, int tag) {
  if (c.gpu_run()) return error_code(Err::kStreamHostCall);
  return check_recv_shape(c, buf, count, dtype, source, tag);
}

// Raises the wildcard error for a receive/probe pattern, if any; else 0.
inline int check_pattern(MPI_Comm comm, const P2PComm &c, int source, int tag, const char *func) {
  Err why;
  return c.check_pattern(source, tag, &why) ? raise_error(comm, why, func) : MPI_SUCCESS;
}

}  // namespace mpix::p2p

#endif
