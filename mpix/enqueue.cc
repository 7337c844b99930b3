// MPIX_Send/Recv/Isend/Irecv/Wait/Waitall_enqueue: point-to-point in a
// stream's order, and the progress thread's side of GPU streams.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "device/memtype.h"
#include "enqueue.h"
#include "enqueue_kernel.h"
#include "progress/datatype.h"
#include "progress/thread.h"
#include "src/errors.h"
#include "src/mpi/api_common.h"
#include "src/runtime_state.h"

using namespace mpix;
using namespace mpix::stream;

namespace mpix::stream {
namespace {

// ---- handles of enqueued requests ----

int greq_query(void *, MPI_Status *status) {
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;
  return MPI_SUCCESS;
}
int greq_free(void *) { return MPI_SUCCESS; }
int greq_cancel(void *, int) { return MPI_SUCCESS; }

std::uintptr_t request_key(MPI_Request h) {
  std::uintptr_t k = 0;
  static_assert(sizeof h <= sizeof k, "MPI_Request fits a uintptr_t");
  std::memcpy(&k, &h, sizeof h);
  return k;
}

struct RequestTable {
  std::mutex mutex;
  std::unordered_map<std::uintptr_t, std::shared_ptr<EnqRequest>> live;
};

RequestTable &requests() {
  static RequestTable t;
  return t;
}

void empty_status(MPI_Status *st) {
  greq_query(nullptr, st);
  st->MPI_ERROR = MPI_SUCCESS;
}

// Bytes a staged receive got (its size for the copy out of the slot).
void note_staged(device::StagedSlot *slot, const MPI_Status &st) {
  int n = 0;
  if (PMPI_Get_count(&st, MPI_BYTE, &n) != MPI_SUCCESS || n < 0) n = 0;
  slot->bytes = static_cast<std::uint64_t>(n);
}

// ---- the progress thread over every GPU stream ----

class GpuPoller final : public progress::Poller {
 public:
  int poll() override;
  bool idle() override;
  bool add(const std::shared_ptr<Stream> &s);
  void remove(Stream *s);

 private:
  int poll_stream(Stream &s);
  int advance(Stream &s, Op &op);
  void snapshot();

