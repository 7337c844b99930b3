// The host side of GPU-run *_enqueue operations (see enqueue_kernel.h):
// argument checks, numbering, buffers, requests, failures.
#include "enqueue_kernel.h"

#include <algorithm>
#include <cstdio>

#include "device_handle.h"
#include "enqueue.h"
#include "device/memtype.h"
#include "progress/datatype.h"
#include "src/errors.h"
#include "src/mpi/api_common.h"
#include "src/runtime_state.h"
#include "stream_pull.h"

namespace mpix::stream {
namespace {

// A buffer as a kernel sees it: device and mapped host memory directly;
// pageable host memory through a device copy allocated in stream order.
struct KernelBuffer {
  const void *view = nullptr;
  void *staged = nullptr;
};

bool stage_if_pageable(device::StreamExec &x, const void *p, std::size_t bytes, bool copy_in, KernelBuffer *b) {
  b->view = p;
  if (bytes == 0 || p == nullptr) return true;
  if (device::buffer_kind(p, &b->view) != device::BufferKind::kPageable) return true;
  b->staged = x.stage(bytes);
  if (b->staged == nullptr) return false;
  b->view = b->staged;
  return !copy_in || x.copy(b->staged, p, bytes) == device::Status::kOk;
}

// Out of the staging copy into the application's pageable buffer, then the
// staging memory goes (both in stream order; a copy into pageable memory
// returns once done, so this waits for the stream to get there).
void unstage(device::StreamExec &x, void *staged, void *user, std::size_t bytes) {
  if (staged == nullptr) return;
  if (user != nullptr) x.copy(user, staged, bytes);
  x.unstage(staged);
}

bool verbose() { return runtime().config.verbose >= 2; }

}  // namespace

std::unique_ptr<KernelComm> KernelComm::create(MPI_Comm comm, Stream *s) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  int mine = s != nullptr && s->gpu() && !runtime().config.stream_host_path && !inter ? 1 : 0;
  int all = 0;
  PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  if (!all) return nullptr;
  // The mailbox goes on the stream's GPU.
  s->trigger->make_current();
  std::unique_ptr<KernelComm> k(new KernelComm());  // NOLINT: private constructor
  // Rings of fewer, larger blocks than device handles' default (the same
  // 32 MiB per peer): a stream's operations are few and large next to a
  // kernel's thousands of threads, and a transfer's cost is per block.
  // A large message moves by MPIX_STREAM_WIDE_BLOCKS blocks a side, each
  // on chunks j mod blocks, so the ring holds a chunk per block (fewer
  // channels as it grows).
  devhandle::Layout layout = devhandle::layout_from_config();
  const unsigned wide = static_cast<unsigned>(runtime().config.stream_wide_blocks);
  layout.ring = std::max(16u, wide);
  layout.channels = std::max(1u, 128u / layout.ring);
  layout.slot_bytes = 256 * 1024;
  // No lanes: a stream runs its operations in order, so a ninth send of a
  // key queued before the receive that frees its lane cell would stop the
  // stream for good (sends to self before their receives, as
  // test/gpu/stream_enqueue does with distinct tags); the table holds
  // thousands. Stream operations are numbered on the host and need no
  // numbering atomic anyway.
  layout.lane_tags = 0;
  const Err e = devhandle::create(comm, /*ipc_only=*/true, layout, &k->dev_);
  if (e != Err::kCount || !k->dev_) {
    if (verbose() && e != Err::kCount) std::fprintf(stderr, "[mpix] stream communicator: %s; host-driven path\n", error_text(e));
    return nullptr;
  }
  device::Status st = device::Status::kOk;
  k->exec_ = device::StreamExec::create(s->trigger->cuda_stream(), k->dev_->h, wide, &st);
  int ok = k->exec_ != nullptr ? 1 : 0;
  PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
  // All ranks agree, so all destroy their mailboxes together (collective).
  if (!ok) return nullptr;
  // On every rank whatever MPIX_STREAM_PULL_MIN says (its destruction is
  // collective); the setting only decides what a sender pulls.
  k->pull_ = std::make_unique<PullLinks>(k->dev_->sync, k->dev_->h, device::query(k->dev_->h.local).device);
  // Peers share the setting: receives below the bound are never pulled.
  const long pull_min = runtime().config.stream_pull_min;
  k->exec_->group_receives_from(pull_min > 0 ? static_cast<std::size_t>(pull_min) : 0);
  return k;
}

KernelComm::~KernelComm() = default;

bool KernelComm::pull_ready(const void *buf, std::size_t bytes, int peer, std::uint32_t *export_id,
                            std::uint64_t *offset, std::uint32_t *gen) {
  const long min = runtime().config.stream_pull_min;
  // Above a table entry at least: the receive tells a pulled entry from an
  // inline one by its channel only past MPIXD_INLINE.
  if (min <= 0 || bytes < static_cast<std::size_t>(min) || bytes <= MPIXD_INLINE || !pull_) return false;
  // 32-bit sizes in the table entry.
  if (bytes > 0xffffffffu) return false;
  return peer != dev_->h.rank && pull_->ready(buf, peer, export_id, offset) && pull_->take_gen(peer, gen);
}

