#include "ucx_worker.h"

#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ucx_link.h"

namespace mpix::progress::ucx {
namespace {

Worker *g_worker = nullptr;

// A window never smaller than a few eager messages (else eager could never
// go) and never larger than this: beyond it a receiver holds memory for a
// sender that outruns it without any gain in rate.
constexpr std::size_t kMaxWindow = std::size_t{4} << 20;

// How long after UCX last did something the liveness thread keeps polling
// (Worker::busy).
constexpr auto kLinger = std::chrono::milliseconds(50);

// MPIX_UCX_X=v configures mpix's UCX context as UCX_X=v would, for mpix
// alone: set in the environment while the context and worker are made (UCX
// reads its transports' settings from there when the worker opens them),
// then restored. MPI_Init is single-threaded in practice, which setenv
// needs. Also UCX's shared-memory receive FIFOs get room
// for 1024 small messages instead of 64 unless UCX_ or MPIX_UCX_ says
// otherwise: a sender whose receiver is busy elsewhere goes on without
// copying (the MPI library's own UCX context keeps its settings). With 64,
// the matching rate of 1024 unexpected messages fell from 6.5x native to
// 0.7x (idle 32-core host, 2026-11-26). The cost is shared memory: each
// entry's 8 KiB receive buffer sits in the receiver's segment and every
// local sender writes into it, so a rank's RSS takes in about 8 MB per
// local peer over time while its PSS grows little (bench/RESULTS.md, Soak).
class ScopedUcxEnv {
 public:
  ScopedUcxEnv() {
    std::vector<std::pair<std::string, std::string>> wanted;
    for (char **e = environ; *e != nullptr; ++e) {
      const std::string kv(*e);
      const std::size_t eq = kv.find('=');
      if (kv.rfind("MPIX_UCX_", 0) == 0 && eq != std::string::npos)
        wanted.emplace_back(kv.substr(5, eq - 5), kv.substr(eq + 1));
    }
    for (const char *fifo : {"UCX_POSIX_FIFO_SIZE", "UCX_SYSV_FIFO_SIZE"}) {
      bool named = std::getenv(fifo) != nullptr;
      for (const auto &w : wanted) named = named || w.first == fifo;
      if (!named) wanted.emplace_back(fifo, "1024");
    }
    for (const auto &[name, value] : wanted) {
      const char *old = std::getenv(name.c_str());
      saved_.push_back(Saved{name, old != nullptr, old != nullptr ? old : ""});
      setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedUcxEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->had) setenv(it->name.c_str(), it->value.c_str(), 1);
      else unsetenv(it->name.c_str());
    }
  }
  ScopedUcxEnv(const ScopedUcxEnv &) = delete;
  ScopedUcxEnv &operator=(const ScopedUcxEnv &) = delete;

 private:
  struct Saved {
    std::string name;
    bool had;
    std::string value;
  };
  std::vector<Saved> saved_;
};

void send_done(void *request, ucs_status_t status, void *user_data) {
  auto *op = static_cast<Op *>(user_data);
  ucp_request_free(request);
  op->request = nullptr;
  g_worker->untrack(op);
  op->complete(status, 0);
}

// A control message that could not go at once.
class ControlOp final : public Op {
 public:
  explicit ControlOp(const Control &c) : control(c) {}
  void complete(ucs_status_t status, std::size_t) override {
    if (status != UCS_OK && status != UCS_ERR_CANCELED) mpi_error(status, "control message");
    delete this;  // NOLINT: self-owned while in flight
  }
  void abandon() override {}
  Control control;
};

}  // namespace

Worker *worker() { return g_worker; }

int mpi_error(ucs_status_t status, const char *what) {
  if (status == UCS_OK) return MPI_SUCCESS;
  if (status == UCS_ERR_MESSAGE_TRUNCATED) return MPI_ERR_TRUNCATE;
  std::fprintf(stderr, "[mpix] UCX transport: %s failed: %s\n", what, ucs_status_string(status));
  return MPI_ERR_OTHER;
}

