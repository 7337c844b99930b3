#include "staged_native.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <memory>

#include "datatype.h"
#include "device/gpu.h"
#include "engine.h"
#include "gpu_pack.h"
#include "src/errors.h"

namespace mpix::p2p {
namespace {

std::atomic<std::uint64_t> g_staged{0};

// One side of a call as the MPI library gets it: the application's host
// buffer as it was, or mpix's host bytes as MPI_PACKED.
struct Side {
  void *buf = nullptr;
  MPI_Count count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
};

bool fits_int(MPI_Count n) { return n >= 0 && n <= INT_MAX; }

// Whether a receive finished with data to deliver: success, or truncation
// (what the status counts arrived; MPICH 4.0 counts none then).
bool delivers(int rc) {
  if (rc == MPI_SUCCESS) return true;
  int cls = MPI_SUCCESS;
  PMPI_Error_class(rc, &cls);
  return cls == MPI_ERR_TRUNCATE;
}

// Reports an error of mpix's own (not the MPI library's, which raised its
// own) through comm's error handler.
int raise_own(MPI_Comm comm, int code) {
  call_errhandler(comm, code);
  return code;
}

// ---- the MPI library's calls, int-counted where the counts fit ----

int pmpi_send(SendMode mode, const Side &s, int dest, int tag, MPI_Comm comm) {
  if (fits_int(s.count)) {
    const int n = static_cast<int>(s.count);
    switch (mode) {
      case SendMode::kSync: return PMPI_Ssend(s.buf, n, s.type, dest, tag, comm);
      case SendMode::kBuffered: return PMPI_Bsend(s.buf, n, s.type, dest, tag, comm);
      case SendMode::kReady: return PMPI_Rsend(s.buf, n, s.type, dest, tag, comm);
      default: return PMPI_Send(s.buf, n, s.type, dest, tag, comm);
    }
  }
#ifdef MPIX_HAVE_MPI_LARGE_COUNT
  switch (mode) {
    case SendMode::kSync: return PMPI_Ssend_c(s.buf, s.count, s.type, dest, tag, comm);
    case SendMode::kBuffered: return PMPI_Bsend_c(s.buf, s.count, s.type, dest, tag, comm);
    case SendMode::kReady: return PMPI_Rsend_c(s.buf, s.count, s.type, dest, tag, comm);
    default: return PMPI_Send_c(s.buf, s.count, s.type, dest, tag, comm);
  }
#else
  return raise_own(comm, MPI_ERR_COUNT);
#endif
}

int pmpi_isend(SendMode mode, const Side &s, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
  if (fits_int(s.count)) {
    const int n = static_cast<int>(s.count);
    switch (mode) {
      case SendMode::kSync: return PMPI_Issend(s.buf, n, s.type, dest, tag, comm, req);
      case SendMode::kBuffered: return PMPI_Ibsend(s.buf, n, s.type, dest, tag, comm, req);
      case SendMode::kReady: return PMPI_Irsend(s.buf, n, s.type, dest, tag, comm, req);
      default: return PMPI_Isend(s.buf, n, s.type, dest, tag, comm, req);
    }
  }
#ifdef MPIX_HAVE_MPI_LARGE_COUNT
  switch (mode) {
    case SendMode::kSync: return PMPI_Issend_c(s.buf, s.count, s.type, dest, tag, comm, req);
    case SendMode::kBuffered: return PMPI_Ibsend_c(s.buf, s.count, s.type, dest, tag, comm, req);
    case SendMode::kReady: return PMPI_Irsend_c(s.buf, s.count, s.type, dest, tag, comm, req);
    default: return PMPI_Isend_c(s.buf, s.count, s.type, dest, tag, comm, req);
  }
#else
  return raise_own(comm, MPI_ERR_COUNT);
#endif
}

int pmpi_recv(const Side &r, int source, int tag, MPI_Comm comm, MPI_Status *st) {
  if (fits_int(r.count)) return PMPI_Recv(r.buf, static_cast<int>(r.count), r.type, source, tag, comm, st);
#ifdef MPIX_HAVE_MPI_LARGE_COUNT
  return PMPI_Recv_c(r.buf, r.count, r.type, source, tag, comm, st);
#else
  return raise_own(comm, MPI_ERR_COUNT);
#endif
}

int pmpi_irecv(const Side &r, int source, int tag, MPI_Comm comm, MPI_Request *req) {
  if (fits_int(r.count)) return PMPI_Irecv(r.buf, static_cast<int>(r.count), r.type, source, tag, comm, req);
#ifdef MPIX_HAVE_MPI_LARGE_COUNT
  return PMPI_Irecv_c(r.buf, r.count, r.type, source, tag, comm, req);
#else
  return raise_own(comm, MPI_ERR_COUNT);
#endif
}

int pmpi_sendrecv(const Side &s, int dest, int sendtag, const Side &r, int source, int recvtag, MPI_Comm comm,
                  MPI_Status *st) {
  if (fits_int(s.count) && fits_int(r.count))
    return PMPI_Sendrecv(s.buf, static_cast<int>(s.count), s.type, dest, sendtag, r.buf, static_cast<int>(r.count),
                         r.type, source, recvtag, comm, st);
#ifdef MPIX_HAVE_MPI_LARGE_COUNT
  return PMPI_Sendrecv_c(s.buf, s.count, s.type, dest, sendtag, r.buf, r.count, r.type, source, recvtag, comm, st);
#else
  return raise_own(comm, MPI_ERR_COUNT);
#endif
}


int pmpi_mrecv(const Side &r, MPI_Message *message, MPI_Status *st) {
  if (fits_int(r.count)) return PMPI_Mrecv(r.buf, static_cast<int>(r.count), r.type, message, st);
#ifdef MPIX_HAVE_MPI_LARGE_COUNT
  return PMPI_Mrecv_c(r.buf, r.count, r.type, message, st);
#else
  return MPI_ERR_COUNT;
#endif
}

int pmpi_imrecv(const Side &r, MPI_Message *message, MPI_Request *req) {
  if (fits_int(r.count)) return PMPI_Imrecv(r.buf, static_cast<int>(r.count), r.type, message, req);
#ifdef MPIX_HAVE_MPI_LARGE_COUNT
  return PMPI_Imrecv_c(r.buf, r.count, r.type, message, req);
#else
  return MPI_ERR_COUNT;
#endif
}

// ---- host memory of a staged side ----

// A device send buffer's packed bytes.
struct Outgoing {
  std::unique_ptr<char[]> bytes;
  MPI_Count n = 0;
  Side side() const { return Side{bytes.get(), n, MPI_PACKED}; }
};

int stage_out(const void *buf, MPI_Count count, MPI_Datatype dtype, MPI_Comm comm, Outgoing *out) {
  if (!device::compiled_with_cuda()) return error_code(Err::kDeviceBufferNoCuda);
  const Layout l = layout_of(dtype, count);
  out->n = l.bytes;
  if (!out->bytes) out->bytes = std::make_unique<char[]>(static_cast<std::size_t>(l.bytes) + 1);
  g_staged.fetch_add(1, std::memory_order_relaxed);
  return pack_device(buf, count, dtype, l, device::query(buf).device, out->bytes.get(),
                     static_cast<std::size_t>(l.bytes), comm);
}

// A device receive buffer: the receive lands here as MPI_PACKED, at most
// the packed size of (count, dtype), and is unpacked into it.
struct Incoming {
  std::unique_ptr<char[]> bytes;
  MPI_Count capacity = 0;
  void *dst = nullptr;
  MPI_Count count = 0;
  MPI_Datatype dtype = MPI_DATATYPE_NULL;

