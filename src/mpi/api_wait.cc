// Intercepted completion calls: every Wait/Test variant, MPI_Request_free,
// MPI_Request_get_status, MPI_Cancel, MPI_Start(all). Arrays may mix mpix
// requests with the MPI library's own: those go to PMPI as a sub-array.
#include <vector>

#include "api_common.h"
#include "src/p2p/staged_native.h"
#include "src/visibility.h"

using namespace mpix;
using namespace mpix::p2p;

namespace {

bool inactive(const Request *r) { return r->persistent && !r->active; }

MPI_Comm error_comm(const Request *r) {
  if (r->staged) return staged_comm(r);
  return r->comm ? r->comm->user() : MPI_COMM_SELF;
}

// Raises a concluded request's error unless its handler ran already.
int report(MPI_Comm comm, int rc, bool raised) { return rc == MPI_SUCCESS || raised ? rc : raise_class(comm, rc); }

// Hands a finished request back to the application: status, and the handle
// becomes MPI_REQUEST_NULL (or, persistent, inactive). Returns its error.
int conclude(Request *r, MPI_Request *handle, MPI_Status *status, bool in_array = false) {
  r->write_status(status, in_array);
  const int error = r->st_error;
  if (r->persistent) {
    r->active = false;
  } else {
    request_release(r);
    *handle = MPI_REQUEST_NULL;
  }
  return error;
}

// The requests of an array, split into mpix's and the MPI library's.
struct Split {
  std::vector<Request *> ours;   // per index; nullptr for native entries
  std::vector<int> native_index;  // positions of native entries
  std::vector<MPI_Request> native;
  std::vector<MPI_Status> native_status;
  int n_ours = 0;

