#include "errors.h"

#include <cstdio>
#include <cstring>

#include "mpix.h"
#include "runtime_state.h"
#include "visibility.h"

// Library classes, public so programs can compare MPI_Error_class results.
// MPI_ERR_OTHER until MPI_Init has registered them.
int MPIX_ERR_WILDCARD = MPI_ERR_OTHER;
int MPIX_ERR_REGION = MPI_ERR_OTHER;
int MPIX_ERR_NO_CUDA = MPI_ERR_OTHER;
int MPIX_ERR_QUEUE_FULL = MPI_ERR_OTHER;
int MPIX_ERR_STREAM = MPI_ERR_OTHER;
int MPIX_ERR_NO_THREAD = MPI_ERR_OTHER;

namespace mpix {
namespace {

struct LibraryClass {
  int *cls;
  const char *text;
};

const LibraryClass kLibraryClasses[] = {
    {&MPIX_ERR_WILDCARD, "MPIX_ERR_WILDCARD: wildcard receive not allowed on this communicator"},
    {&MPIX_ERR_REGION, "MPIX_ERR_REGION: unordered region misuse"},
    {&MPIX_ERR_NO_CUDA, "MPIX_ERR_NO_CUDA: device buffer given to an mpix built without CUDA"},
    {&MPIX_ERR_QUEUE_FULL, "MPIX_ERR_QUEUE_FULL: queue full, retry after progress"},
    {&MPIX_ERR_STREAM, "MPIX_ERR_STREAM: invalid MPIX_Stream or stream communicator use"},
    {&MPIX_ERR_NO_THREAD,
     "MPIX_ERR_NO_THREAD: a progress thread is needed but the MPI library runs below MPI_THREAD_MULTIPLE"},
};

struct ErrorSpec {
  const int *cls;  // class the code belongs to
  const char *text;
};

const int kClassOther = MPI_ERR_OTHER;
const int kClassComm = MPI_ERR_COMM;
const int kClassArg = MPI_ERR_ARG;
const int kClassIntern = MPI_ERR_INTERN;
const int kClassTruncate = MPI_ERR_TRUNCATE;
const int kClassRequest = MPI_ERR_REQUEST;
const int kClassType = MPI_ERR_TYPE;

// Indexed by Err; the texts are what users read, so they say what to do.
const ErrorSpec kSpecs[] = {
    {&kClassOther, "mpix: called before MPI_Init or after MPI_Finalize"},
    {&kClassComm, "mpix: invalid communicator (MPI_COMM_NULL or already freed)"},
    {&kClassArg, "mpix: invalid argument (null pointer or out of range)"},
    {&MPIX_ERR_WILDCARD,
     "mpix: MPI_ANY_SOURCE used on a communicator asserted mpi_assert_no_any_source "
     "(or inside an unordered region)"},
    {&MPIX_ERR_WILDCARD,
     "mpix: MPI_ANY_TAG used on a communicator asserted mpi_assert_no_any_tag "
     "(or inside an unordered region)"},
    {&MPIX_ERR_REGION, "mpix: MPIX_Unordered_region_close without an open region on this communicator"},
    {&MPIX_ERR_REGION, "mpix: MPIX_Unordered_region_open while a region is already open on this communicator"},
    {&MPIX_ERR_REGION,
     "mpix: unordered region on a communicator mpix does not handle (create it with MPIX_Comm_dup_nowildcard "
     "or the mpi_assert_no_any_source/_tag info assertions)"},
    {&MPIX_ERR_NO_CUDA,
     "mpix: a GPU device buffer was passed, but this mpix was built without CUDA (configure --with-cuda)"},
    {&MPIX_ERR_QUEUE_FULL, "mpix: queue full; nothing was lost, retry after the peer makes progress"},
    {&MPIX_ERR_STREAM, "mpix: invalid MPIX_Stream (MPIX_STREAM_NULL, never created, or already freed)"},
    {&MPIX_ERR_STREAM,
     "mpix: MPIX_Stream_free on a stream that stream communicators still use (free them first)"},
    {&MPIX_ERR_STREAM,
     "mpix: MPIX_Stream_create info: \"type\" must be \"cudaStream_t\" with \"value\" the stream handle in hex "
     "(MPIX_Info_set_hex)"},
    {&MPIX_ERR_STREAM,
     "mpix: *_enqueue on a communicator without a local stream (create it with MPIX_Stream_comm_create)"},
    {&MPIX_ERR_STREAM,
     "mpix: a stream was used by two threads at once (an MPIX_Stream is a serial context: one thread at a time)"},
    {&MPIX_ERR_STREAM,
     "mpix: MPIX_Wait_enqueue/MPIX_Waitall_enqueue on a request that no *_enqueue of this stream returned"},
    {&MPIX_ERR_NO_CUDA, "mpix: a cudaStream_t stream was given, but this mpix was built without CUDA"},
    {&MPIX_ERR_NO_CUDA,
     "mpix: a cudaStream_t stream was given, but no GPU (or no CUDA stream memory operations) is usable"},
    {&MPIX_ERR_NO_THREAD,
     "mpix: GPU streams need the progress thread, which needs MPI_THREAD_MULTIPLE underneath "
     "(set MPIX_PROGRESS_THREAD=1, or MPI_Init_thread with MPI_THREAD_MULTIPLE)"},
    {&MPIX_ERR_WILDCARD,
     "mpix: MPIX_Comm_device_handle needs a communicator mpix handles without wildcards (create it with "
     "MPIX_Comm_dup_nowildcard or both mpi_assert_no_any_source and mpi_assert_no_any_tag)"},
    {&MPIX_ERR_NO_CUDA, "mpix: MPIX_Comm_device_handle: no usable GPU on this rank"},
    {&MPIX_ERR_NO_CUDA,
     "mpix: MPIX_Comm_device_handle: allocating or CUDA-IPC-mapping the device mailboxes (or the proxy queue and "
     "its progress thread) failed on some rank"},
    {&kClassOther,
     "mpix: the transport MPIX_TRANSPORT asks for cannot start here (the reason is printed at MPI_Init; "
     "MPIX_TRANSPORT=auto falls back to pmpi)"},
    {&MPIX_ERR_STREAM,
     "mpix: an operation enqueued on this stream failed when the stream ran it (its data is incomplete; stderr "
     "names the operation); reported by the next call on the stream"},
    {&kClassTruncate,
     "mpix: a receive enqueued on this stream got a message longer than its buffer (truncated when the stream "
     "ran it); reported by the next call on the stream"},
    {&MPIX_ERR_STREAM,
     "mpix: host point-to-point call on a stream communicator whose enqueued operations run on the GPU (use the "
     "*_enqueue calls on it, or set MPIX_STREAM_PATH=host so that host calls match enqueued ones)"},
    {&kClassRequest,
     "mpix: a host completion call (MPI_Wait, MPI_Test, MPI_Request_free, ...) on a request of "
     "MPIX_Isend_enqueue/MPIX_Irecv_enqueue: complete it in stream order with MPIX_Wait_enqueue or "
     "MPIX_Waitall_enqueue"},
    {&kClassType,
     "mpix: *_enqueue operations run on the GPU need a contiguous datatype (pack the data first, or set "
     "MPIX_STREAM_PATH=host)"},
    {&kClassIntern, "mpix: internal error (please report it with MPIX_VERBOSE=2 output)"},
};
static_assert(sizeof(kSpecs) / sizeof(kSpecs[0]) == static_cast<size_t>(Err::kCount),
              "one spec per Err value");

int g_codes[static_cast<int>(Err::kCount)];
thread_local bool t_internal = false;
bool g_registered = false;

bool is_library_class(const int *cls) {
  for (const auto &lc : kLibraryClasses)
    if (lc.cls == cls) return true;
  return false;
}

// MPICH 4.0 gives codes added to a predefined class no dynamic marker, so
// MPI_Error_string decodes them as unrelated internal messages. Where that
// happens we return the predefined class itself (MPI's own text describes it).
bool codes_in_predefined_classes_work() {
  int code = MPI_SUCCESS;
  if (PMPI_Add_error_code(MPI_ERR_OTHER, &code) != MPI_SUCCESS) return false;
  const char probe[] = "mpix: error string probe";
  if (PMPI_Add_error_string(code, probe) != MPI_SUCCESS) return false;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  return PMPI_Error_string(code, text, &len) == MPI_SUCCESS && std::strcmp(text, probe) == 0;
}

}  // namespace

int errors_init() {
  if (g_registered) return MPI_SUCCESS;
  for (const auto &lc : kLibraryClasses) {
    int rc = PMPI_Add_error_class(lc.cls);
    if (rc == MPI_SUCCESS) rc = PMPI_Add_error_string(*lc.cls, lc.text);
    if (rc != MPI_SUCCESS) return rc;
  }
  const bool own_codes_everywhere = codes_in_predefined_classes_work();
  for (int i = 0; i < static_cast<int>(Err::kCount); ++i) {
    if (!own_codes_everywhere && !is_library_class(kSpecs[i].cls)) {
      g_codes[i] = *kSpecs[i].cls;
      continue;
    }
    int rc = PMPI_Add_error_code(*kSpecs[i].cls, &g_codes[i]);
    if (rc == MPI_SUCCESS) rc = PMPI_Add_error_string(g_codes[i], kSpecs[i].text);
    if (rc != MPI_SUCCESS) return rc;
  }
  g_registered = true;
  return MPI_SUCCESS;
}

bool is_library_class_code(int code) {
  if (!g_registered) return false;
  for (const auto &lc : kLibraryClasses)
    if (*lc.cls == code) return true;
  return false;
}

int error_code(Err e) { return g_registered ? g_codes[static_cast<int>(e)] : MPI_ERR_OTHER; }

const char *error_text(Err e) { return kSpecs[static_cast<int>(e)].text; }

int raise_error(MPI_Comm comm, Err e, const char *func) {
  if (!runtime_active()) {
    std::fprintf(stderr, "%s: %s\n", func, error_text(Err::kNotInitialized));
    return MPI_ERR_OTHER;
  }
  if (e == Err::kInvalidComm || comm == MPI_COMM_NULL) comm = MPI_COMM_SELF;
  const int code = error_code(e);
  if (t_internal) return code;
  // The job is about to end: say exactly what went wrong first, since the
  // MPI library's abort message knows only the class.
  MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
  if (PMPI_Comm_get_errhandler(comm, &handler) == MPI_SUCCESS) {
    bool fatal = handler == MPI_ERRORS_ARE_FATAL;
#ifdef MPI_ERRORS_ABORT
    fatal = fatal || handler == MPI_ERRORS_ABORT;
#endif
    if (fatal) std::fprintf(stderr, "%s: %s\n", func, error_text(e));
    if (handler != MPI_ERRHANDLER_NULL) PMPI_Errhandler_free(&handler);
  }
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

void call_errhandler(MPI_Comm comm, int code) {
  if (!t_internal) PMPI_Comm_call_errhandler(comm, code);
}

InternalThread::InternalThread() : was_(t_internal) { t_internal = true; }
InternalThread::~InternalThread() { t_internal = was_; }

}  // namespace mpix

// MPI makes every error class a code of itself: MPI_Error_class of a class
// is that class. Open MPI 4.1 answers MPI_ERR_UNKNOWN for classes made by
// MPI_Add_error_class (it keeps classes and codes in separate tables and
// looks a class up among the codes); mpix's own classes are answered here,
// so that MPI_Error_class(MPIX_ERR_WILDCARD) is MPIX_ERR_WILDCARD on every
// MPI. Everything else, and every code mpix returns, goes to the library.
MPIX_INTERCEPT int MPI_Error_class(int errorcode, int *errorclass) {
  if (errorclass != nullptr && mpix::is_library_class_code(errorcode)) {
    *errorclass = errorcode;
    return MPI_SUCCESS;
  }
  return PMPI_Error_class(errorcode, errorclass);
}
