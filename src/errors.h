// Library errors and the one place that turns them into MPI error codes.
//
// Each situation has its own MPI error code (and so its own MPI_Error_string
// text) inside an MPI class: a standard one where MPI has a fitting class, a
// library class (MPIX_ERR_*) otherwise. Codes are created at MPI_Init.
#ifndef MPIX_SRC_ERRORS_H
#define MPIX_SRC_ERRORS_H

#include <mpi.h>

namespace mpix {

enum class Err : int {
  kNotInitialized,     // MPIX call before MPI_Init or after MPI_Finalize
  kInvalidComm,        // MPI_COMM_NULL or a freed communicator
  kInvalidArg,         // null output pointer and the like
  kWildcardSource,     // MPI_ANY_SOURCE where the communicator forbids it
  kWildcardTag,        // MPI_ANY_TAG where the communicator forbids it
  kRegionNotOpen,      // close without a matching open
  kRegionAlreadyOpen,  // open while a region is open on the communicator
  kRegionNotHandled,   // region on a communicator mpix does not handle
  kDeviceBufferNoCuda, // device pointer, library built without CUDA
  kQueueFull,          // bounded queue full: retry after progress
  kStreamInvalid,      // MPIX_Stream handle unknown or already freed
  kStreamInUse,        // MPIX_Stream_free while stream communicators use it
  kStreamInfo,         // MPIX_Stream_create info: unknown "type" or bad "value"
  kStreamNone,         // *_enqueue on a communicator without a local stream
  kStreamConcurrent,   // two threads in one stream (a serial context) at once
  kStreamRequest,      // *_enqueue wait on a request of another stream / kind
  kStreamNoCuda,       // cudaStream_t stream, library built without CUDA
  kStreamNoGpu,        // cudaStream_t stream, no usable GPU / stream memory ops
  kNoThreadMultiple,   // progress thread needed, MPI underneath below MULTIPLE
  kDeviceCommNotHandled, // MPIX_Comm_device_handle on a comm that is not handled/no-wildcard
  kDeviceNoGpu,        // MPIX_Comm_device_handle without a usable GPU
  kDeviceSetup,        // mailbox allocation or CUDA IPC mapping failed
  kTransportUnavailable, // MPIX_TRANSPORT names a transport that cannot start
  kStreamOpFailed,     // an enqueued operation failed when the stream ran it
  kStreamTruncate,     // an enqueued receive was truncated when the stream ran it
  kStreamHostCall,     // host point-to-point on a stream communicator run by the GPU
  kStreamHostWait,     // MPI_Wait & co. on a request of *_enqueue
  kStreamType,         // non-contiguous datatype in a GPU-run *_enqueue
  kInternal,           // a bug or an underlying failure we cannot classify
  kCount
};

// Registers the library's error classes, codes and strings; called once by the
// MPI_Init hook. Returns an MPI error code.
int errors_init();

// The MPI error code for e; MPI_ERR_OTHER before errors_init().
int error_code(Err e);

// Whether code is one of the MPIX_ERR_* classes (false before errors_init()).
bool is_library_class_code(int code);

// The text MPI_Error_string gives for e's code.
const char *error_text(Err e);

// Reports e on comm the way an MPI function does: through comm's error handler
// (MPI_ERRORS_ARE_FATAL aborts, MPI_ERRORS_RETURN returns, user handlers run),
// and returns the code for the caller to return. Errors on an invalid
// communicator go to MPI_COMM_SELF, as MPI-4 prescribes. Before MPI_Init (or
// after MPI_Finalize) no handler exists: the text goes to stderr, prefixed by
// `func`, and MPI_ERR_OTHER is returned.
int raise_error(MPI_Comm comm, Err e, const char *func);

// Hands code to comm's error handler, except on mpix's own threads: there
// the error is only returned (the operation that failed reports it later,
// where the application called), since a handler is user code and
// MPI_ERRORS_ARE_FATAL would end the job from a thread it does not know.
void call_errhandler(MPI_Comm comm, int code);

// Marks the calling thread as one of mpix's own for its lifetime (the
// progress thread's pollers).
class InternalThread {
 public:
  InternalThread();
  ~InternalThread();
  InternalThread(const InternalThread &) = delete;
  InternalThread &operator=(const InternalThread &) = delete;

 private:
  bool was_;
};

}  // namespace mpix

#endif
