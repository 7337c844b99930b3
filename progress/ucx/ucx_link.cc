#include "ucx_link.h"

#include <cstring>

#include "progress/datatype.h"

namespace mpix::progress::ucx {
namespace {

// Eager sends waiting in a copy of their own (no room on the wire when
// sent) whose requests already completed. Past the bound a nonblocking
// send's request waits for its transfer instead, so a sender that outruns
// its receiver is throttled through its own requests, as natively.
constexpr long kCopiesMax = 4096;
long g_copies = 0;  // under the engine lock

// An eager message that went from a copy, or from the user's buffer with
// `done` waiting for it (tied).
class EagerOp final : public Op {
 public:
  EagerOp(const Envelope &e, Pending *tied) : env(e), done(tied) {
    if (done == nullptr) ++g_copies;
  }
  ~EagerOp() override {
    if (done == nullptr) --g_copies;
  }
  EagerOp(const EagerOp &) = delete;
  EagerOp &operator=(const EagerOp &) = delete;
  void complete(ucs_status_t status, std::size_t) override {
    const int err = mpi_error(status, "eager send");
    if (done != nullptr) done->on_complete(make_status(err, 0));
    delete this;  // NOLINT: self-owned while in flight
  }
  void abandon() override { done = nullptr; }
  Envelope env;
  std::unique_ptr<char[]> data;
  Pending *done;
};

// An eager synchronous send: done once it left and its receiver matched it.
class SyncOp final : public Op {
 public:
  SyncOp(const Envelope &e, Pending *d) : env(e), done(d) {}
  void complete(ucs_status_t status, std::size_t) override {
    request = nullptr;
    sent = true;
    if (status != UCS_OK) {
      error = mpi_error(status, "synchronous send");
      worker()->forget_ack(env.cookie);
      acked = true;  // no ack will come for a message that did not leave
    }
    if (acked) finish();
  }
  void acknowledged() override {
    acked = true;
    // Reported from poll(), not from inside the call that got the ack.
    if (sent) worker()->complete_later(this, UCS_OK, 0);
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
  std::unique_ptr<char[]> data;
  Pending *done;
  bool sent = false, acked = false;
  int error = MPI_SUCCESS;
};

// A rendezvous send: UCX keeps the data until the receiver pulled it.
class RndvOp final : public Op {
 public:
  RndvOp(const Envelope &e, Pending *d) : env(e), done(d) {}
  void complete(ucs_status_t status, std::size_t) override {
    const int err = status == UCS_ERR_CANCELED ? MPI_SUCCESS : mpi_error(status, "rendezvous send");
    if (done != nullptr) done->on_complete(make_status(err, 0));
    delete this;  // NOLINT: self-owned while in flight
  }
  void abandon() override { done = nullptr; }
  bool local() const override { return false; }
  Envelope env;
  std::unique_ptr<char[]> owned;  // buffered or non-contiguous data
  Pending *done;
};

// The receive of a rendezvous payload, into the user's buffer or, when it
// is not contiguous or too small, into a copy unpacked at the end.
class PullOp final : public Op {
 public:
  void complete(ucs_status_t status, std::size_t length) override {
    int err = mpi_error(status, "rendezvous receive");
    std::size_t got = status == UCS_OK ? length : 0;
    if (got > capacity) {
      got = capacity;
      err = MPI_ERR_TRUNCATE;
    }
    if (temp && got > 0 && status == UCS_OK) {
      if (layout.contiguous) {
        std::memcpy(static_cast<char *>(buf) + layout.true_lb, temp.get(), got);
      } else {
        const int rc = unpack_bytes(temp.get(), static_cast<int>(got), buf, count, dtype, comm);
        if (rc != MPI_SUCCESS && err == MPI_SUCCESS) err = rc;
      }
    }
    if (done != nullptr) done->on_complete(make_status(err, got));
    delete this;  // NOLINT: self-owned while in flight
  }
  void abandon() override { done = nullptr; }
  Pending *done = nullptr;
  void *buf = nullptr;
  int count = 0;
  MPI_Datatype dtype = MPI_DATATYPE_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  Layout layout;
  std::size_t capacity = 0;
  std::unique_ptr<char[]> temp;
};

void pull_done(void *request, ucs_status_t status, std::size_t length, void *user_data) {
  auto *op = static_cast<Op *>(user_data);
  ucp_request_free(request);
  op->request = nullptr;
  worker()->untrack(op);
  op->complete(status, length);
}

}  // namespace

UcxLink::UcxLink(Worker &w, const LinkParams &params, std::vector<int> world, int rank)
    : LinkCore(w, params, std::move(world), rank) {
  id_ = host_.register_link(this);
  in_order_.reset(world_.size());
}

UcxLink::~UcxLink() {
  host_.unregister_link(id_);
  in_order_.for_each_held([this](Early &early) {
    if (early.rndv) ucp_am_data_release(host_.handle(), early.desc);
  });
}

Envelope UcxLink::envelope(int dest, const WireHeader &h) {
  Envelope e{};
  address(e, dest, h);
  return e;
}

int UcxLink::send_eager(int dest, const WireHeader &h, const void *payload, std::size_t n, Pending *done,
                        bool *pending) {
  *pending = false;
  const int peer = world_of(dest);
  Peer &p = host_.peer(peer);
  const std::size_t cost = h.kind == kEager && n > kTinyPayload ? n + kArrivalOverhead : 0;
  const bool sync = (h.flags & kFlagSyncAck) != 0;
  if (cost > static_cast<std::size_t>(p.credit > 0 ? p.credit : 0)) {
    // The receiver holds a window of our eager data already: this one goes
    // as a rendezvous from a copy, so the caller's buffer is free at once
    // (a synchronous send still waits for the pull, which follows the match).
    ++host_.stats.credit_stalls;
    WireHeader r = h;
    r.kind = kRendezvous;
    r.flags &= ~kFlagSyncAck;
    auto copy = std::make_unique<char[]>(n);
    if (n > 0) std::memcpy(copy.get(), payload, n);
    return rendezvous(dest, r, copy.get(), n, std::move(copy), sync ? done : nullptr, pending);
  }
  p.credit -= static_cast<std::int64_t>(cost);
  ++host_.stats.eager_sent;
  const Envelope e = envelope(dest, h);

  if (sync) {
    auto op = std::make_unique<SyncOp>(e, done);
    op->env.cookie = host_.await_ack(op.get(), peer);
    *pending = true;
    ucs_status_t st = UCS_ERR_NO_RESOURCE;
    if (!host_.in_callback()) {
      op->sent = true;  // an ack may come before the call returns (loopback)
      st = host_.send_am(peer, kAmMessage, &op->env, sizeof op->env, payload, n, UCP_AM_SEND_FLAG_EAGER, nullptr);
      op->sent = st == UCS_OK;
    }
    if (st == UCS_OK) {
      op.release();  // the ack completes it
      return MPI_SUCCESS;
    }
    if (st != UCS_ERR_NO_RESOURCE) {
      host_.forget_ack(op->env.cookie);
      *pending = false;
      return mpi_error(st, "synchronous send");
    }
    // The request completes only after the ack, which follows the send:
    // the data may stay where it is until then, unless the send waits.
    if (host_.in_callback()) {
      op->data = std::make_unique<char[]>(n);
      if (n > 0) std::memcpy(op->data.get(), payload, n);
      payload = op->data.get();
    }
    SyncOp *raw = op.release();
    const auto issue = [this, peer, raw, payload, n] {
      const ucs_status_t s =
          host_.send_am(peer, kAmMessage, &raw->env, sizeof raw->env, payload, n, UCP_AM_SEND_FLAG_EAGER, raw);
      if (s != UCS_INPROGRESS) host_.complete_later(raw, s, 0);
    };
    if (host_.in_callback()) host_.defer(issue);
    else issue();
    return MPI_SUCCESS;
  }

  if (!host_.in_callback()) {
    const ucs_status_t st =
        host_.send_am(peer, kAmMessage, &e, sizeof e, payload, n, UCP_AM_SEND_FLAG_EAGER, nullptr);
    if (st == UCS_OK) return MPI_SUCCESS;
    if (st != UCS_ERR_NO_RESOURCE) return mpi_error(st, "eager send");
  }
  // No room on the wire now. Waiting for it could wait for a receiver
  // that is not polling (it may be in a call mpix never sees), so the
  // message waits in a copy and the send completes, as an eager send does
  // natively -- up to kCopiesMax of them; then a nonblocking send's request
  // waits for its own transfer.
  // To a process of this node whose ring is full, a nonblocking send waits
  // for room without a copy: the receiver frees its ring whenever it polls,
  // as it must to complete its own sends.
  const bool tied = done != nullptr && (g_copies >= kCopiesMax || host_.ring_reaches(peer));
  auto op = std::make_unique<EagerOp>(e, tied ? done : nullptr);
  const void *from = payload;
  if (!tied) {
    ++host_.stats.copied_sends;
    op->data = std::make_unique<char[]>(n);
    if (n > 0) std::memcpy(op->data.get(), payload, n);
    from = op->data.get();
  }
  *pending = tied;
  EagerOp *raw = op.release();
  const auto issue = [this, peer, raw, from, n] {
    const ucs_status_t s =
        host_.send_am(peer, kAmMessage, &raw->env, sizeof raw->env, from, n, UCP_AM_SEND_FLAG_EAGER, raw);
    if (s != UCS_INPROGRESS) host_.complete_later(raw, s, 0);
  };
  if (host_.in_callback()) host_.defer(issue);
  else issue();
  return MPI_SUCCESS;
}

int UcxLink::rendezvous(int dest, const WireHeader &h, const void *src, std::size_t n, std::unique_ptr<char[]> owned,
                        Pending *done, bool *pending) {
  const int peer = world_of(dest);
  ++host_.stats.rendezvous_sent;
  auto op = std::make_unique<RndvOp>(envelope(dest, h), done);
  op->owned = std::move(owned);
  if (op->owned) src = op->owned.get();
  *pending = done != nullptr;
  RndvOp *raw = op.release();
  const auto issue = [this, peer, raw, src, n] {
    const ucs_status_t s =
        host_.send_am(peer, kAmMessage, &raw->env, sizeof raw->env, src, n, UCP_AM_SEND_FLAG_RNDV, raw);
    if (s != UCS_INPROGRESS) host_.complete_later(raw, s, 0);
  };
  if (host_.in_callback()) host_.defer(issue);
  else issue();
  return MPI_SUCCESS;
}

int UcxLink::pull(const Arrival &a, void *buf, int count, MPI_Datatype dtype, Pending *done) {
  auto op = std::make_unique<PullOp>();
  op->done = done;
  op->buf = buf;
  op->count = count;
  op->dtype = dtype;
  op->comm = params_.ctrl;
  op->layout = layout_of(dtype, count);
  op->capacity = static_cast<std::size_t>(op->layout.bytes);
  const std::size_t n = static_cast<std::size_t>(a.h.bytes);
  void *into = static_cast<char *>(buf) + op->layout.true_lb;
  if (!op->layout.contiguous || n > op->capacity) {
    op->temp = std::make_unique<char[]>(n);
    into = op->temp.get();
  }
  void *desc = reinterpret_cast<void *>(static_cast<std::uintptr_t>(a.ticket));
  PullOp *raw = op.release();
  const auto start = [this, raw, desc, into, n] {
    std::size_t length = 0;
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_RECV_INFO;
    p.cb.recv_am = pull_done;
    p.user_data = raw;
    p.recv_info.length = &length;
    const ucs_status_ptr_t r = ucp_am_recv_data_nbx(host_.handle(), desc, into, n, &p);
    if (r == nullptr) {
      host_.complete_later(raw, UCS_OK, length);
    } else if (UCS_PTR_IS_ERR(r)) {
      host_.complete_later(raw, UCS_PTR_STATUS(r), 0);
    } else {
      raw->request = r;
      host_.track(raw);
    }
  };
  if (host_.in_callback()) host_.defer(start);
  else start();
  return MPI_SUCCESS;
}

void UcxLink::discard(const Arrival &a) {
  if (a.h.kind != kRendezvous || a.ticket == 0) return;
  void *desc = reinterpret_cast<void *>(static_cast<std::uintptr_t>(a.ticket));
  Worker &w = host_;
  const auto release = [&w, desc] { ucp_am_data_release(w.handle(), desc); };
  if (host_.in_callback()) host_.defer(release);
  else release();
}

void UcxLink::matched(const Arrival &a) {
  host_.send_control(world_of(a.source), kSyncAck, 0, a.ticket);
}

void UcxLink::hand_up(const Envelope &e, const void *data, std::size_t length, bool rndv) {
  Arrival a;
  a.source = e.source;
  a.h = e.h;
  if (rndv) {
    a.ticket = reinterpret_cast<std::uintptr_t>(data);
  } else {
    a.payload = static_cast<const char *>(data);
    a.payload_bytes = length;
    a.ticket = e.cookie;
    a.credit = e.h.kind == kEager && length > kTinyPayload ? length + kArrivalOverhead : 0;
  }
  params_.sink->arrived(a);
}

ucs_status_t UcxLink::receive(const Envelope &e, void *data, std::size_t length, bool rndv) {
  const ucs_status_t keep = rndv ? UCS_INPROGRESS : UCS_OK;
  const WireError bad = check_link_arrival(e, size(), rndv, length);
  if (bad != WireError::kOk) {
    report_malformed("UCX transport", e.source, bad);
    // UCX keeps rendezvous data until released, whatever the envelope says.
    if (rndv) {
      Arrival a{e.source, e.h, nullptr, 0, reinterpret_cast<std::uintptr_t>(data), 0};
      a.h.kind = kRendezvous;
      discard(a);
    }
    return keep;
  }
  if (!in_order_.is_next(e.source, e.seq)) {
    ++host_.stats.out_of_order;
    Early early;
    early.e = e;
    early.rndv = rndv;
    if (rndv) {
      early.desc = data;
    } else {
      early.data = std::make_unique<char[]>(length);
      if (length > 0) std::memcpy(early.data.get(), data, length);
      early.length = length;
    }
    in_order_.hold(e.source, e.seq, std::move(early));
    return keep;
  }
  hand_up(e, data, length, rndv);
  in_order_.advance(e.source, [this](Early &next) {
    hand_up(next.e, next.rndv ? next.desc : next.data.get(), next.length, next.rndv);
  });
  return keep;
}

}  // namespace mpix::progress::ucx

namespace mpix::progress::ucx {
namespace {

// What each member tells the others when a link is made.
struct Card {
  std::uint32_t id;            // its link id of this communicator
  std::int32_t needs;          // 1: it lacks a member's worker address
  std::int32_t outsider;       // 1: a member is outside its MPI_COMM_WORLD
  std::int32_t address_bytes;
  std::uint64_t window;        // eager bytes it accepts from each sender
};

}  // namespace

int create_link(Worker &w, const LinkParams &params, EngineLock &lock, std::unique_ptr<Link> *out) {
  int rank = 0;
  PMPI_Comm_rank(params.user, &rank);
  const std::vector<int> world = world_ranks(params.user);
  const int size = static_cast<int>(world.size());

  Card mine{};
  for (int r : world) {
    if (r == MPI_UNDEFINED) mine.outsider = 1;
    else if (!w.knows(r)) mine.needs = 1;
  }
  // Registered before the exchange: once a peer knows the id it may send.
  auto link = std::make_unique<UcxLink>(w, params, world, rank);
  mine.id = link->id();
  mine.address_bytes = static_cast<std::int32_t>(w.address().size());
  mine.window = w.window();
  std::vector<Card> cards(static_cast<std::size_t>(size));
  std::string address = w.address();
  lock.unlock();
  int rc = PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, cards.data(), sizeof mine, MPI_BYTE, params.ctrl);
  bool outsider = false, needs = false;
  for (const Card &c : cards) {
    outsider = outsider || c.outsider != 0;
    needs = needs || c.needs != 0;
  }
  std::vector<int> lengths, displs;
  std::vector<char> addresses;
  if (rc == MPI_SUCCESS && needs && !outsider) {
    // Worker addresses of members met for the first time (every member
    // takes part once anyone needs one).
    int total = 0;
    for (const Card &c : cards) {
      lengths.push_back(c.address_bytes);
      displs.push_back(total);
      total += c.address_bytes;
    }
    addresses.resize(static_cast<std::size_t>(total));
    rc = PMPI_Allgatherv(address.data(), static_cast<int>(address.size()), MPI_BYTE, addresses.data(),
                         lengths.data(), displs.data(), MPI_BYTE, params.ctrl);
  }
  lock.lock();
  if (rc != MPI_SUCCESS) return rc;
  if (outsider) return MPI_SUCCESS;
  std::vector<std::uint32_t> ids(static_cast<std::size_t>(size));
  for (std::size_t i = 0; i < cards.size(); ++i) {
    ids[i] = cards[i].id;
    if (!addresses.empty() && !w.knows(world[i]))
      w.learn(world[i], std::string(addresses.data() + displs[i], static_cast<std::size_t>(lengths[i])),
              static_cast<std::size_t>(cards[i].window));
  }
  link->set_remote_ids(std::move(ids));
  *out = std::move(link);
  return MPI_SUCCESS;
}

}  // namespace mpix::progress::ucx
