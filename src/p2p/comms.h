// Which communicators mpix handles, decided where they are created.
#ifndef MPIX_SRC_P2P_COMMS_H
#define MPIX_SRC_P2P_COMMS_H

#include <mpi.h>

#include "hints.h"

namespace mpix::p2p {

// Called on every new communicator (collectively, by all its members):
// records its assertions and, when they (or MPIX_INTERCEPT=all) say so,
// attaches the engine. MPI error code. force: attach even without hints
// (stream communicators, whose traffic the progress thread starts), with
// wildcards allowed unless the hints forbid them.
int comm_created(MPI_Comm newcomm, const Hints &hints, bool force = false);
// Whether comm_created will attach the engine to a new communicator with
// these hints (inter: an intercommunicator), so that its constructor can
// tell the MPI library beforehand (LibraryInfo).
bool will_carry(const Hints &hints, bool inter);

// MPI_Comm_idup(_with_info) of a communicator mpix will handle (h): the
// request completes once the child is attached (src/mpi/comm_idup.cc).
int idup_handled(MPI_Comm comm, MPI_Info info, const Hints &h, MPI_Comm *newcomm, MPI_Request *request);
// Waits for the children still being made (MPI_Finalize).
void idup_join_all();

// MPI_Init: MPIX_INTERCEPT=all handles MPI_COMM_WORLD and MPI_COMM_SELF.
int p2p_start(bool intercept_all);
// MPI_Finalize: releases requests and detaches every communicator.
void p2p_stop();
bool intercept_all();
// Whether mpix carries comm's point-to-point traffic.
bool comm_is_handled(MPI_Comm comm);

}  // namespace mpix::p2p

#endif
