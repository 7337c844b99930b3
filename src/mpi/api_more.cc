// MPI-4 additions on handled communicators: MPI_Isendrecv(_replace) and the
// large-count (_c) variants of point-to-point calls. Counts that fit an int
// take the int path; larger ones are MPI_ERR_COUNT on handled
// communicators (the engine's transfers are int-counted).
//
// Each group exists only where the MPI library has it (configure's
// MPIX_HAVE_MPI_* checks, not MPI_VERSION: Open MPI 5 has MPI_Isendrecv
// while it says MPI 3.1, and a wrapper left out would let such calls reach
// the library on a communicator whose traffic mpix carries).
#include <climits>
#include <memory>

#include "api_common.h"
#include "src/p2p/datatype.h"
#include "src/p2p/gpu_pack.h"
#include "src/p2p/staged_native.h"
#include "src/visibility.h"

using namespace mpix;
using namespace mpix::p2p;

#ifdef MPIX_HAVE_MPI_ISENDRECV

namespace {

// Starts a receive and a send as one request (the receive's handle, the send
// its companion), as MPI_Isendrecv does; the send half owns scratch, if any.
int start_pair(MPI_Comm comm, P2PComm *c, const void *sendbuf, int sendcount,
               MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
               int source, int recvtag, std::unique_ptr<char[]> scratch, MPI_Request *request) {
  auto lock = engine_lock();
  Request *r = request_create(ReqKind::kRecv);
  init_request(r, c, nullptr, recvbuf, recvcount, recvtype, source, recvtag);
  Request *s = request_create(ReqKind::kSend);
  init_request(s, c, sendbuf, nullptr, sendcount, sendtype, dest, sendtag);
  s->scratch = std::move(scratch);
  r->companion = s;
  r->active = s->active = true;
  *request = r->handle;
  int rc = MPI_SUCCESS;
  if (source == MPI_PROC_NULL) {
    c->op_started();
    r->finish(MPI_PROC_NULL, MPI_ANY_TAG, MPI_SUCCESS, 0);
  } else {
    rc = c->start_recv(r);
  }
  if (dest == MPI_PROC_NULL) {
    c->op_started();
    s->finish(MPI_PROC_NULL, MPI_ANY_TAG, MPI_SUCCESS, 0);
  } else if (rc == MPI_SUCCESS) {
    rc = c->start_send(s);
  }
  lock.unlock();
  return rc == MPI_SUCCESS ? rc : raise_class(comm, rc);
}

}  // namespace

MPIX_INTERCEPT int MPI_Isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                                 MPI_Comm comm, MPI_Request *request) {
  auto c = lookup(comm);
  if (c)
    if (int rc = check_pattern(comm, *c, source, recvtag, "MPI_Isendrecv")) return rc;
  if (!c || !c->handled()) {
    if (staged_buffer(sendbuf, sendcount, sendtype) || staged_buffer(recvbuf, recvcount, recvtype))
      return staged_isendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                              recvtag, comm, request);
    return PMPI_Isendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                          recvtag, comm, request);
  }
  if (int cls = check_recv_args(*c, recvbuf, recvcount, recvtype, source, recvtag)) return raise_class(comm, cls);
  if (int cls = check_send_args(*c, sendbuf, sendcount, sendtype, dest, sendtag)) return raise_class(comm, cls);
  return start_pair(comm, c, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                    recvtag, nullptr, request);
}

MPIX_INTERCEPT int MPI_Isendrecv_replace(void *buf, int count, MPI_Datatype dtype, int dest, int sendtag,
                                         int source, int recvtag, MPI_Comm comm, MPI_Request *request) {
  auto c = lookup(comm);
  if (c)
    if (int rc = check_pattern(comm, *c, source, recvtag, "MPI_Isendrecv_replace")) return rc;
  if (!c || !c->handled()) {
    if (staged_buffer(buf, count, dtype))
      return staged_isendrecv_replace(buf, count, dtype, dest, sendtag, source, recvtag, comm, request);
    return PMPI_Isendrecv_replace(buf, count, dtype, dest, sendtag, source, recvtag, comm, request);
  }
  if (int cls = check_recv_args(*c, buf, count, dtype, source, recvtag)) return raise_class(comm, cls);
  if (int cls = check_send_args(*c, buf, count, dtype, dest, sendtag)) return raise_class(comm, cls);
  // The send half sends a packed copy, so the receive half may land in buf
  // at once: both proceed without blocking, as MPI_Isendrecv's do.
  int packed_size = 0;
  if (dest != MPI_PROC_NULL) PMPI_Pack_size(count, dtype, comm, &packed_size);
  auto scratch = std::make_unique<char[]>(static_cast<std::size_t>(packed_size) + 1);
  if (dest != MPI_PROC_NULL && packed_size > 0) {
    // From the device through host memory where buf lives there.
    const Layout l = layout_of(dtype, count);
    const int packed = staged_buffer(buf, count, dtype)
                           ? pack_device(buf, count, dtype, l, device::query(buf).device, scratch.get(),
                                         static_cast<std::size_t>(l.bytes), comm)
                           : pack_bytes(buf, count, dtype, scratch.get(), packed_size, comm);
    if (packed != MPI_SUCCESS) return raise_class(comm, packed);
    packed_size = static_cast<int>(l.bytes);
  }
  char *packed = scratch.get();
  return start_pair(comm, c, packed, packed_size, MPI_PACKED, dest, sendtag, buf, count, dtype, source, recvtag,
                    std::move(scratch), request);
}

