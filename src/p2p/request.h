// Requests of operations on handled communicators.
//
// The handle the application holds is a generalized request that mpix keeps
// open for its whole life (a pool, reused), so it is a valid MPI_Request that
// can never collide with one the MPI library hands out; every Wait/Test/
// Cancel/Request_free/Start variant recognises it and acts on the Request
// behind it, and passes everything else to PMPI.
#ifndef MPIX_SRC_P2P_REQUEST_H
#define MPIX_SRC_P2P_REQUEST_H

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "device/memtype.h"
#include "match/matcher_types.h"
#include "progress/inflight.h"
#include "progress/transport.h"

namespace mpix::p2p {

class P2PComm;

enum class ReqKind : std::uint8_t { kSend, kRecv };
using progress::SendMode;

// Told when a request completes, so that a holder of thousands of requests
// in flight (the device proxy, mpix/device_proxy.cc) learns which finished
// without looking at every one of them after each progress step. Called
// once, from Request::finish under the engine lock (the watcher is cleared
// first); whoever sets a watcher clears it, under the lock, before it goes.
class RequestWatcher {
 public:
  virtual void request_done(std::uint64_t cookie) = 0;

 protected:
  ~RequestWatcher() = default;
};

class Request;

// A request's hold on its communicator. Made and dropped under the engine
// lock, as requests are, so it is a plain count on the communicator, which
// holds a reference to itself while any request holds it
// (P2PComm::request_hold): no atomic operation per request (a shared_ptr
// took two, one when the request was made and one when it was released).
// borrow(): a request on a caller's stack whose call holds the
// communicator anyway; not counted.
class CommRef {
 public:
  CommRef() = default;
  CommRef(const CommRef &) = delete;
  CommRef &operator=(const CommRef &) = delete;
  ~CommRef() { reset(); }
  void hold(P2PComm *c);
  void borrow(P2PComm *c) {
    reset();
    c_ = c;
  }
  void reset() {
    if (c_ != nullptr && counted_) release();
    c_ = nullptr;
    counted_ = false;
  }
  P2PComm *get() const { return c_; }
  P2PComm *operator->() const { return c_; }
  explicit operator bool() const { return c_ != nullptr; }

 private:
  void release();
  P2PComm *c_ = nullptr;
  bool counted_ = false;
};

// A flag one thread sets and another reads without a lock between them (a
// lane request's completion, set by whichever thread took its message in):
// stores release what was written before, loads acquire it. Plain moves on
// x86; copyable, so that RequestFields stays assignable.
class SyncFlag {
 public:
  SyncFlag(bool v = false) : v_(v) {}  // NOLINT: used as a bool
  SyncFlag(const SyncFlag &o) : v_(o.v_.load(std::memory_order_relaxed)) {}
  SyncFlag &operator=(const SyncFlag &o) {
    v_.store(o.v_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    return *this;
  }
  SyncFlag &operator=(bool v) {
    v_.store(v, std::memory_order_release);
    return *this;
  }
  operator bool() const { return v_.load(std::memory_order_acquire); }  // NOLINT: used as a bool

 private:
  std::atomic<bool> v_;
};

// The plain fields of a request, apart from what it owns: a released
// request is made fresh by assigning a new set of them and dropping its
// references (Request::recycle), not by destroying and constructing it.
struct RequestFields {
  MPI_Request handle = MPI_REQUEST_NULL;
  ReqKind kind = ReqKind::kRecv;
  SendMode mode = SendMode::kStandard;
  bool persistent = false;
  bool active = false;      // started and not yet returned by Wait/Test
  SyncFlag complete;        // the operation finished; status below is final
  // Made by a communicator's lanes (lanes.h): completed under a lane's lock
  // by whichever thread takes its message in, concluded without the engine
  // lock, and kept afterwards in its thread's cache.
  bool lane = false;
  bool lane_engine = false;  // a lane request the engine completes (counted as its operation)
  MPI_Comm lane_user = MPI_COMM_NULL;  // a lane request's communicator, for its errors
  bool user_freed = false;  // MPI_Request_free while active: reclaim at completion
  bool inner_busy = false;  // an underlying PMPI request still refers to us
  bool queued = false;      // a receive waiting in the matcher (cancellable)
  const void *sbuf = nullptr;
  void *rbuf = nullptr;
  int count = 0;
  MPI_Datatype dtype = MPI_DATATYPE_NULL;
  bool dtype_owned = false;  // we hold a dup of a derived type
  int peer = MPI_PROC_NULL;  // dest or source (may be MPI_ANY_SOURCE)
  int tag = 0;
  match::RecvHandle match_handle;
  // A receive into a contiguous host buffer (classified when started, as
  // its buffer cannot change while it is pending): its capacity in bytes
  // and where the data start, so an eager message is one copy with no
  // datatype or memory-type question on arrival. -1: the general delivery.
  std::int64_t host_capacity = -1;
  MPI_Aint host_lb = 0;
  // Where rbuf lives, classified with it: the GPU holding it, kRbufHost,
  // or kRbufUnknown (not classified: asked of the driver on delivery).
  static constexpr int kRbufHost = -1, kRbufUnknown = -2;
  int rbuf_device = kRbufUnknown;
  // MPI_Isendrecv: the send half, completed and released together with us.
  Request *companion = nullptr;
  // The request table's entry of a pooled request (request.cc), ~0 for one
  // on a caller's stack.
  std::uint32_t table_entry = ~std::uint32_t{0};
  // st_error went through an error handler already (the MPI library's, as
  // the staged operation failed underneath): completion calls return it
  // without raising it again.
  bool error_raised = false;