  int prepare(void *buf, MPI_Count c, MPI_Datatype t) {
    if (!device::compiled_with_cuda()) return error_code(Err::kDeviceBufferNoCuda);
    dst = buf;
    count = c;
    dtype = t;
    capacity = layout_of(t, c).bytes;
    if (!bytes) bytes = std::make_unique<char[]>(static_cast<std::size_t>(capacity) + 1);
    g_staged.fetch_add(1, std::memory_order_relaxed);
    return MPI_SUCCESS;
  }
  Side side() const { return Side{bytes.get(), capacity, MPI_PACKED}; }
  // The bytes status says arrived, within the buffer.
  MPI_Count received(const MPI_Status &st) const {
    MPI_Count n = 0;
    PMPI_Get_elements_x(&st, MPI_BYTE, &n);
    if (n == MPI_UNDEFINED || n < 0) return 0;
    return std::min(n, capacity);
  }
  int deliver(const MPI_Status &st, MPI_Comm comm) const {
    return unpack_anywhere(bytes.get(), static_cast<std::size_t>(received(st)), dst, count, dtype, comm);
  }
};

// A derived datatype kept for a later pack or unpack (the application may
// free its handle meanwhile, as MPI allows).
class HeldType {
 public:
  HeldType() = default;
  HeldType(const HeldType &) = delete;
  HeldType &operator=(const HeldType &) = delete;
  ~HeldType() {
    if (owned_) PMPI_Type_free(&type_);
  }
  void hold(MPI_Datatype t) {
    type_ = t;
    if (t != MPI_DATATYPE_NULL && is_derived(t)) {
      PMPI_Type_dup(t, &type_);
      owned_ = true;
    }
  }
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  bool owned_ = false;
};

struct StagedOp;

// The send half of a staged MPI_Isendrecv(_replace): a request of its own
// in the MPI library (MPICH 4.0's MPI_Isendrecv completes without the
// receive's count in its status, so the two halves are posted apart, as
// MPI_Isendrecv is defined: an MPI_Irecv and an MPI_Isend).
struct SendHalf final : progress::Pending {
  StagedOp *op = nullptr;
  MPI_Request inner = MPI_REQUEST_NULL;
  void on_complete(const MPI_Status &st) override;
};

// A nonblocking or persistent staged operation: owns the host memory and
// the MPI library's requests until it completes (it is the mpix request's
// Request::staged).
struct StagedOp final : progress::Pending {
  enum class Kind : std::uint8_t { kSend, kRecv, kSendRecv, kMrecv };
  Kind kind = Kind::kSend;
  Request *r = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;
  SendMode mode = SendMode::kStandard;
  // Send side: (sbuf, scount, stype) is on the device when send_staged.
  const void *sbuf = nullptr;
  MPI_Count scount = 0;
  HeldType stype;
  int dest = MPI_PROC_NULL, sendtag = 0;
  bool send_staged = false;
  Outgoing out;
  // Receive side.
  void *rbuf = nullptr;
  MPI_Count rcount = 0;
  HeldType rtype;
  int source = MPI_PROC_NULL, recvtag = 0;
  bool recv_staged = false;
  Incoming in;
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Request inner = MPI_REQUEST_NULL;  // the receive (kSendRecv), or the operation
  SendHalf send_half;                    // kSendRecv
  int halves = 0;                        // kSendRecv: requests still in the MPI library
  int half_error = MPI_SUCCESS;          // the send half's
  MPI_Status recv_status{};              // kSendRecv: the receive's, kept until both ended

