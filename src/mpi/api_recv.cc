// Intercepted receives: MPI_Recv/Irecv/Recv_init, MPI_Sendrecv(_replace).
#include <cstring>
#include <vector>

#include "api_common.h"
#include "src/p2p/datatype.h"
#include "src/p2p/gpu_pack.h"
#include "src/p2p/staged_native.h"
#include "src/visibility.h"

using namespace mpix;
using namespace mpix::p2p;

namespace {

int check_recv(MPI_Comm comm, const P2PComm &c, void *buf, int count, MPI_Datatype dtype, int source, int tag,
               const char *func) {
  if (int rc = check_pattern(comm, c, source, tag, func)) return rc;
  // Unhandled communicators (assertions recorded, traffic native) leave the
  // rest of the checking to the MPI underneath.
  if (!c.handled()) return MPI_SUCCESS;
  if (int cls = check_recv_args(c, buf, count, dtype, source, tag)) return raise_class(comm, cls);
  return MPI_SUCCESS;
}

// Communicators the MPI library matches: straight to it, device buffers
// staged (staged_native.h).
int pass_recv(void *buf, int count, MPI_Datatype dtype, int source, int tag, MPI_Comm comm, MPI_Status *status) {
  if (staged_buffer(buf, count, dtype)) return staged_recv(buf, count, dtype, source, tag, comm, status);
  return PMPI_Recv(buf, count, dtype, source, tag, comm, status);
}

int pass_irecv(void *buf, int count, MPI_Datatype dtype, int source, int tag, MPI_Comm comm, bool persistent,
               MPI_Request *request) {
  if (staged_buffer(buf, count, dtype))
    return staged_irecv(buf, count, dtype, source, tag, comm, persistent, request);
  if (persistent) return PMPI_Recv_init(buf, count, dtype, source, tag, comm, request);
  return PMPI_Irecv(buf, count, dtype, source, tag, comm, request);
}

int pass_sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status) {
  if (staged_buffer(sendbuf, sendcount, sendtype) || staged_buffer(recvbuf, recvcount, recvtype))
    return staged_sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                           recvtag, comm, status);
  return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                       comm, status);
}

int pass_sendrecv_replace(void *buf, int count, MPI_Datatype dtype, int dest, int sendtag, int source, int recvtag,
                          MPI_Comm comm, MPI_Status *status) {
  if (staged_buffer(buf, count, dtype))
    return staged_sendrecv_replace(buf, count, dtype, dest, sendtag, source, recvtag, comm, status);
  return PMPI_Sendrecv_replace(buf, count, dtype, dest, sendtag, source, recvtag, comm, status);
}

int make_recv_request(void *buf, int count, MPI_Datatype dtype, int source, int tag, MPI_Comm comm,
                      P2PComm *c, bool persistent, MPI_Request *request) {
  if (request == nullptr) return raise_class(comm, MPI_ERR_REQUEST);
  if (!persistent && source != MPI_PROC_NULL) {
    // A lane's receive: posted in its lane, no engine lock (lanes.h).
    if (Request *r = c->lane_irecv(buf, count, dtype, source, tag)) {
      *request = r->handle;
      return MPI_SUCCESS;
    }
  }
  auto lock = engine_lock();
  Request *r = request_create(ReqKind::kRecv);
  init_request(r, c, nullptr, buf, count, dtype, source, tag);
  r->persistent = persistent;
  *request = r->handle;
  if (persistent) return MPI_SUCCESS;
  r->active = true;
  if (source == MPI_PROC_NULL) {
    c->op_started();
    r->finish(MPI_PROC_NULL, MPI_ANY_TAG, MPI_SUCCESS, 0);
    return MPI_SUCCESS;
  }
  const int rc = c->start_recv(r);
  lock.unlock();
  return rc == MPI_SUCCESS ? rc : raise_class(comm, rc);
}

}  // namespace

MPIX_INTERCEPT int MPI_Recv(void *buf, int count, MPI_Datatype dtype, int source, int tag, MPI_Comm comm,
                            MPI_Status *status) {
  auto c = lookup(comm);
  if (!c) return pass_recv(buf, count, dtype, source, tag, comm, status);
  if (int rc = check_recv(comm, *c, buf, count, dtype, source, tag, "MPI_Recv")) return rc;
  if (!c->handled()) return pass_recv(buf, count, dtype, source, tag, comm, status);
  if (source == MPI_PROC_NULL) {
    status_fill(status, MPI_PROC_NULL, MPI_ANY_TAG, -1, 0, false);
    return MPI_SUCCESS;
  }
  if (Request *r = c->lane_irecv(buf, count, dtype, source, tag)) {
    c->lane_wait(r);
    r->write_status(status);
    const int rc = r->st_error;
    lane_request_recycle(r);
    return rc == MPI_SUCCESS ? rc : raise_class(comm, rc);
  }
  auto lock = engine_lock();
  const int rc = c->recv(buf, count, dtype, source, tag, status, lock);
  lock.unlock();
  return rc == MPI_SUCCESS ? rc : raise_class(comm, rc);
}