  std::mutex mutex_;  // guards streams_ and attached_
  std::vector<std::shared_ptr<Stream>> streams_;
  bool attached_ = false;
  // Progress thread only.
  std::vector<std::shared_ptr<Stream>> polled_;
  std::vector<Op *> work_;
  std::vector<MPI_Request> inner_;
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;
};

GpuPoller &poller() {
  static GpuPoller p;
  return p;
}


bool GpuPoller::add(const std::shared_ptr<Stream> &s) {
  std::lock_guard<std::mutex> g(mutex_);
  streams_.push_back(s);
  if (attached_) return true;
  attached_ = progress::thread_attach(this);
  if (!attached_) streams_.pop_back();
  return attached_;
}

void GpuPoller::remove(Stream *s) {
  std::lock_guard<std::mutex> g(mutex_);
  streams_.erase(std::remove_if(streams_.begin(), streams_.end(),
                                [s](const std::shared_ptr<Stream> &p) { return p.get() == s; }),
                 streams_.end());
}

void GpuPoller::snapshot() {
  std::lock_guard<std::mutex> g(mutex_);
  polled_ = streams_;
}

int GpuPoller::poll() {
  // The operations' MPI calls fail into their streams' reports, never into
  // an error handler on this thread.
  InternalThread internal;
  snapshot();
  int moved = 0;
  for (auto &s : polled_) moved += poll_stream(*s);
  return moved;
}

bool GpuPoller::idle() {
  for (auto &s : polled_) {
    Queue &q = *s->queue;
    if (!q.running.empty()) return false;
    std::lock_guard<std::mutex> g(q.mutex);
    if (!q.ops.empty()) return false;
  }
  return true;
}

int GpuPoller::poll_stream(Stream &s) {
  Queue &q = *s.queue;
  int moved = 0;
  // Started I*_enqueue operations: one Testsome over all of them.
  if (!q.running.empty()) {
    const int n = static_cast<int>(q.running.size());
    inner_.resize(n);
    indices_.resize(n);
    statuses_.resize(n);
    for (int i = 0; i < n; ++i) inner_[i] = q.running[i]->inner;
    int outcount = 0;
    const int rc = MPI_Testsome(n, inner_.data(), &outcount, indices_.data(), statuses_.data());
    if (outcount != MPI_UNDEFINED && outcount > 0) {
      for (int i = 0; i < outcount; ++i) {
        EnqRequest &r = *q.running[indices_[i]];
        r.inner = MPI_REQUEST_NULL;
        r.status = statuses_[i];
        if (rc != MPI_ERR_IN_STATUS) r.status.MPI_ERROR = MPI_SUCCESS;
        else if (r.status.MPI_ERROR != MPI_SUCCESS) report(s, Op{}, r.status.MPI_ERROR);
        if (r.slot != nullptr && r.recv) {
          note_staged(r.slot, r.status);  // copied out after the wait
        } else if (r.slot != nullptr) {
          q.stage.give(r.slot);  // the send is out of it
          r.slot = nullptr;
        }
        r.done = true;
      }
      q.running.erase(std::remove_if(q.running.begin(), q.running.end(),
                                     [](const std::shared_ptr<EnqRequest> &r) { return r->done; }),
                      q.running.end());
      moved += outcount;
    }
  }
  // Operations the stream has reached (trigger >= seq), in stream order;
  // blocking ones already started stay at the front until they complete.
  const std::uint32_t trig = s.trigger->triggered();
  work_.clear();
  {
    std::lock_guard<std::mutex> g(q.mutex);
    for (auto &op : q.ops) {
      if (!op->started && device::seq_diff(op->seq, trig) > 0) break;
      work_.push_back(op.get());
    }
  }
  bool retired = false;
  if (!work_.empty()) s.trigger->make_current();
  for (Op *op : work_) {
    moved += advance(s, *op);
    retired = retired || op->finished;
  }
  if (retired) {
    std::lock_guard<std::mutex> g(q.mutex);
    q.ops.erase(std::remove_if(q.ops.begin(), q.ops.end(), [](const std::unique_ptr<Op> &op) { return op->finished; }),
                q.ops.end());
    q.room.notify_all();
  }
  q.running_count.store(q.running.size(), std::memory_order_release);
  return moved;
}

// Statuses of GPU-run operations, out of host-mapped memory (the stream
// reached this point, so the kernels that wrote them are done).
void fill_statuses(const Op &op) {
  for (const StatusFill &f : op.fills) {
    MPI_Status *st = f.out;
    std::size_t got = 0;
    int error = MPI_SUCCESS;
    if (f.result != nullptr) {
      const std::size_t bytes = static_cast<std::size_t>(f.result->bytes);
      got = bytes < f.capacity ? bytes : f.capacity;
      if (f.result->status == MPIX_DEVICE_ERR_TRUNCATE) error = MPI_ERR_TRUNCATE;
      else if (f.result->status != MPIX_DEVICE_SUCCESS) error = MPI_ERR_OTHER;
      f.exec->give_back(f.result);
    }
    PMPI_Status_set_elements_x(st, MPI_BYTE, static_cast<MPI_Count>(got));
    PMPI_Status_set_cancelled(st, 0);
    st->MPI_SOURCE = f.source;
    st->MPI_TAG = f.tag;
    st->MPI_ERROR = error;
  }
}

// Starts or tests op; returns 1 when something happened.
int GpuPoller::advance(Stream &s, Op &op) {
  Queue &q = *s.queue;
  if (op.type == OpType::kStatus) {
    fill_statuses(op);
    s.trigger->complete(op.seq);
    op.finished = true;
    return 1;
  }
  if (op.type == OpType::kRelease) {  // the stream has copied out of these
    for (device::StagedSlot *slot : op.release) q.stage.give(slot);
    op.finished = true;
    return 1;
  }
  if (!op.started) {
    op.started = true;
    int rc = MPI_SUCCESS;
    MPI_Request *inner = &op.inner;
    if (op.type == OpType::kIsend || op.type == OpType::kIrecv) inner = &op.req->inner;
    switch (op.type) {
      case OpType::kSend:
      case OpType::kIsend: rc = MPI_Isend(op.sbuf, op.count, op.dtype, op.peer, op.tag, op.comm, inner); break;
      case OpType::kRecv:
      case OpType::kIrecv: rc = MPI_Irecv(op.rbuf, op.count, op.dtype, op.peer, op.tag, op.comm, inner); break;
      case OpType::kWait:
      case OpType::kStatus:
      case OpType::kRelease: break;
    }
    if (op.dtype_owned) PMPI_Type_free(&op.dtype);  // the started operation holds its own reference
    if (rc != MPI_SUCCESS) {
      report(s, op, rc);
      *inner = MPI_REQUEST_NULL;
    }
    if (op.type == OpType::kIsend || op.type == OpType::kIrecv) {
      // The request now tracks the transfer; the op's place in the queue is done.
      if (rc == MPI_SUCCESS) {
        q.running.push_back(op.req);
      } else {
        empty_status(&op.req->status);
        op.req->status.MPI_ERROR = rc;
        if (op.req->slot != nullptr && op.req->recv) op.req->slot->bytes = 0;
        if (op.req->slot != nullptr && !op.req->recv) {
          q.stage.give(op.req->slot);
          op.req->slot = nullptr;
        }
        op.req->done = true;
      }
      op.finished = true;
      return 1;
    }
    if (rc != MPI_SUCCESS) {
      if (op.type == OpType::kRecv && op.status_out != MPI_STATUS_IGNORE) {
        empty_status(op.status_out);
        op.status_out->MPI_ERROR = rc;
      }
      if (op.slot != nullptr && op.type == OpType::kRecv) op.slot->bytes = 0;
      if (op.slot != nullptr && op.type == OpType::kSend) q.stage.give(op.slot);
      s.trigger->complete(op.seq);  // never leave the stream waiting
      op.finished = true;
      return 1;
    }
  }
  if (op.type == OpType::kWait) {
    for (const auto &r : op.waits)
      if (r && !r->done) return 0;
    for (std::size_t i = 0; i < op.waits.size(); ++i) {
      MPI_Status *out = op.waitall ? (op.statuses_out == MPI_STATUSES_IGNORE ? nullptr : &op.statuses_out[i])
                                   : (op.status_out == MPI_STATUS_IGNORE ? nullptr : op.status_out);
      if (out == nullptr) continue;
      if (op.waits[i]) *out = op.waits[i]->status;
      else empty_status(out);
    }
    s.trigger->complete(op.seq);
    op.finished = true;
    return 1;
  }
  int flag = 0;
  MPI_Status st;
  const int rc = MPI_Test(&op.inner, &flag, &st);
  if (rc != MPI_SUCCESS) {
    report(s, op, rc);
    flag = 1;
    empty_status(&st);
    st.MPI_ERROR = rc;
  }
  if (!flag) return 0;
  // MPI_Test leaves MPI_ERROR alone on success; the application reads it.
  if (rc == MPI_SUCCESS) st.MPI_ERROR = MPI_SUCCESS;
  if (op.type == OpType::kRecv && op.status_out != MPI_STATUS_IGNORE) *op.status_out = st;
  if (op.slot != nullptr && op.type == OpType::kRecv) note_staged(op.slot, st);  // before the done word
  if (op.slot != nullptr && op.type == OpType::kSend) q.stage.give(op.slot);
  s.trigger->complete(op.seq);
  op.finished = true;
  return 1;
}

// ---- the enqueuing side ----

// The stream side of comm, or an error raised on comm; a failure the stream
// kept since the last call is raised here too.
int resolve(MPI_Comm comm, const char *func, StreamComm **sc) {
  if (!runtime_active()) return raise_error(comm, Err::kNotInitialized, func);
  if (comm == MPI_COMM_NULL) return raise_error(comm, Err::kInvalidComm, func);
  *sc = comm_stream(comm);
  if (*sc == nullptr) return raise_error(comm, Err::kStreamNone, func);
  if ((*sc)->stream->gpu()) return raise_failure(*(*sc)->stream, comm, func);
  return MPI_SUCCESS;
}

// Keeps a derived datatype alive until the operation has started (the
// application may free its handle as soon as the call returns).
void hold_type(Op &op, MPI_Datatype dtype) {
  op.dtype = dtype;
  int ni = 0, na = 0, nt = 0, combiner = MPI_COMBINER_NAMED;
  if (dtype == MPI_DATATYPE_NULL) return;
  PMPI_Type_get_envelope(dtype, &ni, &na, &nt, &combiner);
  if (combiner == MPI_COMBINER_NAMED) return;
  if (PMPI_Type_dup(dtype, &op.dtype) == MPI_SUCCESS) op.dtype_owned = true;
  else op.dtype = dtype;
}

}  // namespace

// Queues op on s and pushes its trigger (and wait, if blocking) into the
// CUDA stream. A full queue waits for the progress thread to retire
// operations: back-pressure, never a lost operation.
int enqueue(Stream &s, std::unique_ptr<Op> op, bool blocking, MPI_Comm err_comm) {
  const char *func = op->func;
  Queue &q = *s.queue;
  Op *raw = op.get();
  {
    std::unique_lock<std::mutex> lock(q.mutex);
    while (q.ops.size() >= q.depth) {
      lock.unlock();
      progress::thread_wake();
      lock.lock();
      q.room.wait_for(lock, std::chrono::milliseconds(1));
    }
    raw->seq = ++q.next_seq;
    q.ops.push_back(std::move(op));
  }
  if (s.trigger->push(raw->seq, blocking) != device::Status::kOk) {
    // Not pushed, so the stream will never trigger it: take it back.
    std::unique_ptr<Op> back;
    {
      std::lock_guard<std::mutex> g(q.mutex);
      auto it = std::find_if(q.ops.begin(), q.ops.end(), [raw](const std::unique_ptr<Op> &p) { return p.get() == raw; });
      if (it != q.ops.end() && !(*it)->started) {
        back = std::move(*it);
        q.ops.erase(it);
      }
    }
    if (back && back->dtype_owned) PMPI_Type_free(&back->dtype);
    return raise_error(err_comm, Err::kStreamNoGpu, func);
  }
  progress::thread_wake();
  return MPI_SUCCESS;
}

namespace {

struct StagedCopy {
  device::StagedSlot *slot;
  void *dst;
  std::size_t capacity;
};

// After a staged receive's completion word: its bytes out of the slot into
// the device buffer, on the stream, then the slots back once the stream is
// past the copies.
int copy_out(Stream &s, const std::vector<StagedCopy> &copies, MPI_Comm comm, const char *func) {
  auto release = std::make_unique<Op>();
  release->type = OpType::kRelease;
  release->func = func;
  int rc = MPI_SUCCESS;
  for (const StagedCopy &c : copies) {
    if (rc == MPI_SUCCESS &&
        device::stage_from_host(s.trigger->cuda_stream(), c.dst, c.slot, c.capacity) != device::Status::kOk)
      rc = raise_error(comm, Err::kStreamNoGpu, func);
    release->release.push_back(c.slot);
  }
  const int rrc = enqueue(s, std::move(release), false, comm);
  return rc != MPI_SUCCESS ? rc : rrc;
}

int gpu_p2p(Stream &s, OpType type, const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, int peer, int tag,
            MPI_Comm comm, MPI_Status *status, MPI_Request *request, const char *func) {
  auto c = p2p::p2p_find(comm);
  if (!c || !c->handled()) return raise_error(comm, Err::kInternal, func);
  const bool send = type == OpType::kSend || type == OpType::kIsend;
  const int cls = send ? p2p::check_send_args(*c, sbuf, count, dtype, peer, tag)
                       : p2p::check_recv_args(*c, rbuf, count, dtype, peer, tag);
  if (cls != MPI_SUCCESS) return p2p::raise_class(comm, cls);
  const bool nonblocking = type == OpType::kIsend || type == OpType::kIrecv;
  if (nonblocking && request == nullptr) return p2p::raise_class(comm, MPI_ERR_REQUEST);
  stream_stats().host_driven.fetch_add(1, std::memory_order_relaxed);
  auto op = std::make_unique<Op>();
  op->type = type;
  op->func = func;
  op->sbuf = sbuf;
  op->rbuf = rbuf;
  op->count = count;
  op->peer = peer;
  op->tag = tag;
  op->comm = comm;
  op->status_out = status;
  // A small contiguous device message is copied on the stream itself, so
  // that the progress thread moves host memory only (no synchronous copy).
  device::StagedSlot *slot = nullptr;
  void *device_base = nullptr;
  std::size_t bytes = 0;
  const void *buf = send ? sbuf : rbuf;
  if (peer != MPI_PROC_NULL && buf != nullptr && device::is_device(buf)) {
    const progress::Layout l = progress::layout_of(dtype, count);
    if (l.contiguous && static_cast<std::size_t>(l.bytes) <= device::kStagedBytes) slot = s.queue->stage.take();
    if (slot != nullptr) {
      bytes = static_cast<std::size_t>(l.bytes);
      device_base = const_cast<char *>(static_cast<const char *>(buf)) + l.true_lb;
      if (send && device::stage_to_host(s.trigger->cuda_stream(), slot, device_base, bytes) != device::Status::kOk) {
        s.queue->stage.give(slot);
        return raise_error(comm, Err::kStreamNoGpu, func);
      }
      if (send) op->sbuf = slot->data;
      else op->rbuf = slot->data;
      op->count = static_cast<int>(bytes);
      dtype = MPI_BYTE;
      op->slot = slot;
      stream_stats().host_staged.fetch_add(1, std::memory_order_relaxed);
    }
  }
  hold_type(*op, dtype);
  std::shared_ptr<EnqRequest> r;
  if (nonblocking) {
    r = std::make_shared<EnqRequest>();
    r->stream = &s;
    r->recv = !send;
    r->slot = slot;
    r->user_buf = device_base;
    r->capacity = bytes;
    op->slot = nullptr;  // the request owns it from here
    if (new_handle(&r->handle) != MPI_SUCCESS)
      return raise_error(comm, Err::kInternal, func);
    op->req = r;
  }
  const int rc = enqueue(s, std::move(op), !nonblocking, comm);
  if (nonblocking) {
    if (rc != MPI_SUCCESS) {
      PMPI_Grequest_complete(r->handle);
      PMPI_Request_free(&r->handle);
      return rc;
    }
    enq_request_insert(r);
    *request = r->handle;
    return rc;
  }
  if (rc == MPI_SUCCESS && slot != nullptr && !send) return copy_out(s, {{slot, device_base, bytes}}, comm, func);
  return rc;
}

}  // namespace

void report(Stream &s, const Op &op, int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (PMPI_Error_string(rc, text, &len) != MPI_SUCCESS) std::snprintf(text, sizeof text, "error %d", rc);
  std::fprintf(stderr, "[mpix] %s (stream operation %u) failed: %s\n", op.func, op.seq, text);
  int none = 0;
  s.failed.compare_exchange_strong(none, rc, std::memory_order_acq_rel);
}

int raise_failure(Stream &s, MPI_Comm comm, const char *func) {
  if (s.failed.load(std::memory_order_acquire) == 0) return MPI_SUCCESS;
  const int rc = s.failed.exchange(0, std::memory_order_acq_rel);
  int cls = MPI_ERR_OTHER;
  PMPI_Error_class(rc, &cls);
  return raise_error(comm, cls == MPI_ERR_TRUNCATE ? Err::kStreamTruncate : Err::kStreamOpFailed, func);
}

StagePool::~StagePool() {
  for (device::StagedSlot *slot : all_) device::staged_slot_free(slot);
}

device::StagedSlot *StagePool::take() {
  std::lock_guard<std::mutex> g(mutex_);
  if (free_.empty()) {
    device::StagedSlot *slot = device::staged_slot_alloc();
    if (slot == nullptr) return nullptr;
    all_.push_back(slot);
    return slot;
  }
  device::StagedSlot *slot = free_.back();
  free_.pop_back();
  return slot;
}

void StagePool::give(device::StagedSlot *s) {
  if (s == nullptr) return;
  std::lock_guard<std::mutex> g(mutex_);
  free_.push_back(s);
}

bool gpu_stream_attach(const std::shared_ptr<Stream> &s) { return poller().add(s); }

void gpu_stream_detach(Stream *s) { poller().remove(s); }

bool gpu_stream_busy(Stream *s) {
  Queue &q = *s->queue;
  std::lock_guard<std::mutex> g(q.mutex);
  return !q.ops.empty() || q.running_count.load(std::memory_order_acquire) > 0;
}

int new_handle(MPI_Request *h) { return PMPI_Grequest_start(greq_query, greq_free, greq_cancel, nullptr, h); }

void enq_request_insert(const std::shared_ptr<EnqRequest> &r) {
  static std::once_flag once;
  std::call_once(once, [] {
    p2p::enqueued_handles_register([](MPI_Request h) { return enq_request_find(h) != nullptr; });
  });
  RequestTable &t = requests();
  std::lock_guard<std::mutex> g(t.mutex);
  t.live[request_key(r->handle)] = r;
  p2p::enqueued_handles_add(1);
}

std::shared_ptr<EnqRequest> enq_request_find(MPI_Request h) {
  if (h == MPI_REQUEST_NULL) return nullptr;
  RequestTable &t = requests();
  std::lock_guard<std::mutex> g(t.mutex);
  auto it = t.live.find(request_key(h));
  return it == t.live.end() ? nullptr : it->second;
}

void enq_request_retire(EnqRequest &r) {
  {
    RequestTable &t = requests();
    std::lock_guard<std::mutex> g(t.mutex);
    if (t.live.erase(request_key(r.handle)) > 0) p2p::enqueued_handles_add(-1);
  }
  // The operation itself goes on; only the handle, which the application
  // gave up, returns to MPI.
  PMPI_Grequest_complete(r.handle);
  PMPI_Request_free(&r.handle);
}

}  // namespace mpix::stream

