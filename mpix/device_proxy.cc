#include "device_proxy.h"

#include <cstdio>
#include <cstring>

#include "device/devcomm.h"
#include "proxy_desc.h"
#include "src/p2p/engine.h"
#include "src/p2p/request.h"

namespace mpix::devproxy {

std::unique_ptr<ProxyQueue> ProxyQueue::create(MPI_Comm comm, MPIX_Device_comm *h, std::uint32_t slots,
                                               std::uint32_t inline_bytes, bool host_memory) {
  auto q = std::make_unique<ProxyQueue>();
  q->comm_ = comm;
  q->mask_ = slots - 1;
  const std::size_t ring = std::size_t(slots) * sizeof(mpixd_pdesc);
  const std::size_t sq = std::size_t(slots) * sizeof(std::uint64_t);
  // Host side: descriptors, completions, a line for the credit, the
  // submission ring, bounce buffers. Device side: the ticket counter, then
  // the slot bitmap.
  const std::size_t bytes = 2 * ring + 128 + sq + std::size_t(slots) * inline_bytes;
  const std::size_t dev_bytes = 128 + (std::size_t(slots) + 31) / 32 * 4;
  unsigned char *base = nullptr, *dev = nullptr;
  if (host_memory) {
    q->host_ = std::make_unique<unsigned char[]>(bytes + dev_bytes + 128);
    base = q->host_.get() + (64 - reinterpret_cast<std::uintptr_t>(q->host_.get()) % 64) % 64;
    std::memset(base, 0, bytes + dev_bytes + 64);
    dev = base + (bytes + 63) / 64 * 64;
  } else {
    q->mapped_ = device::mapped_alloc(bytes);
    q->dev_ = device::device_alloc_zero(dev_bytes);
    if (q->mapped_ == nullptr || q->dev_ == nullptr) return nullptr;
    base = static_cast<unsigned char *>(q->mapped_);
    dev = static_cast<unsigned char *>(q->dev_);
  }
  h->pq_slots = slots;
  h->pq = reinterpret_cast<mpixd_pdesc *>(base);
  h->pc = reinterpret_cast<mpixd_pcomp *>(base + ring);
  h->pq_credit = reinterpret_cast<std::uint32_t *>(base + 2 * ring);
  h->pq_sq = reinterpret_cast<std::uint64_t *>(base + 2 * ring + 128);
  h->pq_bounce = base + 2 * ring + 128 + sq;
  h->pq_inline = inline_bytes;
  h->pq_tail = reinterpret_cast<std::uint32_t *>(dev);
  h->pq_pool = reinterpret_cast<std::uint32_t *>(dev + 128);
  q->h_ = *h;
  q->limits_ = ProxyLimits{slots, inline_bytes, h->size, h->tag_ub};
  q->reqs_.assign(slots, MPI_REQUEST_NULL);
  q->ours_.assign(slots, nullptr);
  q->tickets_.assign(slots, 0);
  q->attached_ = progress::thread_attach(q.get());
  if (!q->attached_) return nullptr;
  progress::thread_wake();
  return q;
}

ProxyQueue::~ProxyQueue() {
  if (attached_) progress::thread_detach(this);
  // Operations still running belong to a communicator being freed with
  // device operations unfinished (a usage error): let MPI finish them alone,
  // without telling us.
  {
    auto lock = p2p::engine_lock();
    for (std::size_t s = 0; s < reqs_.size(); ++s)
      if (reqs_[s] != MPI_REQUEST_NULL && ours_[s] != nullptr) ours_[s]->watcher = nullptr;
  }
  for (MPI_Request &r : reqs_)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  device::mapped_free(mapped_);
  device::device_free(dev_);
}

void ProxyQueue::complete(std::uint32_t slot, int status, std::uint64_t bytes) {
  mpixd_pcomp *c = h_.pc + slot;
  c->status = status;
  c->bytes = bytes;
  mpixd_store_release(&c->seq, tickets_[slot] + 1);
}

void ProxyQueue::start(std::uint32_t slot, std::uint32_t t) {
  mpixd_pdesc *d = h_.pq + slot;
  mpixd_pcomp *c = h_.pc + slot;
  tickets_[slot] = t;
  ProxyOp o;
  const int bad = decode_proxy_desc(d, sizeof *d, t, limits_, &o);
  if (bad != MPIX_DEVICE_SUCCESS) {
    complete(slot, bad, 0);
    return;
  }
  void *buf = o.data == ProxyData::kUser     ? reinterpret_cast<void *>(static_cast<std::uintptr_t>(o.buf))
              : o.data == ProxyData::kBounce ? static_cast<void *>(mpixd_proxy_bounce(&h_, slot))
              : o.op == MPIXD_OP_SEND        ? static_cast<void *>(d->data)
                                             : static_cast<void *>(c->data);
  // Through the intercepted entry points: mpix's engine (and its GPU paths
  // for device buffers) carries the communicator, and host calls on it match.
  const int rc = o.op == MPIXD_OP_SEND ? MPI_Isend(buf, o.count, MPI_BYTE, o.peer, o.tag, comm_, &reqs_[slot])
                                       : MPI_Irecv(buf, o.count, MPI_BYTE, o.peer, o.tag, comm_, &reqs_[slot]);
  if (rc != MPI_SUCCESS) {
    reqs_[slot] = MPI_REQUEST_NULL;
    complete(slot, MPIX_DEVICE_ERR_ARG, 0);
    return;
  }
  ++running_;
  // Looked up once: it lives until our MPI_Test concludes it. Finishing
  // happens under the engine lock, so it either happened already (an eager
  // send finishes inside MPI_Isend) or tells the watcher set here.
  auto lock = p2p::engine_lock();
  p2p::Request *q = p2p::request_lookup(reqs_[slot]);
  // A lane request (src/p2p/lanes.h) completes under its lane's lock, not
  // through Request::finish: no watcher hears of it, so it is tested.
  if (q != nullptr && q->lane) q = nullptr;
  ours_[slot] = q;
  if (q == nullptr) {
    unwatched_.push_back(slot);
  } else if (q->done()) {
    done_.push_back(slot);
  } else {
    q->watcher = this;
    q->watch_cookie = slot;
  }
}

void ProxyQueue::request_done(std::uint64_t slot) { done_.push_back(static_cast<std::uint32_t>(slot)); }

bool ProxyQueue::conclude(std::uint32_t slot) {
  MPI_Request &r = reqs_[slot];
  int flag = 0;
  MPI_Status st;
  // MPI_Test, not the engine's internals: an error (truncation of a
  // receive) goes through the communicator's error handler as for any host
  // call, and MPI_ERRORS_RETURN brings it back here as the device status.
  const int rc = MPI_Test(&r, &flag, &st);
  if (!flag && rc == MPI_SUCCESS) return false;
  int count = 0;
  PMPI_Get_count(&st, MPI_BYTE, &count);
  int cls = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) PMPI_Error_class(rc, &cls);
  const int status = rc == MPI_SUCCESS ? MPIX_DEVICE_SUCCESS
                     : cls == MPI_ERR_TRUNCATE ? MPIX_DEVICE_ERR_TRUNCATE
                                               : MPIX_DEVICE_ERR_ARG;
  r = MPI_REQUEST_NULL;
  --running_;
  complete(slot, status, count < 0 ? 0 : static_cast<std::uint64_t>(count));
  return true;
}

