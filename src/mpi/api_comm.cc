// Communicator constructors and destructors: where a communicator becomes
// handled (its assertions, or MPIX_INTERCEPT=all) and where its engine is
// drained and detached.
#include <cstdio>
#include <vector>

#include "api_common.h"
#include "src/p2p/comms.h"
#include "src/visibility.h"

using namespace mpix;
using namespace mpix::p2p;

namespace mpix::p2p {
namespace {
bool g_intercept_all = false;
}

bool intercept_all() { return g_intercept_all; }

bool will_carry(const Hints &hints, bool inter) {
  // Intercommunicators stay with the MPI library (their ranks name the
  // remote group); their assertions are still recorded and enforced.
  return !inter && (g_intercept_all || hints.no_any_source || hints.no_any_tag);
}

int comm_created(MPI_Comm newcomm, const Hints &hints, bool force) {
  if (newcomm == MPI_COMM_NULL) return MPI_SUCCESS;
  int inter = 0;
  PMPI_Comm_test_inter(newcomm, &inter);
  const bool handle = force || will_carry(hints, inter != 0);
  if (!handle && !hints.any()) return MPI_SUCCESS;
  auto c = std::make_shared<P2PComm>(hints);
  if (handle) {
    // Wildcards are allowed unless both are asserted away (the fast mode).
    auto lock = engine_lock();
    const int rc = c->attach(newcomm, !hints.no_wildcards(), lock);
    if (rc != MPI_SUCCESS) return rc;
  }
  return CommTable::insert(newcomm, std::move(c));
}

int p2p_start(bool all) {
  g_intercept_all = all;
  if (!all) return MPI_SUCCESS;
  int rc = comm_created(MPI_COMM_WORLD, Hints{});
  if (rc == MPI_SUCCESS) rc = comm_created(MPI_COMM_SELF, Hints{});
  return rc;
}

void p2p_stop() {
  // A child still being made needs the engine (the application should have
  // completed its idup; MPI_Finalize must not tear down under it anyway).
  idup_join_all();
  auto lock = engine_lock();
  // Messages still on their way arrive and what can finish does, while
  // every rank does the same; then no transport calls back into the
  // requests released below.
  drain(lock);
  progress::transport_abandon();
  request_finalize();
  detach_all();
  progress::transport_stop();
}

}  // namespace mpix::p2p

namespace {

// Hints a child inherits: MPI_Comm_dup and MPI_Comm_idup keep the parent's
// (MPI-4); every other constructor starts from its info argument alone.
Hints inherited(MPI_Comm parent) {
  auto c = lookup(parent);
  return c ? c->hints() : Hints{};
}

int after(int rc, MPI_Comm *newcomm, const Hints &hints) {
  if (rc != MPI_SUCCESS || newcomm == nullptr) return rc;
  return comm_created(*newcomm, hints);
}

bool is_inter(MPI_Comm comm) {
  int inter = 0;
  if (comm != MPI_COMM_NULL) PMPI_Comm_test_inter(comm, &inter);
  return inter != 0;
}

// The info for the MPI library when mpix will carry the new communicator's
// traffic (hints.h, LibraryInfo).
LibraryInfo library_info(MPI_Info info, const Hints &h, bool inter) { return LibraryInfo(info, will_carry(h, inter)); }

}  // namespace

MPIX_INTERCEPT int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
  const Hints h = inherited(comm);
  return after(PMPI_Comm_dup(comm, newcomm), newcomm, h);
}

MPIX_INTERCEPT int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) {
  const Hints h = hints_from_info(info);
  const LibraryInfo lib = library_info(info, h, is_inter(comm));
  return after(PMPI_Comm_dup_with_info(comm, lib.get(), newcomm), newcomm, h);
}

namespace {

bool will_handle(const Hints &h) { return intercept_all() || h.any(); }

}  // namespace

MPIX_INTERCEPT int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request) {
  const Hints h = inherited(comm);
  if (!will_handle(h)) return PMPI_Comm_idup(comm, newcomm, request);
  return idup_handled(comm, MPI_INFO_NULL, h, newcomm, request);
}

// MPI-4 constructors, where the MPI library has them (configure's checks).
#ifdef MPIX_HAVE_MPI_COMM_IDUP_WITH_INFO
MPIX_INTERCEPT int MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm, MPI_Request *request) {
  const Hints h = hints_from_info(info);
  if (!will_handle(h)) return PMPI_Comm_idup_with_info(comm, info, newcomm, request);
  return idup_handled(comm, info, h, newcomm, request);
}
#endif

#ifdef MPIX_HAVE_MPI_SESSIONS
MPIX_INTERCEPT int MPI_Comm_create_from_group(MPI_Group group, const char *stringtag, MPI_Info info,
                                              MPI_Errhandler errhandler, MPI_Comm *newcomm) {
  const Hints h = hints_from_info(info);
  const LibraryInfo lib = library_info(info, h, false);
  return after(PMPI_Comm_create_from_group(group, stringtag, lib.get(), errhandler, newcomm), newcomm, h);
}
#endif

// MPI-3.0, with its info argument (assertions) like MPI_Comm_dup_with_info.
MPIX_INTERCEPT int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm) {
  const Hints h = hints_from_info(info);
  const LibraryInfo lib = library_info(info, h, false);
  return after(PMPI_Comm_split_type(comm, split_type, key, lib.get(), newcomm), newcomm, h);
}

