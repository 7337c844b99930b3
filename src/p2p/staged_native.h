// Device buffers on communicators whose traffic the MPI library matches
// itself (not handled by mpix: MPI_COMM_WORLD under a plain LD_PRELOAD, any
// communicator without no-wildcard assertions). The MPI library underneath
// may not read GPU memory (MPICH from Debian crashes on it), so every
// point-to-point call that names a device buffer there is staged through
// host memory of its own and still handed to the MPI library, at the time
// of the call and in call order: matching, wildcards, ordering against
// host-buffer traffic on the same communicator, statuses and errors stay
// exactly the MPI library's.
//
// - sends: the data is packed to host memory (one copy from the GPU; a
//   non-contiguous type through an image of its extent) and sent as
//   MPI_PACKED, which matches a receive of any type;
// - receives: posted as MPI_PACKED into host memory of the receive's packed
//   size (so truncation is the MPI library's, exactly as without mpix), then
//   unpacked into the device buffer when they complete;
// - nonblocking and persistent calls return mpix requests (request.h) that
//   own the host memory and the MPI library's request; MPI_Start packs anew;
//   MPI_Cancel cancels the request underneath;
// - MPI_Sendrecv(_replace), MPI_Isendrecv(_replace), MPI_Mrecv, MPI_Imrecv
//   and the large-count calls likewise. Probes take no buffer and pass
//   through.
//
// Costs two host copies per message plus the MPI library's own: handled
// communicators (no-wildcard assertions, MPIX_INTERCEPT=all) use mpix's GPU
// paths (CUDA IPC, pipelined staging) instead. Without CUDA in the build a
// device buffer fails with MPIX_ERR_NO_CUDA through the communicator's error
// handler instead of reaching the MPI library.
#ifndef MPIX_SRC_P2P_STAGED_NATIVE_H
#define MPIX_SRC_P2P_STAGED_NATIVE_H

#include <mpi.h>

#include <cstdint>

#include "device/memtype.h"
#include "request.h"

namespace mpix::p2p {

// Whether (buf, count, dtype) of a call on such a communicator lies in
// device memory: one driver query (none with MPIX_GPU=off or no driver).
inline bool staged_buffer(const void *buf, MPI_Count count, MPI_Datatype dtype) {
  return buf != nullptr && count > 0 && dtype != MPI_DATATYPE_NULL && device::is_device(buf);
}

// The calls, as the MPI functions of the same names; each returns the MPI
// error code (errors of the MPI library were raised by it, mpix's own, a
// failed GPU copy or MPIX_ERR_NO_CUDA, through comm's error handler).
int staged_send(SendMode mode, const void *buf, MPI_Count count, MPI_Datatype dtype, int dest, int tag,
                MPI_Comm comm);
int staged_isend(SendMode mode, const void *buf, MPI_Count count, MPI_Datatype dtype, int dest, int tag,
                 MPI_Comm comm, bool persistent, MPI_Request *request);
int staged_recv(void *buf, MPI_Count count, MPI_Datatype dtype, int source, int tag, MPI_Comm comm,
                MPI_Status *status);
int staged_irecv(void *buf, MPI_Count count, MPI_Datatype dtype, int source, int tag, MPI_Comm comm,
                 bool persistent, MPI_Request *request);
int staged_sendrecv(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                    void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                    MPI_Status *status);
int staged_sendrecv_replace(void *buf, MPI_Count count, MPI_Datatype dtype, int dest, int sendtag, int source,
                            int recvtag, MPI_Comm comm, MPI_Status *status);
int staged_isendrecv(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                     void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag,
                     MPI_Comm comm, MPI_Request *request);
int staged_isendrecv_replace(void *buf, MPI_Count count, MPI_Datatype dtype, int dest, int sendtag, int source,
                             int recvtag, MPI_Comm comm, MPI_Request *request);
int staged_mrecv(void *buf, MPI_Count count, MPI_Datatype dtype, MPI_Message *message, MPI_Status *status);
int staged_imrecv(void *buf, MPI_Count count, MPI_Datatype dtype, MPI_Message *message, MPI_Request *request);

// For the completion calls (engine lock held): MPI_Start of a persistent
// staged request, MPI_Cancel of one, and the communicator whose error
// handler its errors go to.
int staged_start(Request *r);
void staged_cancel(Request *r);
MPI_Comm staged_comm(const Request *r);

// Operations staged so far (MPIX_VERBOSE, MPI_T).
std::uint64_t staged_operations();

}  // namespace mpix::p2p

#endif