  Split(int count, const MPI_Request reqs[]) : ours(static_cast<std::size_t>(count), nullptr) {
    for (int i = 0; i < count; ++i) {
      Request *r = request_lookup(reqs[i]);
      ours[static_cast<std::size_t>(i)] = r;
      if (r) {
        ++n_ours;
      } else {
        native_index.push_back(i);
        native.push_back(reqs[i]);
      }
    }
    native_status.resize(native.size());
  }
  void copy_back(MPI_Request reqs[]) const {
    for (std::size_t k = 0; k < native.size(); ++k) reqs[native_index[k]] = native[k];
  }
};

bool ours_done(const Split &s) {
  for (const Request *r : s.ours)
    if (r && !inactive(r) && !r->done()) return false;
  return true;
}

MPI_Status *status_at(MPI_Status statuses[], int i) {
  return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

// Concludes every request of an all-complete array; MPI_ERR_IN_STATUS if any failed.
int conclude_all(Split &s, int count, MPI_Request reqs[], MPI_Status statuses[], int native_rc,
                 MPI_Comm *err_comm) {
  bool any_error = native_rc != MPI_SUCCESS;
  for (std::size_t k = 0; k < s.native.size(); ++k) {
    MPI_Status *st = status_at(statuses, s.native_index[k]);
    if (st != MPI_STATUS_IGNORE) {
      *st = s.native_status[k];
      if (native_rc != MPI_ERR_IN_STATUS) st->MPI_ERROR = MPI_SUCCESS;
    }
  }
  s.copy_back(reqs);
  for (int i = 0; i < count; ++i) {
    Request *r = s.ours[static_cast<std::size_t>(i)];
    if (!r) continue;
    MPI_Status *st = status_at(statuses, i);
    if (inactive(r)) {
      status_empty(st);
      continue;
    }
    if (r->st_error != MPI_SUCCESS && !any_error) *err_comm = error_comm(r);
    if (r->st_error != MPI_SUCCESS) any_error = true;
    conclude(r, &reqs[i], st, true);
  }
  return any_error ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

// MPIX_ERR_... for a request of *_enqueue among reqs (see request.h); else 0.
int refuse_enqueued(const MPI_Request *reqs, int count, const char *func) {
  if (reqs == nullptr) return MPI_SUCCESS;
  for (int i = 0; i < count; ++i)
    if (is_enqueued_handle(reqs[i])) return raise_error(MPI_COMM_SELF, Err::kStreamHostWait, func);
  return MPI_SUCCESS;
}

// Lane requests (src/p2p/lanes.h): waited for and tested by their flags,
// their lanes read without the engine lock, and concluded into their
// thread's cache. The lane path takes an array only if every request in it
// is an active lane request or null; anything else goes the engine's way.
constexpr int kLaneArrayMax = 256;
bool lane_array(int count, const MPI_Request reqs[], Request *rs[]) {
  if (count <= 0 || count > kLaneArrayMax) return false;
  bool any = false;
  for (int i = 0; i < count; ++i) {
    rs[i] = nullptr;
    if (reqs[i] == MPI_REQUEST_NULL) continue;
    Request *r = request_lookup(reqs[i]);
    if (r == nullptr || !r->lane || !r->active) return false;
    rs[i] = r;
    any = true;
  }
  return any;
}

bool lane_finished(Request *r) { return r->kind == ReqKind::kSend || r->complete || r->comm->lane_test(r); }

// Statuses, recycling, MPI_ERR_IN_STATUS (in_array) or the request's error.
int lane_conclude(int count, MPI_Request reqs[], Request *rs[], MPI_Status statuses[], bool in_array) {
  int rc = MPI_SUCCESS;
  MPI_Comm err_comm = MPI_COMM_WORLD;
  for (int i = 0; i < count; ++i) {
    Request *r = rs[i];
    MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
    if (r == nullptr) {
      if (in_array && st != MPI_STATUS_IGNORE) status_empty(st);
      continue;
    }
    r->write_status(st, in_array);
    if (r->st_error != MPI_SUCCESS) {
      rc = in_array ? MPI_ERR_IN_STATUS : r->st_error;
      err_comm = r->lane_user;
    }
    lane_request_recycle(r);
    reqs[i] = MPI_REQUEST_NULL;
  }
  return rc == MPI_SUCCESS ? rc : raise_class(err_comm, rc);
}

bool lane_waitall(int count, MPI_Request reqs[], MPI_Status statuses[], bool in_array, int *rc) {
  const LaneCallerScope inside;
  Request *rs[kLaneArrayMax];
  if (!lane_array(count, reqs, rs)) return false;
  for (int i = 0; i < count; ++i)
    // (A complete one's communicator may be freed: not touched.)
    if (rs[i] != nullptr && rs[i]->kind == ReqKind::kRecv && !rs[i]->complete) rs[i]->comm->lane_wait(rs[i]);
  *rc = lane_conclude(count, reqs, rs, statuses, in_array);
  return true;
}

bool lane_testall(int count, MPI_Request reqs[], int *flag, MPI_Status statuses[], bool in_array, int *rc) {
  const LaneCallerScope inside;
  Request *rs[kLaneArrayMax];
  if (!lane_array(count, reqs, rs)) return false;
  *rc = MPI_SUCCESS;
  *flag = 0;
  for (int i = 0; i < count; ++i)
    if (rs[i] != nullptr && !lane_finished(rs[i])) return true;
  *flag = 1;
  *rc = lane_conclude(count, reqs, rs, statuses, in_array);
  return true;
}

}  // namespace

MPIX_INTERCEPT int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  if (int rc = refuse_enqueued(request, 1, "MPI_Wait")) return rc;
  if (request == nullptr || request_live() == 0) return PMPI_Wait(request, status);
  if (int rc = MPI_SUCCESS; lanes_configured() > 0 && lane_waitall(1, request, status, false, &rc)) return rc;
  auto lock = engine_lock();
  Request *r = request_lookup(*request);
  if (!r) {
    lock.unlock();
    return PMPI_Wait(request, status);
  }
  if (inactive(r)) {
    status_empty(status);
    return MPI_SUCCESS;
  }
  while (!r->done()) progress_wait(lock);
  const MPI_Comm comm = error_comm(r);
  const bool raised = r->error_raised;
  const int rc = conclude(r, request, status);
  lock.unlock();
  return report(comm, rc, raised);
}

MPIX_INTERCEPT int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
  if (int rc = refuse_enqueued(request, 1, "MPI_Test")) return rc;
  if (request == nullptr || request_live() == 0) return PMPI_Test(request, flag, status);
  if (int rc = MPI_SUCCESS; lanes_configured() > 0 && lane_testall(1, request, flag, status, false, &rc)) return rc;
  auto lock = engine_lock();
  Request *r = request_lookup(*request);
  if (!r) {
    lock.unlock();
    return PMPI_Test(request, flag, status);
  }
  if (inactive(r)) {
    *flag = 1;
    status_empty(status);
    return MPI_SUCCESS;
  }
  if (!r->done()) progress_poll();
  *flag = r->done();
  if (!*flag) return MPI_SUCCESS;
  const MPI_Comm comm = error_comm(r);
  const bool raised = r->error_raised;
  const int rc = conclude(r, request, status);
  lock.unlock();
  return report(comm, rc, raised);
}

