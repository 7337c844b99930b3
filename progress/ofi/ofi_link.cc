#include "ofi_link.h"

#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstring>

#include "progress/datatype.h"

namespace mpix::progress::ofi {
namespace {

// Eager sends from a copy of ours whose requests already completed.
// Past the bound a nonblocking send's request waits for its transfer
// instead (from the caller's buffer), so a sender that outruns its
// receiver is throttled through its own requests, as natively.
constexpr long kCopiesMax = 4096;
long g_copies = 0;  // under the engine lock

// The descriptors of up to two buffers the provider reads (FI_MR_LOCAL
// providers only; else null).
struct Descs {
  Registration reg[2];
  void *desc[2] = {nullptr, nullptr};
  int add(Fabric &f, int i, const void *buf, std::size_t n, std::uint64_t access) {
    const int rc = f.local(buf, n, access, &reg[i]);
    desc[i] = reg[i].desc();
    return rc;
  }
};

// An eager message that went from a copy, or from the caller's buffer with
// `done` waiting for it (tied).
class EagerOp final : public Op {
 public:
  EagerOp(const Envelope &e, Pending *tied) : env(e), done(tied), copied(tied == nullptr) {
    if (copied) ++g_copies;
  }
  ~EagerOp() override {
    if (copied) --g_copies;
  }
  void complete(int err, std::size_t) override {
    const int rc = mpi_error(err, "eager send");
    if (done != nullptr) done->on_complete(make_status(rc, 0));
    delete this;  // NOLINT: self-owned while in flight
  }
  void abandon() override { done = nullptr; }
  Envelope env;
  std::unique_ptr<char[]> data;  // envelope + payload, when copied
  Pending *done;
  const bool copied;
  Context ctx;
  Descs descs;
};

// An eager synchronous send: done once it left and its receiver matched it.
class SyncOp final : public Op {
 public:
  SyncOp(const Envelope &e, Pending *d) : env(e), done(d) {}
  void complete(int err, std::size_t) override {
    sent = true;
    if (err != 0) {
      error = mpi_error(err, "synchronous send");
      fabric()->forget_ack(env.cookie);
      acked = true;  // no ack will come for a message that did not leave
    }
    if (acked) finish();
  }
  void acknowledged() override {
    acked = true;
    if (sent) finish();
  }
  void peer_exited() override {
    error = MPI_ERR_OTHER;
    acknowledged();
  }
  void abandon() override { done = nullptr; }
  bool local() const override { return false; }
  void finish() {
    if (done != nullptr) done->on_complete(make_status(error, 0));
    delete this;  // NOLINT: self-owned until sent and acknowledged
  }
  Envelope env;
  std::unique_ptr<char[]> data;  // envelope + payload, for providers without iov
  Pending *done;
  Context ctx;
  Descs descs;
  bool sent = false, acked = false;
  int error = MPI_SUCCESS;
};

// A rendezvous send: its data stays registered until the receiver read it
// and said so (rendezvous-done), or discarded it.
class RndvOp final : public Op {
 public:
  explicit RndvOp(Pending *d) : done(d) { fabric()->hold(); }
  ~RndvOp() override {
    if (Fabric *f = fabric()) f->release();
  }
  void complete(int err, std::size_t) override {
    sent = true;
    if (err != 0) {
      error = mpi_error(err, "rendezvous envelope");
      fabric()->forget_ack(env.cookie);
      acked = true;
    }
    if (acked) finish();
  }
  void acknowledged() override {
    acked = true;
    if (sent) finish();
  }
  void peer_exited() override {
    error = MPI_ERR_OTHER;
    acknowledged();
  }
  void abandon() override { done = nullptr; }
  bool local() const override { return false; }
  void finish() {
    if (done != nullptr) done->on_complete(make_status(error, 0));
    delete this;  // NOLINT: self-owned until read
  }
  Envelope env{};
  Registration exposed;
  std::unique_ptr<char[]> owned;  // buffered or non-contiguous data
  Pending *done;
  Context ctx;
  Descs descs;
  bool sent = false, acked = false;
  int error = MPI_SUCCESS;
};

// The read of a rendezvous payload, into the user's buffer or, when it is
// not contiguous, into a copy unpacked at the end; then rendezvous-done to
// the sender. Only what fits is read (the rest: MPI_ERR_TRUNCATE), so a
// peer's claimed size never sizes an allocation here.
class PullOp final : public Op {
 public:
  void complete(int err, std::size_t) override {
    if (err != 0 && error == MPI_SUCCESS) error = mpi_error(err, "rendezvous read");
    if (--remaining > 0) return;
    if (error == MPI_SUCCESS && temp && got > 0) {
      const int rc = unpack_bytes(temp.get(), static_cast<int>(got), buf, count, dtype, comm);
      if (rc != MPI_SUCCESS) error = rc;
    }
    fabric()->send_control(world, kFrameRendezvousDone, 0, cookie);
    const int rc = error != MPI_SUCCESS ? error : truncated ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
    if (done != nullptr) done->on_complete(make_status(rc, error != MPI_SUCCESS ? 0 : got));
    delete this;  // NOLINT: self-owned while in flight
  }
  void abandon() override { done = nullptr; }
  Pending *done = nullptr;
  void *buf = nullptr;
  MPI_Datatype dtype = MPI_DATATYPE_NULL;
  int count = 0;  // elements of the receive
  MPI_Comm comm = MPI_COMM_NULL;
  Layout layout;
  std::size_t got = 0;
  bool truncated = false;
  std::unique_ptr<char[]> temp;
  Registration reg;
  std::vector<Context> ctxs;  // one per chunk; never resized once posted
  int remaining = 0;
  int error = MPI_SUCCESS;
  int world = 0;
  std::uint64_t cookie = 0;
};

}  // namespace

OfiLink::OfiLink(Fabric &f, const LinkParams &params, std::vector<int> world, int rank)
    : LinkCore(f, params, std::move(world), rank) {
  id_ = host_.register_link(this);
  in_order_.reset(world_.size());
}

OfiLink::~OfiLink() {
  host_.unregister_link(id_);
  // Senders whose data nobody will read here get it back.
  in_order_.for_each_held([this](Early &early) {
    if (early.e.frame == kFrameRendezvous)
      host_.send_control(early.e.world, kFrameRendezvousDone, 0, early.e.cookie);
  });
  for (auto &[ticket, r] : rendezvous_in_) host_.send_control(r.world, kFrameRendezvousDone, 0, r.cookie);
}

Envelope OfiLink::envelope(int dest, const WireHeader &h, FrameKind kind) {
  Envelope e{};
  e.frame = kind;
  address(e, dest, h);
  return e;
}

int OfiLink::send_eager(int dest, const WireHeader &h, const void *payload, std::size_t n, Pending *done,
                        bool *pending) {
  *pending = false;
  const int peer = world_of(dest);
  Peer &p = host_.peer(peer);
  const std::size_t cost = h.kind == kEager && n > kTinyPayload ? n + kArrivalOverhead : 0;
  const bool sync = (h.flags & kFlagSyncAck) != 0;
  const bool fits = sizeof(Envelope) + n <= p.max_frame;
  if (cost > static_cast<std::size_t>(p.credit > 0 ? p.credit : 0) || !fits) {
    // The receiver holds a window of our eager data already (or its
    // buffers are smaller than ours: its MPIX_EAGER_LIMIT is): this one
    // goes as a rendezvous from a copy, so the caller's buffer is free at
    // once (a synchronous send still waits for the read, after the match).
    if (fits) ++host_.stats.credit_stalls;
    WireHeader r = h;
    r.kind = kRendezvous;
    r.flags &= ~kFlagSyncAck;
    auto copy = std::make_unique<char[]>(n);
    if (n > 0) std::memcpy(copy.get(), payload, n);
    return rendezvous(dest, r, copy.get(), n, std::move(copy), sync ? done : nullptr, pending);
  }
  p.credit -= static_cast<std::int64_t>(cost);
  ++host_.stats.eager_sent;
  const Envelope e = envelope(dest, h, kFrameMessage);

  if (sync) {
    auto op = std::make_unique<SyncOp>(e, done);
    op->env.cookie = host_.await_ack(op.get(), peer);
    *pending = true;
    ssize_t r = host_.inject(peer, &op->env, sizeof op->env, payload, n);
    if (r == 0) {
      op->sent = true;
      op.release();  // the ack completes it
      return MPI_SUCCESS;
    }
    // The request completes only after the ack, which follows the send:
    // the data may stay where it is until then.
    int rc = r == -FI_EAGAIN ? MPI_SUCCESS : mpi_error(static_cast<int>(r), "synchronous send");
    iovec iov[2] = {{&op->env, sizeof op->env}, {const_cast<void *>(payload), n}};
    std::size_t count = n > 0 ? 2 : 1;
    if (count == 2 && host_.iov_limit() < 2) {
      op->data = std::make_unique<char[]>(sizeof op->env + n);
      std::memcpy(op->data.get(), &op->env, sizeof op->env);
      std::memcpy(op->data.get() + sizeof op->env, payload, n);
      iov[0] = {op->data.get(), sizeof op->env + n};
      count = 1;
    }
    for (std::size_t i = 0; i < count && rc == MPI_SUCCESS; ++i)
      rc = op->descs.add(host_, static_cast<int>(i), iov[i].iov_base, iov[i].iov_len, FI_SEND);
    if (rc == MPI_SUCCESS) rc = host_.send(peer, iov, op->descs.desc, count, op.get(), &op->ctx);
    if (rc != MPI_SUCCESS) {
      host_.forget_ack(op->env.cookie);
      *pending = false;
      return rc;
    }
    op.release();
    return MPI_SUCCESS;
  }

  const ssize_t r = host_.inject(peer, &e, sizeof e, payload, n);
  if (r == 0) return MPI_SUCCESS;
  if (r != -FI_EAGAIN) return mpi_error(static_cast<int>(r), "eager send");
  // With a completion, which may wait for the receiver's progress (shm
  // moves what it does not inject only when the receiver polls). So from
  // a copy, and the send completes now, as an eager send does natively
  // whatever the receiver does -- up to kCopiesMax of them; then from the
  // caller's buffer, its request waiting for the transfer.
  const bool tied = done != nullptr && g_copies >= kCopiesMax;
  auto op = std::make_unique<EagerOp>(e, tied ? done : nullptr);
  iovec iov[2] = {{&op->env, sizeof op->env}, {const_cast<void *>(payload), n}};
  std::size_t count = n > 0 ? 2 : 1;
  if (!tied || host_.iov_limit() < 2) {
    ++host_.stats.copied_sends;
    op->data = std::make_unique<char[]>(sizeof e + n);
    std::memcpy(op->data.get(), &e, sizeof e);
    if (n > 0) std::memcpy(op->data.get() + sizeof e, payload, n);
    iov[0] = {op->data.get(), sizeof e + n};
    count = 1;
  }
  int rc = MPI_SUCCESS;
  for (std::size_t i = 0; i < count && rc == MPI_SUCCESS; ++i)
    rc = op->descs.add(host_, static_cast<int>(i), iov[i].iov_base, iov[i].iov_len, FI_SEND);
  if (rc == MPI_SUCCESS) rc = host_.send(peer, iov, op->descs.desc, count, op.get(), &op->ctx);
  if (rc != MPI_SUCCESS) return rc;
  *pending = tied;
  op.release();  // completes from poll()
  return MPI_SUCCESS;
}

int OfiLink::rendezvous(int dest, const WireHeader &h, const void *src, std::size_t n, std::unique_ptr<char[]> owned,
                        Pending *done, bool *pending) {
  *pending = false;
  const int peer = world_of(dest);
  auto op = std::make_unique<RndvOp>(done);
  op->owned = std::move(owned);
  if (op->owned) src = op->owned.get();
  std::uint64_t addr = 0, key = 0;
  if (n > 0) {
    // Before the envelope takes its sequence number: a failure here leaves
    // the link as it was.
    const int rc = host_.expose(src, n, &op->exposed, &addr, &key);
    if (rc != MPI_SUCCESS) return rc;
  }
  ++host_.stats.rendezvous_sent;
  op->env = envelope(dest, h, kFrameRendezvous);
  op->env.addr = addr;
  op->env.key = key;
  op->env.cookie = host_.await_ack(op.get(), peer);
  const ssize_t r = host_.inject(peer, &op->env, sizeof op->env, nullptr, 0);
  int rc = MPI_SUCCESS;
  if (r == 0) {
    op->sent = true;
  } else if (r != -FI_EAGAIN) {
    rc = mpi_error(static_cast<int>(r), "rendezvous envelope");
  } else {
    iovec iov{&op->env, sizeof op->env};
    rc = op->descs.add(host_, 0, &op->env, sizeof op->env, FI_SEND);
    if (rc == MPI_SUCCESS) rc = host_.send(peer, &iov, op->descs.desc, 1, op.get(), &op->ctx);
  }
  if (rc != MPI_SUCCESS) {
    host_.forget_ack(op->env.cookie);
    return rc;
  }
  *pending = done != nullptr;
  op.release();  // rendezvous-done completes it
  return MPI_SUCCESS;
}

int OfiLink::pull(const Arrival &a, void *buf, int count, MPI_Datatype dtype, Pending *done) {
  auto it = rendezvous_in_.find(a.ticket);
  if (it == rendezvous_in_.end()) return MPI_ERR_INTERN;  // the engine pulls each arrival once
  const Remote from = it->second;
  rendezvous_in_.erase(it);
  // Whatever fails here, the sender gets its buffer back.
  const auto give_back = [this, &from](int rc) {
    host_.send_control(from.world, kFrameRendezvousDone, 0, from.cookie);
    return rc;
  };
  auto op = std::make_unique<PullOp>();
  op->done = done;
  op->buf = buf;
  op->dtype = dtype;
  op->count = count;
  op->comm = params_.ctrl;
  op->layout = layout_of(dtype, count);
  op->world = from.world;
  op->cookie = from.cookie;
  const std::size_t capacity = static_cast<std::size_t>(op->layout.bytes);
  const std::size_t n = static_cast<std::size_t>(a.h.bytes);
  op->got = std::min(n, capacity);
  op->truncated = n > capacity;
  char *into = static_cast<char *>(buf) + op->layout.true_lb;
  if (!op->layout.contiguous && op->got > 0) {
    op->temp = std::make_unique<char[]>(op->got);
    into = op->temp.get();
  }
  PullOp *raw = op.get();
  if (op->got == 0) {
    op->remaining = 1;
    host_.complete_later(op.release(), 0, 0);
    return MPI_SUCCESS;
  }
  int rc = host_.local(into, op->got, FI_READ, &op->reg);
  if (rc != MPI_SUCCESS) return give_back(rc);
  const std::size_t chunk = std::max<std::size_t>(host_.max_msg(), 1);
  const std::size_t chunks = op->got / chunk + (op->got % chunk != 0 ? 1 : 0);  // (max_msg may be SIZE_MAX)
  op->ctxs.resize(chunks);
  op->remaining = static_cast<int>(chunks);
  op.release();  // from here the chunks' completions own it
  for (std::size_t i = 0; i < chunks; ++i) {
    const std::size_t off = i * chunk, len = std::min(chunk, raw->got - off);
    rc = host_.read(from.world, into + off, len, raw->reg.desc(), from.addr + off, from.key, raw, &raw->ctxs[i]);
    // A chunk that could not start finishes (with its error) from poll().
    if (rc != MPI_SUCCESS) host_.complete_later(raw, FI_EIO, 0);
  }
  return MPI_SUCCESS;
}

void OfiLink::discard(const Arrival &a) {
  if (a.h.kind != kRendezvous) return;
  auto it = rendezvous_in_.find(a.ticket);
  if (it == rendezvous_in_.end()) return;
  host_.send_control(it->second.world, kFrameRendezvousDone, 0, it->second.cookie);
  rendezvous_in_.erase(it);
}

void OfiLink::matched(const Arrival &a) {
  host_.send_control(world_of(a.source), kFrameSyncAck, 0, a.ticket);
}

void OfiLink::hand_up(const Envelope &e, const char *payload, std::size_t n) {
  Arrival a;
  a.source = e.source;
  a.h = e.h;
  if (e.frame == kFrameRendezvous) {
    a.ticket = next_ticket_++;
    rendezvous_in_.emplace(a.ticket, Remote{e.world, e.addr, e.key, e.cookie});
  } else {
    a.payload = payload;
    a.payload_bytes = n;
    a.ticket = e.cookie;
    a.credit = e.h.kind == kEager && n > kTinyPayload ? n + kArrivalOverhead : 0;
  }
  params_.sink->arrived(a);
}

void OfiLink::receive(const Frame &f) {
  const Envelope &e = f.e;
  WireError bad = check_link_arrival(e, size());
  // The sender's two ranks must name the same process.
  if (bad == WireError::kOk && world_of(e.source) != e.world) bad = WireError::kBadRank;
  if (bad != WireError::kOk) {
    report_malformed("libfabric transport", e.source, bad);
    // Its sender's data is released whatever the envelope says.
    if (e.frame == kFrameRendezvous) host_.send_control(e.world, kFrameRendezvousDone, 0, e.cookie);
    return;
  }
  if (!in_order_.is_next(e.source, e.seq)) {
    ++host_.stats.out_of_order;
    Early early;
    early.e = e;
    if (f.payload_bytes > 0) {
      early.data = std::make_unique<char[]>(f.payload_bytes);
      std::memcpy(early.data.get(), f.payload, f.payload_bytes);
    }
    early.length = f.payload_bytes;
    in_order_.hold(e.source, e.seq, std::move(early));
    return;
  }
  hand_up(e, f.payload, f.payload_bytes);
  in_order_.advance(e.source, [this](Early &next) { hand_up(next.e, next.data.get(), next.length); });
}

namespace {

// What each member tells the others when a link is made.
struct Card {
  std::uint32_t id;       // its link id of this communicator
  std::int32_t outsider;  // 1: a member is outside its MPI_COMM_WORLD
};

}  // namespace

int create_link(Fabric &f, const LinkParams &params, EngineLock &lock, std::unique_ptr<Link> *out) {
  int rank = 0;
  PMPI_Comm_rank(params.user, &rank);
  const std::vector<int> world = world_ranks(params.user);
  const int size = static_cast<int>(world.size());

  Card mine{};
  for (int r : world)
    if (r == MPI_UNDEFINED) mine.outsider = 1;
  // Registered before the exchange: once a peer knows the id it may send.
  auto link = std::make_unique<OfiLink>(f, params, world, rank);
  mine.id = link->id();
  std::vector<Card> cards(static_cast<std::size_t>(size));
  lock.unlock();
  const int rc = PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, cards.data(), sizeof mine, MPI_BYTE, params.ctrl);
  lock.lock();
  if (rc != MPI_SUCCESS) return rc;
  std::vector<std::uint32_t> ids(static_cast<std::size_t>(size));
  for (std::size_t i = 0; i < cards.size(); ++i) {
    if (cards[i].outsider != 0) return MPI_SUCCESS;  // every member falls back to pmpi
    ids[i] = cards[i].id;
  }
  link->set_remote_ids(std::move(ids));
  *out = std::move(link);
  return MPI_SUCCESS;
}

}  // namespace mpix::progress::ofi
