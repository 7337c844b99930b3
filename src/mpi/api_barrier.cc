// MPI_Barrier: the MPI library's, then the messages that reached this
// process while it waited are taken in. A native MPI's progress engine does
// that inside the barrier; mpix's shared-memory rings are read only inside
// mpix's calls, so without this the first receives after a barrier paid
// for taking in everything sent before it (a flood of unexpected messages
// received after a barrier, as the matching-rate benchmark does, spent as
// much on that as on matching).
#include "api_common.h"
#include "src/visibility.h"

using namespace mpix;
using namespace mpix::p2p;

MPIX_INTERCEPT int MPI_Barrier(MPI_Comm comm) {
  const int rc = PMPI_Barrier(comm);
  if (rc != MPI_SUCCESS || CommTable::empty()) return rc;
  auto lock = engine_lock();
  progress_drain();
  return rc;
}