  Side send_side() const {
    return send_staged ? out.side() : Side{const_cast<void *>(sbuf), scount, stype.get()};
  }
  Side recv_side() const { return recv_staged ? in.side() : Side{rbuf, rcount, rtype.get()}; }

  // Packs what goes out and hands the operation to the MPI library.
  // Errors: (code, whether the MPI library raised it already).
  int start(bool *raised) {
    *raised = false;
    if (send_staged)
      if (int rc = stage_out(sbuf, scount, stype.get(), comm, &out)) return rc;
    if (recv_staged)
      if (int rc = in.prepare(rbuf, rcount, rtype.get())) return rc;
    *raised = true;
    switch (kind) {
      case Kind::kSend: return pmpi_isend(mode, send_side(), dest, sendtag, comm, &inner);
      case Kind::kRecv: return pmpi_irecv(recv_side(), source, recvtag, comm, &inner);
      case Kind::kMrecv: return pmpi_imrecv(recv_side(), &message, &inner);
      case Kind::kSendRecv: {
        // The receive first, as MPI_Isendrecv's own receive half.
        if (int rc = pmpi_irecv(recv_side(), source, recvtag, comm, &inner)) return rc;
        send_half.op = this;
        half_error = MPI_SUCCESS;
        if (int rc = pmpi_isend(SendMode::kStandard, send_side(), dest, sendtag, comm, &send_half.inner)) {
          PMPI_Cancel(&inner);
          PMPI_Request_free(&inner);
          return rc;
        }
        halves = 2;
        return MPI_SUCCESS;
      }
    }
    return MPI_ERR_INTERN;
  }

