// Keeps handled communicators moving while the application blocks in a call
// mpix does not intercept.
//
// MPI's progress rule: once a receive is posted, a matching synchronous or
// rendezvous send must complete even if the receiver then blocks in, say,
// MPI_Barrier. Natively the MPI library progresses everything inside the
// barrier; mpix's engine only runs inside mpix's own calls, so without help
// the sender waits for a header nobody reads while the receiver waits in
// the barrier. A thread that polls the engine now and then, only while a
// posted receive waits, a transport transfer or a GPU transfer (IPC copy,
// staged chunks) is in flight, and the application has not polled
// recently, closes that gap at the cost of a wakeup every few hundred
// microseconds. Where small device sends may wait for this process
// (gpu_wants_idle_polls), it also polls once a millisecond when nothing is
// pending, so that they complete while it blocks elsewhere.
#ifndef MPIX_SRC_P2P_LIVENESS_H
#define MPIX_SRC_P2P_LIVENESS_H

namespace mpix::p2p {

// Starts the thread (the MPI library must run at MPI_THREAD_MULTIPLE).
// Returns false if it could not start.
bool liveness_start();
// Joins it (MPI_Finalize, before the engine is torn down).
void liveness_stop();
// Called by every engine poll: the application is making progress itself.
void liveness_note_poll();

}  // namespace mpix::p2p

#endif