int ProxyQueue::poll() {
  int moved = 0;
  // Submissions in ticket order, taken at once (each names its slot).
  for (;;) {
    const std::uint64_t e = mpixd_load_acquire64(h_.pq_sq + (head_ & mask_));
    std::uint32_t slot = 0;
    bool valid = false;
    if (!decode_submission(e, head_, h_.pq_slots, &slot, &valid)) break;
    // A slot that does not exist, or whose operation still runs, has no
    // completion record this ticket may write: reported, never started.
    if (!valid || reqs_[slot] != MPI_REQUEST_NULL) {
      std::fprintf(stderr, "[mpix] device proxy: dropped submission %u naming %s slot %u\n", head_,
                   valid ? "busy" : "no", slot);
    } else {
      start(slot, head_);
    }
    ++head_;
    ++moved;
  }
  if (moved > 0) mpixd_store_release(h_.pq_credit, head_);
  // One progress step for all operations in flight (MPI_Test on an
  // unfinished request would make a step of its own each), then MPI_Test
  // only on those that finished: the watcher told us which, so a poll costs
  // what moved, not what is in flight.
  {
    auto lock = p2p::engine_lock();
    if (running_ > 0) p2p::progress_poll();
    finished_.swap(done_);
  }
  for (const std::uint32_t slot : finished_) {
    // Finished means MPI_Test concludes it; should it not, test it again
    // next time like one of MPI's own.
    if (conclude(slot)) ++moved;
    else unwatched_.push_back(slot);
  }
  finished_.clear();
  for (std::size_t i = 0; i < unwatched_.size();) {
    if (conclude(unwatched_[i])) {
      ++moved;
      unwatched_[i] = unwatched_.back();
      unwatched_.pop_back();
    } else {
      ++i;
    }
  }
  return moved;
}

}  // namespace mpix::devproxy