MPIX_INTERCEPT int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status statuses[]) {
  if (int rc = refuse_enqueued(reqs, count, "MPI_Waitall")) return rc;
  if (request_live() == 0 || count <= 0) return PMPI_Waitall(count, reqs, statuses);
  if (int rc = MPI_SUCCESS; lanes_configured() > 0 && lane_waitall(count, reqs, statuses, true, &rc)) return rc;
  auto lock = engine_lock();
  Split s(count, reqs);
  if (s.n_ours == 0) {
    lock.unlock();
    return PMPI_Waitall(count, reqs, statuses);
  }
  int native_rc = MPI_SUCCESS;
  bool natives_done = s.native.empty();
  for (;;) {
    progress_poll();
    if (!natives_done) {
      int flag = 0;
      native_rc = PMPI_Testall(static_cast<int>(s.native.size()), s.native.data(), &flag, s.native_status.data());
      natives_done = flag != 0 || (native_rc != MPI_SUCCESS && native_rc != MPI_ERR_IN_STATUS);
    }
    if (natives_done && ours_done(s)) break;
    progress_wait(lock);
  }
  MPI_Comm err_comm = MPI_COMM_WORLD;
  const int rc = conclude_all(s, count, reqs, statuses, native_rc, &err_comm);
  lock.unlock();
  return rc == MPI_SUCCESS ? rc : raise_class(err_comm, rc);
}

MPIX_INTERCEPT int MPI_Testall(int count, MPI_Request reqs[], int *flag, MPI_Status statuses[]) {
  if (int rc = refuse_enqueued(reqs, count, "MPI_Testall")) return rc;
  if (request_live() == 0 || count <= 0) return PMPI_Testall(count, reqs, flag, statuses);
  if (int rc = MPI_SUCCESS; lanes_configured() > 0 && lane_testall(count, reqs, flag, statuses, true, &rc))
    return rc;
  auto lock = engine_lock();
  Split s(count, reqs);
  if (s.n_ours == 0) {
    lock.unlock();
    return PMPI_Testall(count, reqs, flag, statuses);
  }
  progress_poll();
  *flag = 0;
  // MPI_Testall changes nothing unless everything is complete: test ours
  // first, and only then let PMPI_Testall free the native ones.
  if (!ours_done(s)) return MPI_SUCCESS;
  int native_rc = MPI_SUCCESS;
  if (!s.native.empty()) {
    int nflag = 0;
    native_rc = PMPI_Testall(static_cast<int>(s.native.size()), s.native.data(), &nflag, s.native_status.data());
    if (!nflag && native_rc == MPI_SUCCESS) return MPI_SUCCESS;
  }
  *flag = 1;
  MPI_Comm err_comm = MPI_COMM_WORLD;
  const int rc = conclude_all(s, count, reqs, statuses, native_rc, &err_comm);
  lock.unlock();
  return rc == MPI_SUCCESS ? rc : raise_class(err_comm, rc);
}

namespace {

// One pass of Waitany/Testany: *index of a completed request, or
// MPI_UNDEFINED with *all_inactive when nothing is active at all.
int any_pass(Split &s, int count, MPI_Request reqs[], int *index, MPI_Status *status, bool *found) {
  *found = false;
  bool active = false;
  for (int i = 0; i < count; ++i) {
    Request *r = s.ours[static_cast<std::size_t>(i)];
    if (!r || inactive(r)) continue;
    active = true;
    if (r->done()) {
      *found = true;
      *index = i;
      return conclude(r, &reqs[i], status);
    }
  }
  if (!s.native.empty()) {
    int nindex = MPI_UNDEFINED, nflag = 0;
    const int rc = PMPI_Testany(static_cast<int>(s.native.size()), s.native.data(), &nindex, &nflag, status);
    s.copy_back(reqs);
    if (nflag && nindex != MPI_UNDEFINED) {
      *found = true;
      *index = s.native_index[static_cast<std::size_t>(nindex)];
      return rc;
    }
    if (!nflag) active = true;
    if (rc != MPI_SUCCESS) {
      *found = true;
      *index = MPI_UNDEFINED;
      return rc;
    }
  }
  if (!active) {
    *found = true;
    *index = MPI_UNDEFINED;
    status_empty(status);
  }
  return MPI_SUCCESS;
}

}  // namespace