int KernelComm::launch_failed(MPI_Comm comm, const char *func) {
  std::fprintf(stderr, "[mpix] %s (stream operation %u): launching its kernel on the stream failed\n", func,
               next_op_);
  return raise_error(comm, Err::kStreamOpFailed, func);
}

int KernelComm::raise_failure(MPI_Comm comm, const char *func) {
  device::ExecFailure f{};
  if (!exec_->take_failure(&f)) return MPI_SUCCESS;
  const char *what = f.code == MPIX_DEVICE_ERR_TRUNCATE ? "message longer than the receive buffer (truncated)"
                     : f.code == MPIX_DEVICE_ERR_KEYS   ? "too many (peer, tag) pairs"
                                                        : "invalid argument or request";
  std::fprintf(stderr, "[mpix] stream operation %u failed when the GPU ran it: %s (device code %d)\n", f.op, what,
               f.code);
  return raise_error(comm, f.code == MPIX_DEVICE_ERR_TRUNCATE ? Err::kStreamTruncate : Err::kStreamOpFailed, func);
}

int KernelComm::p2p(Stream &s, OpType type, const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, int peer,
                    int tag, MPI_Comm comm, MPI_Status *status, MPI_Request *request, const char *func) {
  if (const int rc = raise_failure(comm, func)) return rc;
  const bool send = type == OpType::kSend || type == OpType::kIsend;
  const bool nonblocking = type == OpType::kIsend || type == OpType::kIrecv;
  auto c = p2p::p2p_find(comm);
  if (!c) return raise_error(comm, Err::kInternal, func);
  if (!send)
    if (const int rc = p2p::check_pattern(comm, *c, peer, tag, func)) return rc;
  const int cls = send ? p2p::check_send_shape(*c, sbuf, count, dtype, peer, tag)
                       : p2p::check_recv_shape(*c, rbuf, count, dtype, peer, tag);
  if (cls != MPI_SUCCESS) return p2p::raise_class(comm, cls);
  if (nonblocking && request == nullptr) return p2p::raise_class(comm, MPI_ERR_REQUEST);
  const progress::Layout layout = progress::layout_of(dtype, count);
  if (!layout.contiguous) return raise_error(comm, Err::kStreamType, func);
  const std::size_t bytes = static_cast<std::size_t>(layout.bytes);
  const char *base = static_cast<const char *>(send ? sbuf : rbuf);
  if (base != nullptr) base += layout.true_lb;
  device::StreamExec &x = *exec_;
  const std::uint32_t op = ++next_op_;

  if (peer == MPI_PROC_NULL) {  // nothing to move, nothing to number
    if (!send && status != MPI_STATUS_IGNORE) {
      PMPI_Status_set_elements(status, MPI_BYTE, 0);
      status->MPI_SOURCE = MPI_PROC_NULL;
      status->MPI_TAG = MPI_ANY_TAG;
      status->MPI_ERROR = MPI_SUCCESS;
    }
    if (nonblocking) {
      auto r = std::make_shared<EnqRequest>();
      r->stream = &s;
      r->kernel = this;
      r->peer = MPI_PROC_NULL;
      if (new_handle(&r->handle) != MPI_SUCCESS)
        return raise_error(comm, Err::kInternal, func);
      enq_request_insert(r);
      *request = r->handle;
    }
    return MPI_SUCCESS;
  }

  // Offers and confirmations of pulled buffers are taken on large
  // operations (which pull) and now and then, off the small ones' path.
  if (pull_ && ((op & 63u) == 0 || (runtime().config.stream_pull_min > 0 &&
                                    bytes >= static_cast<std::size_t>(runtime().config.stream_pull_min))))
    pull_->poll();
  KernelBuffer b;
  if (!stage_if_pageable(x, base, bytes, send, &b)) return launch_failed(comm, func);
  const std::uint32_t seq = send ? sends_.next(peer, tag) : recvs_.next(peer, tag);
  stream_stats().gpu_run.fetch_add(1, std::memory_order_relaxed);

  if (!nonblocking) {
    device::ExecResult *result = nullptr;
    if (!send && status != MPI_STATUS_IGNORE && (result = x.take_result()) == nullptr)
      return launch_failed(comm, func);
    std::uint32_t export_id = 0, gen = 0;
    std::uint64_t offset = 0;
    const bool pulled = send && b.staged == nullptr && pull_ready(b.view, bytes, peer, &export_id, &offset, &gen);
    if (pulled) {
      stream_stats().pulled.fetch_add(1, std::memory_order_relaxed);
      pull_->give_gen(peer, gen);  // the stream finishes this send before anything later
    }
    const device::Status st = pulled ? x.send_pull(b.view, bytes, peer, tag, seq, op, export_id, offset, gen)
                              : send ? x.send(b.view, bytes, peer, tag, seq, op)
                                     : x.recv(const_cast<void *>(b.view), bytes, peer, tag, seq, op, result);
    if (st != device::Status::kOk) {
      x.give_back(result);
      return launch_failed(comm, func);
    }
    unstage(x, b.staged, send ? nullptr : rbuf, bytes);
    if (result == nullptr) return MPI_SUCCESS;
    // The status is the application's host memory: the progress thread
    // copies it, and the stream waits for that.
    auto fill = std::make_unique<Op>();
    fill->type = OpType::kStatus;
    fill->func = func;
    fill->fills.push_back(StatusFill{result, status, peer, tag, bytes, &x});
    return enqueue(s, std::move(fill), true, comm);
  }

  auto r = std::make_shared<EnqRequest>();
  r->stream = &s;
  r->kernel = this;
  r->recv = !send;
  r->peer = peer;
  r->tag = tag;
  r->capacity = bytes;
  r->staged = b.staged;
  r->user_buf = send ? nullptr : rbuf;
  r->dreq = x.take_request();
  if (r->dreq == nullptr) {
    unstage(x, b.staged, nullptr, 0);
    return launch_failed(comm, func);
  }
  std::uint32_t export_id = 0;
  std::uint64_t offset = 0;
  const bool pulled = send && b.staged == nullptr && runtime().config.stream_pull_nonblocking &&
                      pull_ready(b.view, bytes, peer, &export_id, &offset, &r->pull_gen);
  if (pulled) stream_stats().pulled.fetch_add(1, std::memory_order_relaxed);
  else r->pull_gen = 0;
  const device::Status st = pulled ? x.isend_pull(r->dreq, b.view, bytes, peer, tag, seq, export_id, offset,
                                                  r->pull_gen)
                            : send ? x.isend(r->dreq, b.view, bytes, peer, tag, seq)
                                   : x.irecv(r->dreq, const_cast<void *>(b.view), bytes, peer, tag, seq);
  if (st != device::Status::kOk) {
    if (pulled) pull_->give_gen(peer, r->pull_gen);
    x.give_back(r->dreq);
    unstage(x, b.staged, nullptr, 0);
    return launch_failed(comm, func);
  }
  // A valid handle that the MPI library will never complete by itself.
  if (new_handle(&r->handle) != MPI_SUCCESS)
    return raise_error(comm, Err::kInternal, func);
  enq_request_insert(r);
  *request = r->handle;
  return MPI_SUCCESS;
}