MPIX_INTERCEPT int MPI_Irecv(void *buf, int count, MPI_Datatype dtype, int source, int tag, MPI_Comm comm,
                             MPI_Request *request) {
  auto c = lookup(comm);
  if (!c) return pass_irecv(buf, count, dtype, source, tag, comm, false, request);
  if (int rc = check_recv(comm, *c, buf, count, dtype, source, tag, "MPI_Irecv")) return rc;
  if (!c->handled()) return pass_irecv(buf, count, dtype, source, tag, comm, false, request);
  return make_recv_request(buf, count, dtype, source, tag, comm, c, false, request);
}

MPIX_INTERCEPT int MPI_Recv_init(void *buf, int count, MPI_Datatype dtype, int source, int tag, MPI_Comm comm,
                                 MPI_Request *request) {
  auto c = lookup(comm);
  if (!c) return pass_irecv(buf, count, dtype, source, tag, comm, true, request);
  if (int rc = check_recv(comm, *c, buf, count, dtype, source, tag, "MPI_Recv_init")) return rc;
  if (!c->handled()) return pass_irecv(buf, count, dtype, source, tag, comm, true, request);
  return make_recv_request(buf, count, dtype, source, tag, comm, c, true, request);
}

MPIX_INTERCEPT int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                                void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                                MPI_Comm comm, MPI_Status *status) {
  auto c = lookup(comm);
  if (!c)
    return pass_sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                         recvtag, comm, status);
  if (int rc = check_recv(comm, *c, recvbuf, recvcount, recvtype, source, recvtag, "MPI_Sendrecv")) return rc;
  if (!c->handled())
    return pass_sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                         recvtag, comm, status);
  if (int cls = check_send_args(*c, sendbuf, sendcount, sendtype, dest, sendtag)) return raise_class(comm, cls);
  auto lock = engine_lock();
  // The receive is posted first so that a peer doing the same never waits
  // on us; the blocking send progresses it.
  Request r;
  r.kind = ReqKind::kRecv;
  r.comm.borrow(c);  // the call holds comm
  r.rbuf = recvbuf;
  r.count = recvcount;
  r.dtype = recvtype;
  r.peer = source;
  r.tag = recvtag;
  int rc = MPI_SUCCESS;
  const bool receiving = source != MPI_PROC_NULL;
  if (receiving) rc = c->start_recv(&r);
  else r.complete = true, r.st_source = MPI_PROC_NULL;
  const bool started = receiving && rc == MPI_SUCCESS;
  if (rc == MPI_SUCCESS && dest != MPI_PROC_NULL)
    rc = c->send(sendbuf, sendcount, sendtype, dest, sendtag, SendMode::kStandard, lock);
  // The receive must be over before r leaves the stack, also after a
  // failed send.
  if (rc != MPI_SUCCESS && r.queued) c->cancel(&r);
  if (started)
    while (!r.complete || r.inner_busy) progress_wait(lock);
  r.write_status(status);
  lock.unlock();
  if (rc == MPI_SUCCESS) rc = r.st_error;
  return rc == MPI_SUCCESS ? rc : raise_class(comm, rc);
}

MPIX_INTERCEPT int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dtype, int dest, int sendtag,
                                        int source, int recvtag, MPI_Comm comm, MPI_Status *status) {
  auto c = lookup(comm);
  if (!c) return pass_sendrecv_replace(buf, count, dtype, dest, sendtag, source, recvtag, comm, status);
  if (int rc = check_recv(comm, *c, buf, count, dtype, source, recvtag, "MPI_Sendrecv_replace")) return rc;
  if (!c->handled()) return pass_sendrecv_replace(buf, count, dtype, dest, sendtag, source, recvtag, comm, status);
  if (int cls = check_send_args(*c, buf, count, dtype, dest, sendtag)) return raise_class(comm, cls);
  // Receive into packed scratch (any send type may be received as
  // MPI_PACKED), send from buf, then unpack over buf.
  int packed = 0;
  PMPI_Pack_size(count, dtype, comm, &packed);
  std::vector<char> scratch(static_cast<std::size_t>(packed) + 1);
  MPI_Status st;
  int rc = MPI_Sendrecv(buf, count, dtype, dest, sendtag, scratch.data(), packed, MPI_PACKED, source, recvtag, comm,
                        &st);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Count bytes = 0;
  PMPI_Get_elements_x(&st, MPI_BYTE, &bytes);
  if (source != MPI_PROC_NULL && bytes > 0) {
    // buf may be device memory (the send above read it through the GPU path).
    const int unpacked = unpack_anywhere(scratch.data(), static_cast<std::size_t>(bytes), buf, count, dtype, comm);
    if (unpacked != MPI_SUCCESS) return raise_class(comm, unpacked);
  }
  if (status != MPI_STATUS_IGNORE) *status = st;
  return MPI_SUCCESS;
}