MPIX_INTERCEPT int MPI_Waitany(int count, MPI_Request reqs[], int *index, MPI_Status *status) {
  if (int rc = refuse_enqueued(reqs, count, "MPI_Waitany")) return rc;
  if (request_live() == 0 || count <= 0) return PMPI_Waitany(count, reqs, index, status);
  auto lock = engine_lock();
  Split s(count, reqs);
  if (s.n_ours == 0) {
    lock.unlock();
    return PMPI_Waitany(count, reqs, index, status);
  }
  for (;;) {
    progress_poll();
    bool found = false;
    Request *completing = nullptr;
    for (int i = 0; i < count && !completing; ++i) {
      Request *r = s.ours[static_cast<std::size_t>(i)];
      if (r && !inactive(r) && r->done()) completing = r;
    }
    const MPI_Comm comm = completing ? error_comm(completing) : MPI_COMM_WORLD;
    const int rc = any_pass(s, count, reqs, index, status, &found);
    if (found) {
      lock.unlock();
      return rc == MPI_SUCCESS ? rc : raise_class(comm, rc);
    }
    progress_wait(lock);
  }
}

MPIX_INTERCEPT int MPI_Testany(int count, MPI_Request reqs[], int *index, int *flag, MPI_Status *status) {
  if (int rc = refuse_enqueued(reqs, count, "MPI_Testany")) return rc;
  if (request_live() == 0 || count <= 0) return PMPI_Testany(count, reqs, index, flag, status);
  auto lock = engine_lock();
  Split s(count, reqs);
  if (s.n_ours == 0) {
    lock.unlock();
    return PMPI_Testany(count, reqs, index, flag, status);
  }
  progress_poll();
  bool found = false;
  *index = MPI_UNDEFINED;
  const int rc = any_pass(s, count, reqs, index, status, &found);
  *flag = found;
  lock.unlock();
  return rc == MPI_SUCCESS ? rc : raise_class(MPI_COMM_WORLD, rc);
}

namespace {

int some_pass(Split &s, int count, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
  int n = 0;
  bool active = false, any_error = false;
  for (int i = 0; i < count; ++i) {
    Request *r = s.ours[static_cast<std::size_t>(i)];
    if (!r || inactive(r)) continue;
    active = true;
    if (!r->done()) continue;
    if (conclude(r, &reqs[i], status_at(statuses, n), true) != MPI_SUCCESS) any_error = true;
    indices[n++] = i;
  }
  if (!s.native.empty()) {
    std::vector<int> nidx(s.native.size());
    int nout = 0;
    const int rc = PMPI_Testsome(static_cast<int>(s.native.size()), s.native.data(), &nout, nidx.data(),
                                 s.native_status.data());
    s.copy_back(reqs);
    if (nout != MPI_UNDEFINED) {
      active = true;
      for (int k = 0; k < nout; ++k) {
        MPI_Status *st = status_at(statuses, n);
        if (st != MPI_STATUS_IGNORE) *st = s.native_status[static_cast<std::size_t>(k)];
        indices[n++] = s.native_index[static_cast<std::size_t>(nidx[static_cast<std::size_t>(k)])];
      }
    }
    if (rc == MPI_ERR_IN_STATUS) any_error = true;
  }
  *outcount = active ? n : MPI_UNDEFINED;
  return any_error ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

}  // namespace

MPIX_INTERCEPT int MPI_Waitsome(int count, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
  if (int rc = refuse_enqueued(reqs, count, "MPI_Waitsome")) return rc;
  if (request_live() == 0 || count <= 0) return PMPI_Waitsome(count, reqs, outcount, indices, statuses);
  auto lock = engine_lock();
  Split s(count, reqs);
  if (s.n_ours == 0) {
    lock.unlock();
    return PMPI_Waitsome(count, reqs, outcount, indices, statuses);
  }
  for (;;) {
    progress_poll();
    const int rc = some_pass(s, count, reqs, outcount, indices, statuses);
    if (*outcount != 0) {
      lock.unlock();
      return rc == MPI_SUCCESS ? rc : raise_class(MPI_COMM_WORLD, rc);
    }
    progress_wait(lock);
  }
}

MPIX_INTERCEPT int MPI_Testsome(int count, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
  if (int rc = refuse_enqueued(reqs, count, "MPI_Testsome")) return rc;
  if (request_live() == 0 || count <= 0) return PMPI_Testsome(count, reqs, outcount, indices, statuses);
  auto lock = engine_lock();
  Split s(count, reqs);
  if (s.n_ours == 0) {
    lock.unlock();
    return PMPI_Testsome(count, reqs, outcount, indices, statuses);
  }
  progress_poll();
  const int rc = some_pass(s, count, reqs, outcount, indices, statuses);
  lock.unlock();
  return rc == MPI_SUCCESS ? rc : raise_class(MPI_COMM_WORLD, rc);
}

MPIX_INTERCEPT int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status) {
  if (int rc = refuse_enqueued(&request, 1, "MPI_Request_get_status")) return rc;
  if (request_live() == 0) return PMPI_Request_get_status(request, flag, status);
  auto lock = engine_lock();
  Request *r = request_lookup(request);
  if (!r) {
    lock.unlock();
    return PMPI_Request_get_status(request, flag, status);
  }
  if (inactive(r)) {
    *flag = 1;
    status_empty(status);
    return MPI_SUCCESS;
  }
  if (!r->done()) progress_poll();
  *flag = r->done();
  if (*flag) r->write_status(status);
  return MPI_SUCCESS;
}

