// Intercepted sends: MPI_Send/Isend/Ssend/Issend/Bsend/Ibsend/Rsend/Irsend
// and their persistent forms. Communicators mpix does not handle go straight
// to PMPI (device buffers there staged through host memory: staged_native.h).
#include "api_common.h"
#include "src/p2p/staged_native.h"
#include "src/visibility.h"

using namespace mpix;
using namespace mpix::p2p;

namespace {

int blocking_send(const void *buf, int count, MPI_Datatype dtype, int dest, int tag, MPI_Comm comm,
                  P2PComm *c, SendMode mode) {
  if (int cls = check_send_args(*c, buf, count, dtype, dest, tag)) return raise_class(comm, cls);
  if (dest == MPI_PROC_NULL) return MPI_SUCCESS;
  // A lane's message: copied into its ring, no engine lock (lanes.h).
  if (mode == SendMode::kStandard && c->lane_send(buf, count, dtype, dest, tag)) return MPI_SUCCESS;
  auto lock = engine_lock();
  const int rc = c->send(buf, count, dtype, dest, tag, mode, lock);
  lock.unlock();
  return rc == MPI_SUCCESS ? rc : raise_class(comm, rc);
}

int make_send_request(const void *buf, int count, MPI_Datatype dtype, int dest, int tag, MPI_Comm comm,
                      P2PComm *c, SendMode mode, bool persistent, MPI_Request *request) {
  if (int cls = check_send_args(*c, buf, count, dtype, dest, tag)) return raise_class(comm, cls);
  if (request == nullptr) return raise_class(comm, MPI_ERR_REQUEST);
  if (mode == SendMode::kStandard && !persistent && c->lane_send(buf, count, dtype, dest, tag)) {
    // In the ring already: complete, and no engine lock to make it.
    Request *r = lane_request(ReqKind::kSend);
    r->active = true;
    r->lane_user = comm;
    r->st_source = MPI_PROC_NULL;
    r->st_tag = MPI_ANY_TAG;
    r->complete = true;
    *request = r->handle;
    return MPI_SUCCESS;
  }
  auto lock = engine_lock();
  Request *r = request_create(ReqKind::kSend);
  init_request(r, c, buf, nullptr, count, dtype, dest, tag);
  r->mode = mode;
  r->persistent = persistent;
  *request = r->handle;
  if (persistent) return MPI_SUCCESS;
  r->active = true;
  if (dest == MPI_PROC_NULL) {
    c->op_started();
    r->finish(MPI_PROC_NULL, MPI_ANY_TAG, MPI_SUCCESS, 0);
    return MPI_SUCCESS;
  }
  const int rc = c->start_send(r);
  lock.unlock();
  return rc == MPI_SUCCESS ? rc : raise_class(comm, rc);
}

}  // namespace

#define MPIX_BLOCKING_SEND(NAME, MODE)                                                             \
  MPIX_INTERCEPT int NAME(const void *buf, int count, MPI_Datatype dtype, int dest, int tag,       \
                          MPI_Comm comm) {                                                         \
    auto c = lookup(comm);                                                                         \
    if (!c || !c->handled()) {                                                                     \
      if (staged_buffer(buf, count, dtype)) return staged_send(MODE, buf, count, dtype, dest, tag, comm); \
      return P##NAME(buf, count, dtype, dest, tag, comm);                                          \
    }                                                                                              \
    return blocking_send(buf, count, dtype, dest, tag, comm, c, MODE);                             \
  }
#define MPIX_REQUEST_SEND(NAME, MODE, PERSISTENT)                                                  \
  MPIX_INTERCEPT int NAME(const void *buf, int count, MPI_Datatype dtype, int dest, int tag,       \
                          MPI_Comm comm, MPI_Request *request) {                                   \
    auto c = lookup(comm);                                                                         \
    if (!c || !c->handled()) {                                                                     \
      if (staged_buffer(buf, count, dtype))                                                        \
        return staged_isend(MODE, buf, count, dtype, dest, tag, comm, PERSISTENT, request);        \
      return P##NAME(buf, count, dtype, dest, tag, comm, request);                                 \
    }                                                                                              \
    return make_send_request(buf, count, dtype, dest, tag, comm, c, MODE, PERSISTENT, request);    \
  }

// One line per MPI function: the mode is the only difference.
MPIX_BLOCKING_SEND(MPI_Send, SendMode::kStandard)
MPIX_BLOCKING_SEND(MPI_Ssend, SendMode::kSync)
MPIX_BLOCKING_SEND(MPI_Bsend, SendMode::kBuffered)
MPIX_BLOCKING_SEND(MPI_Rsend, SendMode::kReady)
MPIX_REQUEST_SEND(MPI_Isend, SendMode::kStandard, false)
MPIX_REQUEST_SEND(MPI_Issend, SendMode::kSync, false)
MPIX_REQUEST_SEND(MPI_Ibsend, SendMode::kBuffered, false)
MPIX_REQUEST_SEND(MPI_Irsend, SendMode::kReady, false)
MPIX_REQUEST_SEND(MPI_Send_init, SendMode::kStandard, true)
MPIX_REQUEST_SEND(MPI_Ssend_init, SendMode::kSync, true)
MPIX_REQUEST_SEND(MPI_Bsend_init, SendMode::kBuffered, true)
MPIX_REQUEST_SEND(MPI_Rsend_init, SendMode::kReady, true)
