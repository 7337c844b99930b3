// MPIX_Comm_dup_nowildcard, MPIX_Unordered_region_open/close.
#include "mpix.h"
#include "src/errors.h"
#include "src/p2p/engine.h"
#include "src/runtime_state.h"

using namespace mpix;

int MPIX_Comm_dup_nowildcard(MPI_Comm comm, MPI_Comm *newcomm) {
  if (!runtime_active()) return raise_error(comm, Err::kNotInitialized, __func__);
  if (comm == MPI_COMM_NULL) return raise_error(comm, Err::kInvalidComm, __func__);
  if (newcomm == nullptr) return raise_error(comm, Err::kInvalidArg, __func__);
  MPI_Info info;
  PMPI_Info_create(&info);
  PMPI_Info_set(info, "mpi_assert_no_any_source", "true");
  PMPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  // Through the intercepted entry point, which makes the result handled.
  const int rc = MPI_Comm_dup_with_info(comm, info, newcomm);
  PMPI_Info_free(&info);
  return rc;
}

namespace {

int region(MPI_Comm comm, bool open, const char *func) {
  if (!runtime_active()) return raise_error(comm, Err::kNotInitialized, func);
  if (comm == MPI_COMM_NULL) return raise_error(comm, Err::kInvalidComm, func);
  auto c = p2p::p2p_find(comm);
  if (!c || !c->handled()) return raise_error(comm, Err::kRegionNotHandled, func);
  auto lock = p2p::engine_lock();
  if (open == c->region_open()) {
    lock.unlock();
    return raise_error(comm, open ? Err::kRegionAlreadyOpen : Err::kRegionNotOpen, func);
  }
  // Closing drains: what the region collected is matched (or queued in
  // order) before receives posted after the close can come.
  if (!open) c->region_flush();
  c->set_region_open(open);
  return MPI_SUCCESS;
}

}  // namespace

int MPIX_Unordered_region_open(MPI_Comm comm) { return region(comm, true, __func__); }

int MPIX_Unordered_region_close(MPI_Comm comm) { return region(comm, false, __func__); }