MPIX_INTERCEPT int MPI_Request_free(MPI_Request *request) {
  if (int rc = refuse_enqueued(request, 1, "MPI_Request_free")) return rc;
  if (request == nullptr || request_live() == 0) return PMPI_Request_free(request);
  auto lock = engine_lock();
  Request *r = request_lookup(*request);
  if (!r) {
    lock.unlock();
    return PMPI_Request_free(request);
  }
  *request = MPI_REQUEST_NULL;
  // A send/receive pair (MPI_Isendrecv) is reclaimed as one: finish it here.
  if (r->companion)
    while (r->active && !r->done()) progress_wait(lock);
  // An operation still running finishes on its own and is reclaimed then
  // (a lane receive by whichever thread takes its message in, lanes.h).
  if (r->lane && r->active && r->kind == ReqKind::kRecv && r->comm->lane_free(r)) return MPI_SUCCESS;
  if (r->active && !r->complete) {
    r->user_freed = true;
    r->persistent = false;
  } else {
    request_release(r);
  }
  return MPI_SUCCESS;
}

MPIX_INTERCEPT int MPI_Cancel(MPI_Request *request) {
  if (int rc = refuse_enqueued(request, 1, "MPI_Cancel")) return rc;
  if (request == nullptr || request_live() == 0) return PMPI_Cancel(request);
  auto lock = engine_lock();
  Request *r = request_lookup(*request);
  if (!r) {
    lock.unlock();
    return PMPI_Cancel(request);
  }
  // Receives still waiting in the matcher are withdrawn; anything already
  // matched, and sends, complete normally (MPI_Test_cancelled says false).
  if (r->staged) {
    if (r->active && !r->complete) staged_cancel(r);  // completes as cancelled, or normally
    return MPI_SUCCESS;
  }
  if (r->kind == ReqKind::kRecv && r->active && !r->complete && r->comm) r->comm->cancel(r);
  return MPI_SUCCESS;
}

namespace {

int start_one(Request *r) {
  if (r->active) return MPI_ERR_REQUEST;
  r->active = true;
  r->complete = false;
  r->st_cancelled = false;
  r->st_error = MPI_SUCCESS;
  r->error_raised = false;
  if (r->staged) return staged_start(r);
  if (r->peer == MPI_PROC_NULL) {
    r->comm->op_started();
    r->finish(MPI_PROC_NULL, MPI_ANY_TAG, MPI_SUCCESS, 0);
    return MPI_SUCCESS;
  }
  return r->kind == ReqKind::kSend ? r->comm->start_send(r) : r->comm->start_recv(r);
}

}  // namespace

MPIX_INTERCEPT int MPI_Start(MPI_Request *request) {
  if (request == nullptr || request_live() == 0) return PMPI_Start(request);
  auto lock = engine_lock();
  Request *r = request_lookup(*request);
  if (!r) {
    lock.unlock();
    return PMPI_Start(request);
  }
  // A staged start reports its own failures (start_one's MPI_ERR_REQUEST
  // for a request already active is raised here).
  const bool raised = r->staged != nullptr && !r->active;
  const int rc = start_one(r);
  const MPI_Comm comm = error_comm(r);
  lock.unlock();
  return report(comm, rc, raised);
}

MPIX_INTERCEPT int MPI_Startall(int count, MPI_Request reqs[]) {
  if (request_live() == 0) return PMPI_Startall(count, reqs);
  for (int i = 0; i < count; ++i) {
    const int rc = MPI_Start(&reqs[i]);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}
