// The GPU side of MPIX streams (enqueue.cc): the progress thread's polling
// of GPU streams, the queue of operations a stream has not reached yet, and
// the generalized-request handles of enqueued requests. stream.h holds the
// objects and their registry; this, what enqueue.cc does with them.
#ifndef MPIX_MPIX_ENQUEUE_H
#define MPIX_MPIX_ENQUEUE_H

#include <mpi.h>

#include <memory>

#include "stream.h"

namespace mpix::stream {

// Starts the progress thread's polling of s (a GPU stream); false if the
// thread cannot run.
bool gpu_stream_attach(const std::shared_ptr<Stream> &s);
void gpu_stream_detach(Stream *s);
// Whether a GPU stream still has operations queued or running.
bool gpu_stream_busy(Stream *s);
// A handle for an enqueued request: a generalized request, valid for MPI
// and never completed by it (MPI error code).
int new_handle(MPI_Request *h);
// Generalized-request handles of enqueued requests (for MPIX_Wait*_enqueue).
void enq_request_insert(const std::shared_ptr<EnqRequest> &r);
std::shared_ptr<EnqRequest> enq_request_find(MPI_Request h);
// Forgets r's handle and returns it to MPI (MPIX_Wait*_enqueue took it).
void enq_request_retire(EnqRequest &r);
// Queues op on s and pushes its trigger (and wait, if blocking) into the
// CUDA stream; raises on err_comm if the stream refuses it.
int enqueue(Stream &s, std::unique_ptr<Op> op, bool blocking, MPI_Comm err_comm);
// An operation failed on the progress thread, where nobody can return the
// error: on stderr, and kept for the next call on the stream.
void report(Stream &s, const Op &op, int rc);
// Raises (on comm) a failure a stream kept since the last call; else 0.
int raise_failure(Stream &s, MPI_Comm comm, const char *func);

}  // namespace mpix::stream

#endif