int KernelComm::wait(const std::vector<std::shared_ptr<EnqRequest>> &reqs, const std::vector<MPI_Status *> &outs,
                     std::vector<StatusFill> *fills, const char *func) {
  device::StreamExec &x = *exec_;
  if (const int rc = raise_failure(MPI_COMM_SELF, func)) return rc;
  std::vector<device::DeviceRequest> dreqs;
  std::vector<device::ExecResult *> results;
  std::vector<EnqRequest *> mine;
  bool want_status = false;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    EnqRequest *r = reqs[i].get();
    if (r == nullptr || r->kernel != this) continue;
    MPI_Status *out = outs[i];
    if (r->dreq == nullptr) {  // MPI_PROC_NULL: nothing ran
      if (out != MPI_STATUS_IGNORE)
        fills->push_back(StatusFill{nullptr, out, r->recv ? MPI_PROC_NULL : MPI_ANY_SOURCE, MPI_ANY_TAG, 0, &x});
      continue;
    }
    device::ExecResult *res = nullptr;
    if (out != MPI_STATUS_IGNORE && r->recv) {
      res = x.take_result();
      if (res == nullptr) return launch_failed(MPI_COMM_SELF, func);
      want_status = true;
    }
    if (out != MPI_STATUS_IGNORE)
      fills->push_back(StatusFill{res, out, r->recv ? r->peer : MPI_ANY_SOURCE, r->recv ? r->tag : MPI_ANY_TAG,
                                  r->capacity, &x});
    dreqs.push_back(r->dreq);
    results.push_back(res);
    mine.push_back(r);
  }
  if (dreqs.empty()) return MPI_SUCCESS;
  if (!want_status) results.clear();
  const std::uint32_t op = ++next_op_;
  if (x.wait(dreqs, results, op) != device::Status::kOk) return launch_failed(MPI_COMM_SELF, func);
  for (EnqRequest *r : mine) {
    unstage(x, r->staged, r->user_buf, r->capacity);
    r->staged = nullptr;
    // Reused only by operations enqueued later, which the stream runs after
    // this wait (the pulled send's done word too).
    x.give_back(r->dreq);
    r->dreq = nullptr;
    if (r->pull_gen != 0) pull_->give_gen(r->peer, r->pull_gen);
    r->pull_gen = 0;
  }
  return MPI_SUCCESS;
}

}  // namespace mpix::stream
