// MPI_Comm_idup(_with_info) of a communicator mpix will handle.
//
// The MPI library's own idup starts in the call, so collectives on the
// parent keep the order every rank issued them in. What mpix adds to the
// child (its shadow communicators, the transport's address exchange) are
// blocking collectives on the child alone, which the application may not use
// before the request completes: a thread of the library runs them once the
// child exists. So the call returns at once and MPI_Test stays a test; a
// rank that waits for something else before completing the idup (a receive
// whose sender has not reached its own idup yet) holds nobody up, as MPI
// promises for nonblocking collectives. Without MPI_THREAD_MULTIPLE
// underneath (MPIX_PROGRESS_THREAD=0) the child is made in the call.
#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include "api_common.h"
#include "progress/immortal.h"
#include "src/errors.h"
#include "src/p2p/comms.h"
#include "src/runtime_state.h"

namespace mpix::p2p {
namespace {

struct PendingDup {
  MPI_Request native = MPI_REQUEST_NULL;
  MPI_Comm child = MPI_COMM_NULL;  // the MPI library's, once `native` completes
  MPI_Comm *out = nullptr;         // the application's, written at completion
  Hints hints;
  Request *request = nullptr;
  std::thread worker;
  std::atomic<bool> finished{false};

  // A program that exits without MPI_Finalize (or before completing the
  // request) must not die in std::thread's destructor.
  ~PendingDup() {
    if (worker.joinable()) worker.detach();
  }
};

std::mutex g_pending_mutex;
// Immortal: a worker may still wait in PMPI_Wait while a program exits
// without MPI_Finalize (progress/immortal.h).
std::list<std::unique_ptr<PendingDup>> &pending_dups() {
  static Immortal<std::list<std::unique_ptr<PendingDup>>> list;
  return list.get();
}

void complete(PendingDup &p) {
  const InternalThread internal;  // errors come back through the request
  progress::mark_internal_thread();
  int rc = PMPI_Wait(&p.native, MPI_STATUS_IGNORE);
  if (rc == MPI_SUCCESS) rc = comm_created(p.child, p.hints);
  auto lock = engine_lock();
  *p.out = p.child;
  p.request->finish(MPI_ANY_SOURCE, MPI_ANY_TAG, rc, 0);
  p.finished = true;
}

// Joins the workers that are done (all of them: waits for the rest).
void reap(bool all) {
  std::lock_guard<std::mutex> guard(g_pending_mutex);
  for (auto it = pending_dups().begin(); it != pending_dups().end();) {
    if (all || (*it)->finished) {
      (*it)->worker.join();
      it = pending_dups().erase(it);
    } else {
      ++it;
    }
  }
}

bool is_inter(MPI_Comm comm) {
  int inter = 0;
  if (comm != MPI_COMM_NULL) PMPI_Comm_test_inter(comm, &inter);
  return inter != 0;
}

int idup_blocking(MPI_Comm comm, MPI_Info info, const Hints &h, MPI_Comm *newcomm, MPI_Request *request) {
  const LibraryInfo lib(info, will_carry(h, is_inter(comm)));  // hints.h
  int rc = info == MPI_INFO_NULL ? PMPI_Comm_dup(comm, newcomm) : PMPI_Comm_dup_with_info(comm, lib.get(), newcomm);
  if (rc == MPI_SUCCESS) rc = comm_created(*newcomm, h);
  if (rc != MPI_SUCCESS) return rc;
  auto lock = engine_lock();
  Request *r = request_create(ReqKind::kSend);
  r->active = true;
  r->finish(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, 0);
  *request = r->handle;
  return MPI_SUCCESS;
}

}  // namespace

int idup_handled(MPI_Comm comm, MPI_Info info, const Hints &h, MPI_Comm *newcomm, MPI_Request *request) {
  if (runtime().thread_underlying != MPI_THREAD_MULTIPLE) return idup_blocking(comm, info, h, newcomm, request);
  reap(false);
  auto p = std::make_unique<PendingDup>();
  p->out = newcomm;
  p->hints = h;
#ifdef MPIX_HAVE_MPI_COMM_IDUP_WITH_INFO  // configure's check: Open MPI 4.1 (MPI 3.1) lacks it
  const LibraryInfo lib(info, will_carry(h, is_inter(comm)));  // hints.h; the library copies it
  int rc = info == MPI_INFO_NULL ? PMPI_Comm_idup(comm, &p->child, &p->native)
                                 : PMPI_Comm_idup_with_info(comm, lib.get(), &p->child, &p->native);
#else
  // Only MPI_Comm_idup comes here (no MPI_Comm_idup_with_info wrapper).
  int rc = PMPI_Comm_idup(comm, &p->child, &p->native);
#endif
  if (rc != MPI_SUCCESS) return rc;
  {
    auto lock = engine_lock();
    p->request = request_create(ReqKind::kSend);
    p->request->active = true;
    *request = p->request->handle;
  }
  PendingDup &pending = *p;
  std::lock_guard<std::mutex> guard(g_pending_mutex);
  pending_dups().push_back(std::move(p));
  pending.worker = std::thread([&pending] { complete(pending); });
  return MPI_SUCCESS;
}

void idup_join_all() { reap(true); }

}  // namespace mpix::p2p