bool Worker::start(const TransportConfig &config, char *why, std::size_t why_len) {
  config_ = config;
  int size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  peers_.resize(static_cast<std::size_t>(size));

  // UCX_* settings apply as for the MPI library; MPIX_UCX_* override them
  // for mpix alone (e.g. MPIX_UCX_TLS=tcp,self: the network path on one host).
  const ScopedUcxEnv env;
  ucp_config_t *ucp_config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &ucp_config);
  if (st != UCS_OK) {
    std::snprintf(why, why_len, "ucp_config_read: %s", ucs_status_string(st));
    return false;
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_AM;
  st = ucp_init(&params, ucp_config, &context_);
  ucp_config_release(ucp_config);
  if (st != UCS_OK) {
    std::snprintf(why, why_len, "ucp_init: %s", ucs_status_string(st));
    return false;
  }
  // Every call into UCX happens under the engine lock, from whichever
  // thread holds it.
  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  st = ucp_worker_create(context_, &wparams, &worker_);
  if (st != UCS_OK) {
    std::snprintf(why, why_len, "ucp_worker_create: %s", ucs_status_string(st));
    return false;
  }
  ucp_worker_attr_t attr{};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS | UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
  st = ucp_worker_query(worker_, &attr);
  if (st != UCS_OK) {
    std::snprintf(why, why_len, "ucp_worker_query: %s", ucs_status_string(st));
    return false;
  }
  address_.assign(reinterpret_cast<const char *>(attr.address), attr.address_length);
  ucp_worker_release_address(worker_, attr.address);
  if (attr.max_am_header < sizeof(Envelope)) {
    std::snprintf(why, why_len, "active-message headers of %zu bytes are too small (need %zu)", attr.max_am_header,
                  sizeof(Envelope));
    return false;
  }
  ucp_am_handler_param_t handler{};
  handler.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                       UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  handler.flags = UCP_AM_FLAG_WHOLE_MSG;
  handler.arg = this;
  handler.id = kAmMessage;
  handler.cb = on_message;
  st = ucp_worker_set_am_recv_handler(worker_, &handler);
  if (st == UCS_OK) {
    handler.id = kAmControl;
    handler.cb = on_control;
    st = ucp_worker_set_am_recv_handler(worker_, &handler);
  }
  if (st != UCS_OK) {
    std::snprintf(why, why_len, "ucp_worker_set_am_recv_handler: %s", ucs_status_string(st));
    return false;
  }
  const std::size_t senders = size > 1 ? static_cast<std::size_t>(size - 1) : 1;
  window_ = std::min(config.unexpected_limit / senders, kMaxWindow);
  window_ = std::max(window_, 2 * (config.eager_limit + kArrivalOverhead));
  learn(world_rank_, address_, window_);
  g_worker = this;
  return true;
}

Worker::~Worker() {
  if (g_worker == this) g_worker = nullptr;
  for (auto &[cookie, a] : acks_)
    if (live_.count(a.op) == 0) delete a.op;  // NOLINT: waiting for an ack that never came
  acks_.clear();
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
}

void Worker::learn(int world, std::string address, std::size_t window) {
  Peer &p = peer(world);
  if (!p.address.empty()) return;
  p.address = std::move(address);
  p.credit = static_cast<std::int64_t>(window);
}