// ---- the API ----

namespace {

int enqueue_p2p(OpType type, const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, int peer, int tag,
                MPI_Comm comm, MPI_Status *status, MPI_Request *request, const char *func) {
  StreamComm *sc = nullptr;
  if (const int rc = resolve(comm, func, &sc)) return rc;
  Stream *s = sc->stream;
  StreamClaim claim(s);
  if (!claim.ok()) return raise_error(comm, Err::kStreamConcurrent, func);
  // A host stream's operations run at once, in call order, on this thread.
  if (!s->gpu()) {
    switch (type) {
      case OpType::kSend: return MPI_Send(sbuf, count, dtype, peer, tag, comm);
      case OpType::kRecv: return MPI_Recv(rbuf, count, dtype, peer, tag, comm, status);
      case OpType::kIsend: return MPI_Isend(sbuf, count, dtype, peer, tag, comm, request);
      case OpType::kIrecv: return MPI_Irecv(rbuf, count, dtype, peer, tag, comm, request);
      default: return raise_error(comm, Err::kInternal, func);
    }
  }
  if (sc->kernel) return sc->kernel->p2p(*s, type, sbuf, rbuf, count, dtype, peer, tag, comm, status, request, func);
  return gpu_p2p(*s, type, sbuf, rbuf, count, dtype, peer, tag, comm, status, request, func);
}

void write_empty(MPI_Status *st) {
  if (st != MPI_STATUS_IGNORE) empty_status(st);
}

// MPIX_Wait_enqueue / MPIX_Waitall_enqueue on the requests of stream s
// (nullptr entries: MPI_REQUEST_NULL), outs[i] the status of reqs[i].
// GPU-run requests wait in kernels (one per communicator); host-driven ones
// in one operation of the progress thread; statuses of GPU-run receives are
// copied last, by the progress thread, only where the application asked.
int wait_enqueued(Stream &s, const std::vector<std::shared_ptr<EnqRequest>> &reqs,
                  const std::vector<MPI_Status *> &outs, bool waitall, MPI_Status *statuses, const char *func) {
  std::vector<KernelComm *> comms;
  bool host = false;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const auto &r = reqs[i];
    if (!r) {
      write_empty(outs[i]);
      continue;
    }
    if (r->kernel == nullptr) host = true;
    else if (std::find(comms.begin(), comms.end(), r->kernel) == comms.end()) comms.push_back(r->kernel);
  }
  std::vector<StatusFill> fills;
  for (KernelComm *k : comms)
    if (const int rc = k->wait(reqs, outs, &fills, func)) return rc;
  if (host) {
    auto op = std::make_unique<Op>();
    op->type = OpType::kWait;
    op->func = func;
    for (const auto &r : reqs) op->waits.push_back(r && r->kernel == nullptr ? r : nullptr);
    op->waitall = waitall;
    op->statuses_out = statuses;
    op->status_out = waitall ? MPI_STATUS_IGNORE : outs[0];
    if (const int rc = enqueue(s, std::move(op), true, MPI_COMM_SELF)) return rc;
    std::vector<StagedCopy> copies;
    for (const auto &r : reqs)
      // The slot stays named by the request: the progress thread still
      // writes the received size into it when the receive completes.
      if (r && r->kernel == nullptr && r->recv && r->slot != nullptr) copies.push_back({r->slot, r->user_buf, r->capacity});
    if (!copies.empty())
      if (const int rc = copy_out(s, copies, MPI_COMM_SELF, func)) return rc;
  }
  const bool results = std::any_of(fills.begin(), fills.end(), [](const StatusFill &f) { return f.result != nullptr; });
  if (!results) {
    // Nothing the GPU writes: the statuses are known now.
    for (const StatusFill &f : fills) {
      write_empty(f.out);
      f.out->MPI_SOURCE = f.source;
      f.out->MPI_TAG = f.tag;
    }
    return MPI_SUCCESS;
  }
  auto op = std::make_unique<Op>();
  op->type = OpType::kStatus;
  op->func = func;
  op->fills = std::move(fills);
  return enqueue(s, std::move(op), true, MPI_COMM_SELF);
}

}  // namespace