  // Told when this request completes (at most once); set under the lock.
  RequestWatcher *watcher = nullptr;
  std::uint64_t watch_cookie = 0;

  // Final status fields.
  int st_source = MPI_ANY_SOURCE;
  int st_tag = MPI_ANY_TAG;
  int st_error = MPI_SUCCESS;
  MPI_Count st_bytes = 0;
  bool st_cancelled = false;
};

// The GPU holding r's receive buffer, or -1 for memory the CPU reads: as
// classified when the receive started, else asked of the driver now.
inline int rbuf_device_of(const RequestFields &r) {
  return r.rbuf_device != RequestFields::kRbufUnknown ? r.rbuf_device : device::device_of(r.rbuf);
}

class Request final : public progress::Pending, public RequestFields {
 public:
  CommRef comm;
  // MPI_Isendrecv_replace: the send half sends this packed copy of the
  // buffer the receive half overwrites.
  std::unique_ptr<char[]> scratch;
  // An eager send held until its transfer completes: the header and payload
  // copy the transfer reads.
  std::unique_ptr<char[]> eager_copy;
  // A call on a communicator mpix does not handle whose buffer is on the
  // device, staged through host memory (staged_native.h): its host memory
  // and the MPI library's request. comm is null then.
  std::unique_ptr<progress::Pending> staged;

  ~Request() override;
  // An underlying transfer for this request completed.
  void on_complete(const MPI_Status &status) override;
  void finish(int source, int tag, int error, MPI_Count bytes);
  // Complete, with the companion (if any) complete too.
  bool done() const { return complete && (companion == nullptr || companion->complete); }
  // MPI_ERROR is written only for calls returning an array of statuses:
  // single-status calls leave it as it was (MPI-4 3.2.5).
  void write_status(MPI_Status *status, bool with_error = false) const;
  // As destroyed and made anew, in place: references dropped, every field
  // as a new request's.
  void recycle();
};

// Creates a request with a pooled handle; owned by the table.
Request *request_create(ReqKind kind);
// Fills r's common fields (holding a derived datatype for the operation) and
// takes a reference on comm (MPI_Imrecv: c null, the message names it).
void init_request(Request *r, P2PComm *c, const void *sbuf, void *rbuf, int count,
                  MPI_Datatype dtype, int peer, int tag);
// The request behind handle, or nullptr for handles of the MPI library.
// Safe without the engine lock (lane waits): the table only grows, in
// storage that never moves, under the lock.
Request *request_lookup(MPI_Request handle);
// Returns the handle to the pool and destroys the request (now, or when its
// underlying transfer completes).
void request_release(Request *r);
// Number of live mpix requests (0: every Wait/Test goes straight to PMPI).
// Lane requests cached by threads count as live.
int request_live();
// A lane request (lane set, every other field as a new request's) from this
// thread's cache, filled from a shared pool or, under the engine lock, from
// new handles when empty. No shared lock in the steady state.
Request *lane_request(ReqKind kind);
// A concluded lane request back into this thread's cache (its handle stays
// live in the table; request_lookup() finds it, inactive).
void lane_request_recycle(Request *r);

// Handles of MPIX_Isend_enqueue/MPIX_Irecv_enqueue on GPU streams
// (mpix/enqueue.cc registers them): they complete only in stream order, so
// host completion calls refuse them (a clear error instead of a hang). The
// lookup runs only while such handles exist.
void enqueued_handles_register(bool (*is_enqueued)(MPI_Request));
void enqueued_handles_add(int delta);
bool is_enqueued_handle(MPI_Request h);
// Completes and frees every pooled generalized request (MPI_Finalize).
void request_finalize();

// Statuses: MPI_Status_set_elements/cancelled so that MPI_Get_count works.
// error < 0 leaves MPI_ERROR untouched.
void status_fill(MPI_Status *st, int source, int tag, int error, MPI_Count bytes, bool cancelled);
void status_empty(MPI_Status *st);

}  // namespace mpix::p2p

#endif