#endif  // MPIX_HAVE_MPI_ISENDRECV

#ifdef MPIX_HAVE_MPI_LARGE_COUNT

namespace {

bool fits(MPI_Count n) { return n >= 0 && n <= INT_MAX; }

}  // namespace

// Large-count variants: handled communicators only take the int path.
#define MPIX_LARGE_SEND(NAME, SMALL, MODE)                                                               \
  MPIX_INTERCEPT int NAME(const void *buf, MPI_Count count, MPI_Datatype dtype, int dest, int tag,      \
                          MPI_Comm comm) {                                                             \
    auto c = lookup(comm);                                                                             \
    if (!c || !c->handled()) {                                                                         \
      if (staged_buffer(buf, count, dtype)) return staged_send(MODE, buf, count, dtype, dest, tag, comm); \
      return P##NAME(buf, count, dtype, dest, tag, comm);                                              \
    }                                                                                                  \
    if (!fits(count)) return raise_class(comm, MPI_ERR_COUNT);                                         \
    return SMALL(buf, static_cast<int>(count), dtype, dest, tag, comm);                                \
  }
#define MPIX_LARGE_ISEND(NAME, SMALL, MODE, PERSISTENT)                                                  \
  MPIX_INTERCEPT int NAME(const void *buf, MPI_Count count, MPI_Datatype dtype, int dest, int tag,      \
                          MPI_Comm comm, MPI_Request *request) {                                       \
    auto c = lookup(comm);                                                                             \
    if (!c || !c->handled()) {                                                                         \
      if (staged_buffer(buf, count, dtype))                                                            \
        return staged_isend(MODE, buf, count, dtype, dest, tag, comm, PERSISTENT, request);            \
      return P##NAME(buf, count, dtype, dest, tag, comm, request);                                     \
    }                                                                                                  \
    if (!fits(count)) return raise_class(comm, MPI_ERR_COUNT);                                         \
    return SMALL(buf, static_cast<int>(count), dtype, dest, tag, comm, request);                       \
  }

MPIX_LARGE_SEND(MPI_Send_c, MPI_Send, SendMode::kStandard)
MPIX_LARGE_SEND(MPI_Ssend_c, MPI_Ssend, SendMode::kSync)
MPIX_LARGE_SEND(MPI_Bsend_c, MPI_Bsend, SendMode::kBuffered)
MPIX_LARGE_SEND(MPI_Rsend_c, MPI_Rsend, SendMode::kReady)
MPIX_LARGE_ISEND(MPI_Isend_c, MPI_Isend, SendMode::kStandard, false)
MPIX_LARGE_ISEND(MPI_Issend_c, MPI_Issend, SendMode::kSync, false)
MPIX_LARGE_ISEND(MPI_Ibsend_c, MPI_Ibsend, SendMode::kBuffered, false)
MPIX_LARGE_ISEND(MPI_Irsend_c, MPI_Irsend, SendMode::kReady, false)
MPIX_LARGE_ISEND(MPI_Send_init_c, MPI_Send_init, SendMode::kStandard, true)
MPIX_LARGE_ISEND(MPI_Ssend_init_c, MPI_Ssend_init, SendMode::kSync, true)
MPIX_LARGE_ISEND(MPI_Bsend_init_c, MPI_Bsend_init, SendMode::kBuffered, true)
MPIX_LARGE_ISEND(MPI_Rsend_init_c, MPI_Rsend_init, SendMode::kReady, true)

MPIX_INTERCEPT int MPI_Recv_c(void *buf, MPI_Count count, MPI_Datatype dtype, int source, int tag, MPI_Comm comm,
                              MPI_Status *status) {
  auto c = lookup(comm);
  if (!c || !c->handled()) {
    if (staged_buffer(buf, count, dtype)) return staged_recv(buf, count, dtype, source, tag, comm, status);
    return PMPI_Recv_c(buf, count, dtype, source, tag, comm, status);
  }
  if (!fits(count)) return raise_class(comm, MPI_ERR_COUNT);
  return MPI_Recv(buf, static_cast<int>(count), dtype, source, tag, comm, status);
}

MPIX_INTERCEPT int MPI_Irecv_c(void *buf, MPI_Count count, MPI_Datatype dtype, int source, int tag, MPI_Comm comm,
                               MPI_Request *request) {
  auto c = lookup(comm);
  if (!c || !c->handled()) {
    if (staged_buffer(buf, count, dtype)) return staged_irecv(buf, count, dtype, source, tag, comm, false, request);
    return PMPI_Irecv_c(buf, count, dtype, source, tag, comm, request);
  }
  if (!fits(count)) return raise_class(comm, MPI_ERR_COUNT);
  return MPI_Irecv(buf, static_cast<int>(count), dtype, source, tag, comm, request);
}