// Constructors without an info argument matter only under MPIX_INTERCEPT=all.
MPIX_INTERCEPT int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
  return after(PMPI_Comm_split(comm, color, key, newcomm), newcomm, Hints{});
}
MPIX_INTERCEPT int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm) {
  return after(PMPI_Comm_create(comm, group, newcomm), newcomm, Hints{});
}
MPIX_INTERCEPT int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm) {
  return after(PMPI_Comm_create_group(comm, group, tag, newcomm), newcomm, Hints{});
}
MPIX_INTERCEPT int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                                   MPI_Comm *newcomm) {
  return after(PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm), newcomm, Hints{});
}
MPIX_INTERCEPT int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm) {
  return after(PMPI_Cart_sub(comm, remain_dims, newcomm), newcomm, Hints{});
}
MPIX_INTERCEPT int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder,
                                    MPI_Comm *newcomm) {
  return after(PMPI_Graph_create(comm, nnodes, index, edges, reorder, newcomm), newcomm, Hints{});
}
MPIX_INTERCEPT int MPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[], const int degrees[],
                                         const int destinations[], const int weights[], MPI_Info info, int reorder,
                                         MPI_Comm *newcomm) {
  return after(PMPI_Dist_graph_create(comm, n, sources, degrees, destinations, weights, info, reorder, newcomm),
               newcomm, hints_from_info(info));
}
MPIX_INTERCEPT int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[],
                                                  const int sourceweights[], int outdegree,
                                                  const int destinations[], const int destweights[], MPI_Info info,
                                                  int reorder, MPI_Comm *newcomm) {
  return after(PMPI_Dist_graph_create_adjacent(comm, indegree, sources, sourceweights, outdegree, destinations,
                                               destweights, info, reorder, newcomm),
               newcomm, hints_from_info(info));
}
MPIX_INTERCEPT int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm, int remote_leader,
                                        int tag, MPI_Comm *newintercomm) {
  return after(PMPI_Intercomm_create(local_comm, local_leader, peer_comm, remote_leader, tag, newintercomm),
               newintercomm, Hints{});
}
MPIX_INTERCEPT int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm) {
  return after(PMPI_Intercomm_merge(intercomm, high, newintracomm), newintracomm, Hints{});
}

MPIX_INTERCEPT int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info) {
  // A communicator mpix carries keeps the assertions from the library too.
  const auto carried = lookup(comm);
  const LibraryInfo lib(info, carried && carried->handled());
  const int rc = PMPI_Comm_set_info(comm, lib.get());
  const Hints h = hints_from_info(info);
  if (rc != MPI_SUCCESS || !h.any()) return rc;
  // Recorded and enforced (wildcards become errors), but the traffic of an
  // existing communicator stays where it is: messages may be in flight.
  if (auto c = lookup(comm)) {
    auto lock = engine_lock();
    c->add_hints(h);
    return MPI_SUCCESS;
  }
  return CommTable::insert(comm, std::make_shared<P2PComm>(h));
}

MPIX_INTERCEPT int MPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used) {
  const int rc = PMPI_Comm_get_info(comm, info_used);
  if (rc != MPI_SUCCESS) return rc;
  if (auto c = lookup(comm)) {
    hints_to_info(c->hints(), *info_used);
    // How a program (or its test) sees that mpix gave the communicator lanes.
    if (const p2p::Lanes *lanes = c->lanes()) {
      char count[16];
      std::snprintf(count, sizeof count, "%d", lanes->count());
      PMPI_Info_set(*info_used, "mpix_lanes", count);
    }
  }
  return MPI_SUCCESS;
}

namespace {

// Takes comm out of the table; its engine lives on until the operations
// still running on it are done (MPI_Comm_free does not wait for them).
void forget(MPI_Comm comm, const std::shared_ptr<P2PComm> &c) {
  CommTable::erase(comm);
  auto lock = engine_lock();
  c->release_when_idle();
}

// Freeing or disconnecting MPI_COMM_WORLD or MPI_COMM_SELF is erroneous: the
// MPI library reports it (MPI_Comm_free; MPICH 4.0.2 does not check
// MPI_Comm_disconnect) and, with MPI_ERRORS_RETURN, the program goes on
// using the communicator, so mpix must keep carrying it: forgetting it here
// would leave messages already in the engine unreachable (mpi4py's
// test_exceptions does this).
bool predefined(MPI_Comm comm) { return comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF; }

}  // namespace

MPIX_INTERCEPT int MPI_Comm_free(MPI_Comm *comm) {
  if (comm == nullptr || predefined(*comm)) return PMPI_Comm_free(comm);
  if (auto c = lookup_shared(*comm)) forget(*comm, c);
  return PMPI_Comm_free(comm);
}

MPIX_INTERCEPT int MPI_Comm_disconnect(MPI_Comm *comm) {
  if (comm == nullptr || predefined(*comm)) return PMPI_Comm_disconnect(comm);
  if (auto c = lookup_shared(*comm)) {
    // MPI_Comm_disconnect waits for all pending communication to complete.
    auto lock = engine_lock();
    while (c->live_ops() > 0) progress_wait(lock);
    lock.unlock();
    forget(*comm, c);
  }
  return PMPI_Comm_disconnect(comm);
}