  // Both halves of a kSendRecv ended: finish with the receive's status.
  void half_done() {
    if (--halves == 0) finish(recv_status);
  }

  void on_complete(const MPI_Status &st) override {
    inner = MPI_REQUEST_NULL;
    if (kind == Kind::kSendRecv) {
      recv_status = st;
      half_done();
      return;
    }
    finish(st);
  }

  void finish(const MPI_Status &st) {
    int cancelled = 0;
    PMPI_Test_cancelled(&st, &cancelled);
    int error = st.MPI_ERROR != MPI_SUCCESS ? st.MPI_ERROR : half_error;
    bool raised = error != MPI_SUCCESS;  // the MPI library's: its handler ran
    MPI_Count bytes = 0;
    const bool receives = kind != Kind::kSend;
    if (receives && !cancelled) {
      bytes = recv_staged ? in.received(st) : 0;
      if (!recv_staged) {
        PMPI_Get_elements_x(&st, MPI_BYTE, &bytes);
        if (bytes == MPI_UNDEFINED) bytes = 0;
      }
      if (recv_staged && delivers(st.MPI_ERROR)) {
        const int rc = in.deliver(st, comm);
        if (rc != MPI_SUCCESS && error == MPI_SUCCESS) {
          error = rc;
          raised = false;
        }
      }
    }
    Request *req = r;  // finish() may release the request, and this with it
    req->inner_busy = false;
    req->st_cancelled = cancelled != 0;
    req->error_raised = raised;
    if (receives) req->finish(st.MPI_SOURCE, st.MPI_TAG, error, bytes);
    else req->finish(MPI_PROC_NULL, MPI_ANY_TAG, error, 0);
  }
};

void SendHalf::on_complete(const MPI_Status &st) {
  inner = MPI_REQUEST_NULL;
  if (st.MPI_ERROR != MPI_SUCCESS) op->half_error = st.MPI_ERROR;
  op->half_done();
}

StagedOp *op_of(const Request *r) { return static_cast<StagedOp *>(r->staged.get()); }

// Starts r's operation (engine lock held). A failure completes r with it.
int run(Request *r) {
  StagedOp *op = op_of(r);
  bool raised = false;
  const int rc = op->start(&raised);
  if (rc != MPI_SUCCESS) {
    r->error_raised = raised;
    r->finish(MPI_PROC_NULL, MPI_ANY_TAG, rc, 0);
    return raised ? rc : raise_own(op->comm, rc);
  }
  r->inner_busy = true;
  progress::inflight().add(op->inner, op);
  if (op->kind == StagedOp::Kind::kSendRecv) progress::inflight().add(op->send_half.inner, &op->send_half);
  return MPI_SUCCESS;
}

// A request for op; started unless persistent. The MPI library's failure to
// start it (bad arguments) returns no request, as the call natively would.
int make_request(std::unique_ptr<StagedOp> op, ReqKind kind, bool persistent, MPI_Request *request) {
  if (request == nullptr) return raise_own(op->comm, MPI_ERR_REQUEST);
  auto lock = engine_lock();
  Request *r = request_create(kind);
  op->r = r;
  r->staged = std::move(op);
  r->persistent = persistent;
  *request = r->handle;
  if (persistent) return MPI_SUCCESS;
  r->active = true;
  const int rc = run(r);
  if (rc != MPI_SUCCESS) {
    request_release(r);
    *request = MPI_REQUEST_NULL;
  }
  return rc;
}

}  // namespace

int staged_send(SendMode mode, const void *buf, MPI_Count count, MPI_Datatype dtype, int dest, int tag,
                MPI_Comm comm) {
  Outgoing out;
  if (int rc = stage_out(buf, count, dtype, comm, &out)) return raise_own(comm, rc);
  return pmpi_send(mode, out.side(), dest, tag, comm);
}

int staged_isend(SendMode mode, const void *buf, MPI_Count count, MPI_Datatype dtype, int dest, int tag,
                 MPI_Comm comm, bool persistent, MPI_Request *request) {
  auto op = std::make_unique<StagedOp>();
  op->kind = StagedOp::Kind::kSend;
  op->comm = comm;
  op->mode = mode;
  op->sbuf = buf;
  op->scount = count;
  op->stype.hold(dtype);
  op->dest = dest;
  op->sendtag = tag;
  op->send_staged = true;
  return make_request(std::move(op), ReqKind::kSend, persistent, request);
}

int staged_recv(void *buf, MPI_Count count, MPI_Datatype dtype, int source, int tag, MPI_Comm comm,
                MPI_Status *status) {
  Incoming in;
  if (int rc = in.prepare(buf, count, dtype)) return raise_own(comm, rc);
  MPI_Status st;
  int rc = pmpi_recv(in.side(), source, tag, comm, &st);
  if (delivers(rc)) {
    // A truncated receive delivers what its status counts, as natively.
    if (const int u = in.deliver(st, comm); u != MPI_SUCCESS && rc == MPI_SUCCESS) rc = raise_own(comm, u);
  }
  if (status != MPI_STATUS_IGNORE) *status = st;
  return rc;
}

int staged_irecv(void *buf, MPI_Count count, MPI_Datatype dtype, int source, int tag, MPI_Comm comm,
                 bool persistent, MPI_Request *request) {
  auto op = std::make_unique<StagedOp>();
  op->kind = StagedOp::Kind::kRecv;
  op->comm = comm;
  op->rbuf = buf;
  op->rcount = count;
  op->rtype.hold(dtype);
  op->source = source;
  op->recvtag = tag;
  op->recv_staged = true;
  return make_request(std::move(op), ReqKind::kRecv, persistent, request);
}

int staged_sendrecv(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                    void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                    MPI_Status *status) {
  Side s{const_cast<void *>(sendbuf), sendcount, sendtype};
  Outgoing out;
  if (dest != MPI_PROC_NULL && staged_buffer(sendbuf, sendcount, sendtype)) {
    if (int rc = stage_out(sendbuf, sendcount, sendtype, comm, &out)) return raise_own(comm, rc);
    s = out.side();
  }
  Side r{recvbuf, recvcount, recvtype};
  Incoming in;
  const bool staged_in = source != MPI_PROC_NULL && staged_buffer(recvbuf, recvcount, recvtype);
  if (staged_in) {
    if (int rc = in.prepare(recvbuf, recvcount, recvtype)) return raise_own(comm, rc);
    r = in.side();
  }
  MPI_Status st;
  int rc = pmpi_sendrecv(s, dest, sendtag, r, source, recvtag, comm, &st);
  if (staged_in && delivers(rc))
    if (const int u = in.deliver(st, comm); u != MPI_SUCCESS && rc == MPI_SUCCESS) rc = raise_own(comm, u);
  if (status != MPI_STATUS_IGNORE) *status = st;
  return rc;
}

int staged_sendrecv_replace(void *buf, MPI_Count count, MPI_Datatype dtype, int dest, int sendtag, int source,
                            int recvtag, MPI_Comm comm, MPI_Status *status) {
  // Out of a packed copy, into one of its own: the two never overlap.
  Outgoing out;
  Side s{nullptr, 0, MPI_PACKED};
  if (dest != MPI_PROC_NULL) {
    if (int rc = stage_out(buf, count, dtype, comm, &out)) return raise_own(comm, rc);
    s = out.side();
  }
  Incoming in;
  Side r{nullptr, 0, MPI_PACKED};
  if (source != MPI_PROC_NULL) {
    if (int rc = in.prepare(buf, count, dtype)) return raise_own(comm, rc);
    r = in.side();
  }
  MPI_Status st;
  int rc = pmpi_sendrecv(s, dest, sendtag, r, source, recvtag, comm, &st);
  if (source != MPI_PROC_NULL && delivers(rc))
    if (const int u = in.deliver(st, comm); u != MPI_SUCCESS && rc == MPI_SUCCESS) rc = raise_own(comm, u);
  if (status != MPI_STATUS_IGNORE) *status = st;
  return rc;
}

#ifdef MPIX_HAVE_MPI_ISENDRECV
int staged_isendrecv(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                     void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag,
                     MPI_Comm comm, MPI_Request *request) {
  auto op = std::make_unique<StagedOp>();
  op->kind = StagedOp::Kind::kSendRecv;
  op->comm = comm;
  op->sbuf = sendbuf;
  op->scount = sendcount;
  op->stype.hold(sendtype);
  op->dest = dest;
  op->sendtag = sendtag;
  op->send_staged = dest != MPI_PROC_NULL && staged_buffer(sendbuf, sendcount, sendtype);
  op->rbuf = recvbuf;
  op->rcount = recvcount;
  op->rtype.hold(recvtype);
  op->source = source;
  op->recvtag = recvtag;
  op->recv_staged = source != MPI_PROC_NULL && staged_buffer(recvbuf, recvcount, recvtype);
  return make_request(std::move(op), ReqKind::kRecv, false, request);
}

int staged_isendrecv_replace(void *buf, MPI_Count count, MPI_Datatype dtype, int dest, int sendtag, int source,
                             int recvtag, MPI_Comm comm, MPI_Request *request) {
  auto op = std::make_unique<StagedOp>();
  op->kind = StagedOp::Kind::kSendRecv;
  op->comm = comm;
  op->sbuf = buf;
  op->scount = dest != MPI_PROC_NULL ? count : 0;
  op->stype.hold(dtype);
  op->dest = dest;
  op->sendtag = sendtag;
  op->send_staged = dest != MPI_PROC_NULL;
  op->rbuf = buf;
  op->rcount = source != MPI_PROC_NULL ? count : 0;
  op->rtype.hold(dtype);
  op->source = source;
  op->recvtag = recvtag;
  op->recv_staged = source != MPI_PROC_NULL;
  return make_request(std::move(op), ReqKind::kRecv, false, request);
}
#else
int staged_isendrecv(const void *, MPI_Count, MPI_Datatype, int, int, void *, MPI_Count, MPI_Datatype, int, int,
                     MPI_Comm comm, MPI_Request *) {
  return raise_own(comm, MPI_ERR_INTERN);
}
int staged_isendrecv_replace(void *, MPI_Count, MPI_Datatype, int, int, int, int, MPI_Comm comm, MPI_Request *) {
  return raise_own(comm, MPI_ERR_INTERN);
}
#endif

int staged_mrecv(void *buf, MPI_Count count, MPI_Datatype dtype, MPI_Message *message, MPI_Status *status) {
  Incoming in;
  if (int rc = in.prepare(buf, count, dtype)) return raise_own(MPI_COMM_SELF, rc);
  MPI_Status st;
  int rc = pmpi_mrecv(in.side(), message, &st);
  if (delivers(rc))
    if (const int u = in.deliver(st, MPI_COMM_SELF); u != MPI_SUCCESS && rc == MPI_SUCCESS)
      rc = raise_own(MPI_COMM_SELF, u);
  if (status != MPI_STATUS_IGNORE) *status = st;
  return rc;
}

int staged_imrecv(void *buf, MPI_Count count, MPI_Datatype dtype, MPI_Message *message, MPI_Request *request) {
  auto op = std::make_unique<StagedOp>();
  op->kind = StagedOp::Kind::kMrecv;
  op->comm = MPI_COMM_SELF;  // a message's errors: no communicator at hand
  op->rbuf = buf;
  op->rcount = count;
  op->rtype.hold(dtype);
  op->recv_staged = true;
  op->message = *message;
  const int rc = make_request(std::move(op), ReqKind::kRecv, false, request);
  if (rc == MPI_SUCCESS) *message = MPI_MESSAGE_NULL;
  return rc;
}

int staged_start(Request *r) { return run(r); }

void staged_cancel(Request *r) {
  StagedOp *op = op_of(r);
  if (op->inner != MPI_REQUEST_NULL) PMPI_Cancel(&op->inner);
  if (op->send_half.inner != MPI_REQUEST_NULL) PMPI_Cancel(&op->send_half.inner);
}

MPI_Comm staged_comm(const Request *r) { return op_of(r)->comm; }

std::uint64_t staged_operations() { return g_staged.load(std::memory_order_relaxed); }

}  // namespace mpix::p2p
