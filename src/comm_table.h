// Per-communicator state of the communicators mpix handles, keyed by MPI_Comm.
//
// Only handled communicators have an entry; every other communicator passes
// straight through, and the common case (no handled communicator at all) costs
// one relaxed load. Entries die with their communicator: an attribute with a
// delete callback rides on each handled communicator, so MPI_Comm_free,
// MPI_Comm_disconnect and MPI_Finalize all remove the entry, whoever calls them.
#ifndef MPIX_SRC_COMM_TABLE_H
#define MPIX_SRC_COMM_TABLE_H

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>

namespace mpix {

// What later layers keep per handled communicator (hints, region state,
// matching engine, ...). Shared ownership: a request in flight keeps the state
// alive while the communicator is being freed. Its one implementation is
// p2p::P2PComm (p2p_find casts statically).
struct CommState : std::enable_shared_from_this<CommState> {
  virtual ~CommState() = default;
};

// MPI_Comm is an int in MPICH and a pointer in Open MPI.
inline std::uintptr_t comm_key(MPI_Comm comm) {
  static_assert(sizeof(MPI_Comm) <= sizeof(std::uintptr_t), "MPI_Comm fits a uintptr_t");
  std::uintptr_t key = 0;
  std::memcpy(&key, &comm, sizeof comm);
  return key;
}

class CommTable {
 public:
  // Created by the MPI_Init hook (needs MPI for the keyval).
  static int init();
  // Drops every entry; called by the MPI_Finalize hook before PMPI_Finalize.
  static void finalize();

  static bool empty() { return count_.load(std::memory_order_relaxed) == 0; }
  static std::shared_ptr<CommState> find(MPI_Comm comm);
  // The same without a reference: valid while the communicator is (a call
  // on it may use it; MPI forbids freeing it meanwhile).
  static CommState *find_raw(MPI_Comm comm);
  // Attaches state to comm (replacing any); returns an MPI error code.
  static int insert(MPI_Comm comm, std::shared_ptr<CommState> state);
  // Detaches comm's state, if any; returns an MPI error code.
  static int erase(MPI_Comm comm);

 private:
  static int delete_attr(MPI_Comm comm, int keyval, void *attr, void *extra);
  static std::atomic<int> count_;
};

}  // namespace mpix

#endif