ucp_ep_h Worker::endpoint(int world) {
  Peer &p = peer(world);
  if (p.ep != nullptr || p.address.empty()) return p.ep;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t *>(p.address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  const ucs_status_t st = ucp_ep_create(worker_, &params, &p.ep);
  if (st != UCS_OK) {
    mpi_error(st, "ucp_ep_create");
    p.ep = nullptr;
    return nullptr;
  }
  ++stats.endpoints;
  return p.ep;
}

void Worker::complete_later(Op *op, ucs_status_t status, std::size_t length) {
  completed_.push_back(Done{op, status, length});
  outstanding_.fetch_add(1, std::memory_order_relaxed);
}

void Worker::start_rings() {
  rings_.start_if(config_.shm_ring, config_.shm_ring_bytes, config_.shm_ring_slot_bytes, config_.verbose);
  if (rings_.running()) backlog_.resize(peers_.size());
  all_ringed_ = rings_.running();
  for (std::size_t w = 0; all_ringed_ && w < peers_.size(); ++w)
    all_ringed_ = static_cast<int>(w) == world_rank_ || rings_.reaches(static_cast<int>(w));
}

bool Worker::ucx_poll_due() {
  if (!all_ringed_ || outstanding_.load(std::memory_order_relaxed) != 0 || ++ucx_skipped_ >= kRingPollsPerUcx) {
    ucx_skipped_ = 0;
    return true;
  }
  return false;
}

ucs_status_t Worker::send_am(int world, unsigned id, const void *header, std::size_t header_bytes,
                             const void *payload, std::size_t bytes, std::uint32_t flags, Op *op) {
  // Whatever goes eagerly to a process of this node and fits its ring takes
  // the ring: done at once, the op not kept (as UCX's immediate
  // completion). A full ring keeps the op's message in order behind the
  // others for poll() (none without an op: the caller then makes one), as
  // UCX keeps a send that found no room on the wire; UCX itself would
  // overtake them (the receiver then holds what comes early).
  if ((flags & UCP_AM_SEND_FLAG_RNDV) == 0 && rings_.reaches(world) &&
      header_bytes + bytes <= rings_.capacity()) {
    auto &waiting = backlog_[static_cast<std::size_t>(world)];
    if (waiting.empty() && rings_.send(world, id, header, header_bytes, payload, bytes)) {
      ++stats.shm_ring;
      return UCS_OK;
    }
    if (op == nullptr) return UCS_ERR_NO_RESOURCE;
    waiting.push_back(Backlogged{op, id, header, header_bytes, payload, bytes});
    ++backlogged_;
    track(op);
    return UCS_INPROGRESS;
  }
  ucp_ep_h ep = endpoint(world);
  if (ep == nullptr) return UCS_ERR_UNREACHABLE;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = flags;
  if (op == nullptr) {
    p.op_attr_mask |= UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
  } else {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.send = send_done;
    p.user_data = op;
  }
  const ucs_status_ptr_t r = ucp_am_send_nbx(ep, id, header, header_bytes, payload, bytes, &p);
  if (r == nullptr) return UCS_OK;
  if (UCS_PTR_IS_ERR(r)) return UCS_PTR_STATUS(r);
  op->request = r;
  track(op);
  return UCS_INPROGRESS;
}

int Worker::drain_backlog() {
  int n = 0;
  for (std::size_t world = 0; world < backlog_.size() && backlogged_ > 0; ++world) {
    auto &waiting = backlog_[world];
    while (!waiting.empty()) {
      const Backlogged &b = waiting.front();
      if (!rings_.send(static_cast<int>(world), b.id, b.header, b.header_bytes, b.payload, b.bytes)) break;
      Op *op = b.op;
      waiting.pop_front();
      --backlogged_;
      ++stats.shm_ring;
      ++n;
      untrack(op);
      op->complete(UCS_OK, 0);
    }
  }
  return n;
}

void Worker::consumed(int world, std::size_t credit) {
  if (owe(world, credit)) send_control(world, kCredit, take_owed(world), 0);
}

void Worker::send_control(int world, ControlKind kind, std::uint32_t credit, std::uint64_t cookie) {
  if (in_callback_) {
    defer([this, world, kind, credit, cookie] { send_control(world, kind, credit, cookie); });
    return;
  }
  const Control c{kind, world_rank_, credit, 0, cookie};
  ucs_status_t st = send_am(world, kAmControl, &c, sizeof c, nullptr, 0, UCP_AM_SEND_FLAG_EAGER, nullptr);
  if (st == UCS_OK) return;
  auto op = std::make_unique<ControlOp>(c);
  st = send_am(world, kAmControl, &op->control, sizeof op->control, nullptr, 0, UCP_AM_SEND_FLAG_EAGER, op.get());
  if (st == UCS_INPROGRESS) op.release();  // completes (and frees itself) from poll()
  else if (st != UCS_OK) mpi_error(st, "control message");
}

ucs_status_t Worker::keep_loopback(unsigned id, const void *header, std::size_t header_length, void *data,
                                   std::size_t length, bool rndv) {
  Loopback l{id, std::make_unique<char[]>(header_length), header_length, nullptr, length, rndv ? data : nullptr};
  std::memcpy(l.header.get(), header, header_length);
  if (!rndv && length > 0) {
    l.data = std::make_unique<char[]>(length);
    std::memcpy(l.data.get(), data, length);
  }
  loopback_.push_back(std::move(l));
  outstanding_.fetch_add(1, std::memory_order_relaxed);
  return rndv ? UCS_INPROGRESS : UCS_OK;
}

ucs_status_t Worker::on_message(void *arg, const void *header, std::size_t header_length, void *data,
                                std::size_t length, const ucp_am_recv_param_t *param) {
  auto *w = static_cast<Worker *>(arg);
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  if (!w->in_callback_) return w->keep_loopback(kAmMessage, header, header_length, data, length, rndv);
  ++w->stats.arrivals;
  Envelope e{};
  // Its sender is unknown until the header is: rank -1 in the report.
  const WireError bad = decode_envelope(header, header_length, static_cast<int>(w->peers_.size()), &e);
  if (bad != WireError::kOk) {
    report_malformed("UCX transport", -1, bad);
  } else {
    if (e.credit != 0) w->peer(e.world).credit += e.credit;
    if (UcxLink *link = w->find_link(e.link)) return link->receive(e, data, length, rndv);
    // The communicator is gone here: the message was sent to a freed
    // communicator, or after it was freed, with no receive for it.
    if (w->config_.verbose > 0)
      std::fprintf(stderr, "[mpix] UCX transport: rank %d dropped a message (tag %d) for a freed communicator\n",
                   w->world_rank_, e.h.tag);
  }
  if (!rndv) return UCS_OK;
  w->defer([w, data] { ucp_am_data_release(w->worker_, data); });
  return UCS_INPROGRESS;
}

ucs_status_t Worker::on_control(void *arg, const void *header, std::size_t header_length, void *data,
                                std::size_t length, const ucp_am_recv_param_t *) {
  auto *w = static_cast<Worker *>(arg);
  if (!w->in_callback_) return w->keep_loopback(kAmControl, header, header_length, data, length, false);
  Control c{};
  const WireError bad = decode_control(header, header_length, static_cast<int>(w->peers_.size()), &c);
  if (bad != WireError::kOk) {
    report_malformed("UCX transport (control)", -1, bad);
    return UCS_OK;
  }
  if (c.kind == kCredit) {
    w->peer(c.world).credit += c.credit;
  } else if (c.kind == kSyncAck) {
    auto it = w->acks_.find(c.cookie);
    if (it == w->acks_.end()) return UCS_OK;
    Op *op = it->second.op;
    w->acks_.erase(it);
    ++w->stats.sync_acks;
    op->acknowledged();
  }
  return UCS_OK;
}

bool Worker::busy() { return busy_within(kLinger); }

int Worker::poll() {
  in_callback_ = true;
  int n = ucx_poll_due() ? static_cast<int>(ucp_worker_progress(worker_)) : 0;
  if (rings_.running()) {
    // As UCX's handlers would get them, inside the callback state: the
    // data are the slot's until the handler returns (never kept: the
    // handlers copy what they keep from a non-rendezvous message).
    n += rings_.poll([this](const shm::Message &m) {
      ucp_am_recv_param_t param{};
      if (m.id == kAmMessage) on_message(this, m.header, m.header_bytes, m.data, m.bytes, &param);
      else if (m.id == kAmControl) on_control(this, m.header, m.header_bytes, m.data, m.bytes, &param);
      else report_malformed("UCX transport (shared-memory ring)", -1, WireError::kBadKind);
    });
    if (backlogged_ > 0) n += drain_backlog();
  }
  in_callback_ = false;
  if (!loopback_.empty()) {
    // As if they arrived now; handlers then defer UCX calls as usual.
    std::vector<Loopback> arrived;
    arrived.swap(loopback_);
    in_callback_ = true;
    ucp_am_recv_param_t param{};
    for (Loopback &l : arrived) {
      outstanding_.fetch_sub(1, std::memory_order_relaxed);
      param.recv_attr = l.desc != nullptr ? UCP_AM_RECV_ATTR_FLAG_RNDV : 0;
      void *data = l.desc != nullptr ? l.desc : l.data.get();
      const ucs_status_t st = l.id == kAmMessage
                                  ? on_message(this, l.header.get(), l.header_length, data, l.length, &param)
                                  : on_control(this, l.header.get(), l.header_length, data, l.length, &param);
      (void)st;  // rendezvous data stays with UCX until pulled, as from a live handler
    }
    in_callback_ = false;
    n += static_cast<int>(arrived.size());
  }
  if (n > 0) activity_.store(activity_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  fail_acks_of_exited();
  while (!deferred_.empty() || !completed_.empty()) {
    std::vector<std::function<void()>> later;
    later.swap(deferred_);
    for (auto &f : later) f();
    std::vector<Done> done;
    done.swap(completed_);
    for (const Done &d : done) {
      outstanding_.fetch_sub(1, std::memory_order_relaxed);
      d.op->complete(d.status, d.length);
    }
    n += static_cast<int>(later.size() + done.size());
  }
  return n;
}

bool Worker::progress_until(const std::function<bool()> &done, double seconds) {
  return poll_until([this] { return poll(); }, done, seconds);
}

void Worker::fence() {
  polling_barrier([this] { return poll(); });
}

TransportCounts Worker::counts() const {
  TransportCounts c;
  c.sent = envelopes_sent;
  c.arrived = stats.arrivals;
  c.local = deferred_.size() + completed_.size() + loopback_.size();
  for (Op *op : live_)
    if (op->local()) ++c.local;
  return c;
}

void Worker::abandon() {
  for (Op *op : live_) op->abandon();
  for (auto &[cookie, a] : acks_) a.op->abandon();
}

void Worker::stop() {
  for (Op *op : live_)
    if (op->request != nullptr) ucp_request_cancel(worker_, op->request);
  progress_until([this] { return live_.empty(); }, 5.0);
  std::vector<void *> closing;
  for (Peer &p : peers_) {
    if (p.ep == nullptr) continue;
    ucp_request_param_t params{};
    const ucs_status_ptr_t r = ucp_ep_close_nbx(p.ep, &params);
    if (UCS_PTR_IS_PTR(r)) closing.push_back(r);
    p.ep = nullptr;
  }
  const auto closed = [&] {
    for (void *&r : closing) {
      if (r == nullptr || ucp_request_check_status(r) == UCS_INPROGRESS) continue;
      ucp_request_free(r);
      r = nullptr;
    }
    for (void *r : closing)
      if (r != nullptr) return false;
    return true;
  };
  if (!progress_until(closed, 10.0))
    std::fprintf(stderr, "[mpix] UCX transport: rank %d: endpoints still closing at MPI_Finalize\n", world_rank_);
  // Peers may still need this worker to close theirs.
  fence();
}

}  // namespace mpix::progress::ucx