MPIX_INTERCEPT int MPI_Recv_init_c(void *buf, MPI_Count count, MPI_Datatype dtype, int source, int tag,
                                   MPI_Comm comm, MPI_Request *request) {
  auto c = lookup(comm);
  if (!c || !c->handled()) {
    if (staged_buffer(buf, count, dtype)) return staged_irecv(buf, count, dtype, source, tag, comm, true, request);
    return PMPI_Recv_init_c(buf, count, dtype, source, tag, comm, request);
  }
  if (!fits(count)) return raise_class(comm, MPI_ERR_COUNT);
  return MPI_Recv_init(buf, static_cast<int>(count), dtype, source, tag, comm, request);
}

MPIX_INTERCEPT int MPI_Sendrecv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                                  int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                  int source, int recvtag, MPI_Comm comm, MPI_Status *status) {
  auto c = lookup(comm);
  if (!c || !c->handled()) {
    if (staged_buffer(sendbuf, sendcount, sendtype) || staged_buffer(recvbuf, recvcount, recvtype))
      return staged_sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                             recvtag, comm, status);
    return PMPI_Sendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                           recvtag, comm, status);
  }
  if (!fits(sendcount) || !fits(recvcount)) return raise_class(comm, MPI_ERR_COUNT);
  return MPI_Sendrecv(sendbuf, static_cast<int>(sendcount), sendtype, dest, sendtag, recvbuf,
                      static_cast<int>(recvcount), recvtype, source, recvtag, comm, status);
}

MPIX_INTERCEPT int MPI_Sendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype dtype, int dest, int sendtag,
                                          int source, int recvtag, MPI_Comm comm, MPI_Status *status) {
  auto c = lookup(comm);
  if (!c || !c->handled()) {
    if (staged_buffer(buf, count, dtype))
      return staged_sendrecv_replace(buf, count, dtype, dest, sendtag, source, recvtag, comm, status);
    return PMPI_Sendrecv_replace_c(buf, count, dtype, dest, sendtag, source, recvtag, comm, status);
  }
  if (!fits(count)) return raise_class(comm, MPI_ERR_COUNT);
  return MPI_Sendrecv_replace(buf, static_cast<int>(count), dtype, dest, sendtag, source, recvtag, comm, status);
}

// Both MPI-4 groups: a library could have the _c calls without
// MPI_Isendrecv only in theory, but then the wrappers below have nothing to
// hand a fitting count to.
#ifdef MPIX_HAVE_MPI_ISENDRECV
MPIX_INTERCEPT int MPI_Isendrecv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                                   int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                   int source, int recvtag, MPI_Comm comm, MPI_Request *request) {
  auto c = lookup(comm);
  if (!c || !c->handled()) {
    if (staged_buffer(sendbuf, sendcount, sendtype) || staged_buffer(recvbuf, recvcount, recvtype))
      return staged_isendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                              recvtag, comm, request);
    return PMPI_Isendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                            recvtag, comm, request);
  }
  if (!fits(sendcount) || !fits(recvcount)) return raise_class(comm, MPI_ERR_COUNT);
  return MPI_Isendrecv(sendbuf, static_cast<int>(sendcount), sendtype, dest, sendtag, recvbuf,
                       static_cast<int>(recvcount), recvtype, source, recvtag, comm, request);
}

MPIX_INTERCEPT int MPI_Isendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype dtype, int dest, int sendtag,
                                           int source, int recvtag, MPI_Comm comm, MPI_Request *request) {
  auto c = lookup(comm);
  if (!c || !c->handled()) {
    if (staged_buffer(buf, count, dtype))
      return staged_isendrecv_replace(buf, count, dtype, dest, sendtag, source, recvtag, comm, request);
    return PMPI_Isendrecv_replace_c(buf, count, dtype, dest, sendtag, source, recvtag, comm, request);
  }
  if (!fits(count)) return raise_class(comm, MPI_ERR_COUNT);
  return MPI_Isendrecv_replace(buf, static_cast<int>(count), dtype, dest, sendtag, source, recvtag, comm, request);
}
#endif  // MPIX_HAVE_MPI_ISENDRECV

MPIX_INTERCEPT int MPI_Mrecv_c(void *buf, MPI_Count count, MPI_Datatype dtype, MPI_Message *message,
                               MPI_Status *status) {
  if (fits(count)) return MPI_Mrecv(buf, static_cast<int>(count), dtype, message, status);
  if (staged_buffer(buf, count, dtype)) return staged_mrecv(buf, count, dtype, message, status);
  return PMPI_Mrecv_c(buf, count, dtype, message, status);
}

MPIX_INTERCEPT int MPI_Imrecv_c(void *buf, MPI_Count count, MPI_Datatype dtype, MPI_Message *message,
                                MPI_Request *request) {
  if (fits(count)) return MPI_Imrecv(buf, static_cast<int>(count), dtype, message, request);
  if (staged_buffer(buf, count, dtype)) return staged_imrecv(buf, count, dtype, message, request);
  return PMPI_Imrecv_c(buf, count, dtype, message, request);
}

#endif  // MPIX_HAVE_MPI_LARGE_COUNT