int MPIX_Send_enqueue(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return enqueue_p2p(OpType::kSend, buf, nullptr, count, datatype, dest, tag, comm, MPI_STATUS_IGNORE, nullptr,
                     __func__);
}

int MPIX_Recv_enqueue(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                      MPI_Status *status) {
  return enqueue_p2p(OpType::kRecv, nullptr, buf, count, datatype, source, tag, comm, status, nullptr, __func__);
}

int MPIX_Isend_enqueue(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                       MPI_Request *request) {
  return enqueue_p2p(OpType::kIsend, buf, nullptr, count, datatype, dest, tag, comm, MPI_STATUS_IGNORE, request,
                     __func__);
}

int MPIX_Irecv_enqueue(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                       MPI_Request *request) {
  return enqueue_p2p(OpType::kIrecv, nullptr, buf, count, datatype, source, tag, comm, MPI_STATUS_IGNORE, request,
                     __func__);
}

int MPIX_Wait_enqueue(MPI_Request *request, MPI_Status *status) {
  if (!runtime_active()) return raise_error(MPI_COMM_SELF, Err::kNotInitialized, __func__);
  if (request == nullptr) return raise_error(MPI_COMM_SELF, Err::kInvalidArg, __func__);
  auto r = enq_request_find(*request);
  // Requests of host streams are ordinary requests, completed at once.
  if (!r) return MPI_Wait(request, status);
  Stream &s = *r->stream;
  StreamClaim claim(&s);
  if (!claim.ok()) return raise_error(MPI_COMM_SELF, Err::kStreamConcurrent, __func__);
  if (const int rc = raise_failure(s, MPI_COMM_SELF, __func__)) return rc;
  if (const int rc = wait_enqueued(s, {r}, {status}, false, MPI_STATUSES_IGNORE, __func__)) return rc;
  enq_request_retire(*r);
  *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

int MPIX_Waitall_enqueue(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]) {
  if (!runtime_active()) return raise_error(MPI_COMM_SELF, Err::kNotInitialized, __func__);
  if (count < 0 || (count > 0 && array_of_requests == nullptr))
    return raise_error(MPI_COMM_SELF, Err::kInvalidArg, __func__);
  std::vector<std::shared_ptr<EnqRequest>> found(static_cast<std::size_t>(count));
  Stream *s = nullptr;
  int ours = 0, theirs = 0;
  for (int i = 0; i < count; ++i) {
    if (array_of_requests[i] == MPI_REQUEST_NULL) continue;
    found[i] = enq_request_find(array_of_requests[i]);
    if (!found[i]) {
      ++theirs;
      continue;
    }
    // All from one stream: the wait happens in that stream's order.
    if (s != nullptr && found[i]->stream != s) return raise_error(MPI_COMM_SELF, Err::kStreamRequest, __func__);
    s = found[i]->stream;
    ++ours;
  }
  if (ours == 0) return MPI_Waitall(count, array_of_requests, array_of_statuses);
  if (theirs > 0) return raise_error(MPI_COMM_SELF, Err::kStreamRequest, __func__);
  StreamClaim claim(s);
  if (!claim.ok()) return raise_error(MPI_COMM_SELF, Err::kStreamConcurrent, __func__);
  if (const int rc = raise_failure(*s, MPI_COMM_SELF, __func__)) return rc;
  std::vector<MPI_Status *> outs(static_cast<std::size_t>(count), MPI_STATUS_IGNORE);
  if (array_of_statuses != MPI_STATUSES_IGNORE)
    for (int i = 0; i < count; ++i) outs[i] = &array_of_statuses[i];
  if (const int rc = wait_enqueued(*s, found, outs, true, array_of_statuses, __func__)) return rc;
  for (int i = 0; i < count; ++i) {
    if (!found[i]) continue;
    enq_request_retire(*found[i]);
    array_of_requests[i] = MPI_REQUEST_NULL;
  }
  return MPI_SUCCESS;
}
