// A communicator's lanes (lanes.h): set-up, the lock-free paths of lane
// sends and receives, and the engine's side of a lane communicator.
#include "lanes.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "device/memtype.h"
#include "engine.h"
#include "match/cpu_relax.h"
#include "progress/datatype.h"
#include "progress/immortal.h"
#include "unexpected.h"

namespace mpix::p2p {
using namespace unexpected;
using match::cpu_relax;

namespace {
int g_lanes = 0;
unsigned g_tag_shift = 6;
std::size_t g_eager_limit = 1024;
// Idle polls of a lane wait between engine progress steps: the engine
// completes what a lane cannot (rendezvous, handed-over receives, the
// envelopes behind a mark), but a waiter that took the engine lock on every
// poll would serialise the threads again.
constexpr unsigned kLaneSpinsPerEngineStep = 64;
// Each lane's rings: enough 8-byte messages in flight for a window of 64
// per thread many times over.
constexpr std::size_t kLaneRingBytes = std::size_t{64} << 10;
constexpr std::size_t kLaneSlotBytes = 64;
constexpr int kLaneBudget = 32;  // messages of one ring per take-in
constexpr LaneHeader kMarkHeader{-1, -1};  // a mark carries nothing: the lane and sender say it all
}  // namespace

namespace {
// Each thread's own count (its own cache line: a wait costs a store, not a
// shared atomic); the rare destroyer reads them all.
struct alignas(64) LaneCaller {
  std::atomic<int> inside{0};
};
std::mutex g_callers_mu;
std::vector<std::shared_ptr<LaneCaller>> &lane_callers() {
  static Immortal<std::vector<std::shared_ptr<LaneCaller>>> v;
  return v.get();
}
thread_local std::shared_ptr<LaneCaller> t_lane_caller;
}  // namespace

LaneCallerScope::LaneCallerScope() {
  if (!t_lane_caller) {
    t_lane_caller = std::make_shared<LaneCaller>();
    std::lock_guard<std::mutex> g(g_callers_mu);
    lane_callers().push_back(t_lane_caller);
  }
  // seq_cst: before this thread reads a request's completion flag, so a
  // destroyer that saw the flag set and then this count at 0 knows the
  // thread will see the flag and not touch the lanes.
  t_lane_caller->inside.store(t_lane_caller->inside.load(std::memory_order_relaxed) + 1, std::memory_order_seq_cst);
}

LaneCallerScope::~LaneCallerScope() {
  t_lane_caller->inside.store(t_lane_caller->inside.load(std::memory_order_relaxed) - 1, std::memory_order_release);
}

bool lane_callers_none() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::lock_guard<std::mutex> g(g_callers_mu);
  auto &v = lane_callers();
  // Threads that ended left their count here alone: dropped.
  v.erase(std::remove_if(v.begin(), v.end(), [](const auto &c) { return c.use_count() == 1; }), v.end());
  for (const auto &c : v)
    if (c->inside.load(std::memory_order_seq_cst) != 0) return false;
  return true;
}

void lanes_configure(int lanes, unsigned tag_shift, std::size_t eager_limit) {
  g_lanes = lanes;
  g_tag_shift = tag_shift;
  g_eager_limit = eager_limit;
}
int lanes_configured() { return g_lanes; }
unsigned lanes_tag_shift() { return g_tag_shift; }
std::size_t lanes_eager_limit() { return g_eager_limit; }

std::unique_ptr<Lanes> Lanes::create(MPI_Comm comm, int lanes, unsigned shift, std::size_t eager_limit) {
  if (lanes <= 0) return nullptr;
  int size = 1, rank = 0;
  PMPI_Comm_size(comm, &size);
  PMPI_Comm_rank(comm, &rank);
  auto l = std::make_unique<Lanes>();
  l->shift_ = shift;
  int ok = 1;
  for (int k = 0; k < lanes; ++k) {
    l->lanes_.push_back(std::make_unique<Lane>());
    char why[256] = "";
    // Collective: every member takes part even after a failure.
    if (!l->lanes_.back()->node.start(comm, kLaneRingBytes, kLaneSlotBytes, why, sizeof why, false)) ok = 0;
  }
  // Every other member through a ring (one node), or no lanes at all.
  for (int i = 0; i < size && ok; ++i)
    if (i != rank && !l->lanes_.front()->node.reaches(i)) ok = 0;
  int all_ok = 0;
  PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
  if (!all_ok || size < 2) return nullptr;
  for (auto &lane : l->lanes_) {
    lane->early.resize(static_cast<std::size_t>(size));
    lane->owed.assign(static_cast<std::size_t>(size), 0);
  }
  l->max_bytes_ = std::min(l->lanes_.front()->node.capacity() - sizeof(LaneHeader), eager_limit);
  return l;
}

// ---- the engine's side (engine lock held) ----

P2PComm::KeyMatcher P2PComm::matcher_for(int tag, bool take_in) {
  if (!lanes_) return KeyMatcher(matcher_.get(), nullptr);
  Lanes::Lane &l = lanes_->lane(lanes_->lane_of(tag));
  l.lock.lock();
  if (take_in) lane_take_in(l, true);
  return KeyMatcher(&l.matcher, &l);
}

void P2PComm::lane_mark(int dest, int tag) {
  if (dest == rank_ || dest < 0) return;  // no ring to itself: its own messages are all the engine's
  Lanes::Lane &l = lanes_->lane(lanes_->lane_of(tag));
  l.lock.lock();
  // Never waits for room (the peer may be waiting for this process): owed
  // where the ring is full, or where marks are owed already (in order).
  if (!lane_pay_marks(l, dest) || !l.node.send(dest, kLaneMark, &kMarkHeader, sizeof kMarkHeader, nullptr, 0)) {
    ++l.owed[static_cast<std::size_t>(dest)];
    l.owes = true;
  }
  l.lock.unlock();
}

bool P2PComm::lane_pay_marks(Lanes::Lane &l, int dest) {
  std::uint32_t &owed = l.owed[static_cast<std::size_t>(dest)];
  while (owed > 0 && l.node.send(dest, kLaneMark, &kMarkHeader, sizeof kMarkHeader, nullptr, 0)) --owed;
  return owed == 0;
}

bool P2PComm::lane_pay_all_marks(Lanes::Lane &l) {
  if (!l.owes) return true;
  bool all = true;
  for (int d = 0; d < size_; ++d)
    if (d != rank_ && !lane_pay_marks(l, d)) all = false;
  l.owes = !all;
  return all;
}

void P2PComm::lane_match_early(Lanes::Lane &l, Message *e, bool engine_locked) {
  const match::ArriveResult res =
      l.matcher.arrive(match::Key{e->source, e->tag}, reinterpret_cast<match::Cookie>(e));
  if (!res.matched()) return;  // kept as an unexpected record
  auto *r = reinterpret_cast<Request *>(res.partner);
  if (r->lane) --l.waiting;
  if (r->lane && e->kind == kEager && e->flags == 0 && e->credit == 0) {
    lane_complete(r, e->payload, e->bytes, e->source, e->tag);
    delete e;  // NOLINT: a record of ours
  } else if (engine_locked) {
    std::unique_ptr<Message> m(e);
    if (r->lane) engine_takes(r);
    else receive_unqueued();
    deliver(r, *m);
    unexpected_consumed(*m);
  } else {
    l.handoffs.push_back(Lanes::Handoff{r, e});
    lanes_->handoffs_pending.store(true, std::memory_order_release);
  }
}

void P2PComm::lane_engine_arrival(const progress::Arrival &a) {
  Lanes::Lane &l = lanes_->lane(lanes_->lane_of(a.h.tag));
  l.lock.lock();
  // What the sender put in this lane before this envelope comes first, up
  // to the envelope's mark (the first mark no earlier envelope took).
  bool marked = true;
  if (progress::shm::Ring *ring = l.node.in_from(a.source)) {
    auto &early = l.early[static_cast<std::size_t>(a.source)];
    marked = false;
    progress::shm::Message m{};
    while (!marked && ring->peek(&m)) {
      if (m.id != kLaneMark) lane_take_message(l, *ring, m, true);
      else marked = !lane_pass_mark(l, *ring, early, true);  // no earlier envelope waits: ours
    }
    if (!marked) {
      // Before its mark: it waits in the lane, and is matched when a reader
      // reaches the mark.
      early.push_back(keep_arrival_paid(a));
      l.lock.unlock();
      return;
    }
  }
  // Kept unexpected, an eager payload is copied: its credit goes back now,
  // so that a lane receive can take it without the engine.
  const bool tiny = inlinable(a);
  const match::ArriveResult res = l.matcher.arrive_with(
      match::Key{a.source, a.h.tag},
      [&] {
        if (tiny) {
          l.inlined.store(l.inlined.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
          if (link_) link_->consumed(a.source, a.credit);
          progress::Arrival b = a;
          b.credit = 0;
          return inline_cookie(b);
        }
        return reinterpret_cast<match::Cookie>(keep_arrival_paid(a));
      },
      tiny ? inline_payload(a) : 0);
  if (!res.matched()) {
    l.lock.unlock();
    return;
  }
  auto *r = reinterpret_cast<Request *>(res.partner);
  if (r->lane) --l.waiting;
  l.lock.unlock();
  if (r->lane) engine_takes(r);
  else receive_unqueued();
  deliver_arrival(r, a);
}

int P2PComm::lane_progress() {
  int n = 0;
  if (lanes_->handoffs_pending.exchange(false, std::memory_order_acq_rel)) {
    for (int k = 0; k < lanes_->count(); ++k) {
      Lanes::Lane &l = lanes_->lane(k);
      l.lock.lock();
      l.handoffs.swap(l.handoffs_spare);
      l.lock.unlock();
      for (const Lanes::Handoff &h : l.handoffs_spare) {
        std::unique_ptr<Message> m(h.m);
        if (h.r->lane) engine_takes(h.r);
        else receive_unqueued();
        deliver(h.r, *m);
        unexpected_consumed(*m);
        ++n;
      }
      l.handoffs_spare.clear();
    }
  }
  bool waiting = false;
  for (int k = 0; k < lanes_->count(); ++k) {
    Lanes::Lane &l = lanes_->lane(k);
    // (Its holder takes the arrivals in; owed marks wait for the next step.)
    if (!l.lock.try_lock()) continue;
    lane_pay_all_marks(l);
    n += lane_take_in(l, true);
    waiting = waiting || l.waiting > 0;
    l.lock.unlock();
  }
  // A lane receive may wait for an engine message that a transport holds
  // back while this process holds too much unexpected data (pmpi's parked
  // landing receives): as for a receive queued in the engine.
  if (waiting) want_more();
  return n;
}

void P2PComm::engine_takes(Request *r) {
  // Counted as the engine's operations until they finish, so that the
  // communicator is not detached under a transfer they wait for.
  r->lane_engine = true;
  op_started();
}

template <class Pred>
bool P2PComm::any_lane(Pred pred) {
  if (!lanes_) return false;
  for (int k = 0; k < lanes_->count(); ++k) {
    Lanes::Lane &l = lanes_->lane(k);
    l.lock.lock();
    const bool yes = pred(l);
    l.lock.unlock();
    if (yes) return true;
  }
  return false;
}

bool P2PComm::lane_receives_waiting() {
  return any_lane([](const Lanes::Lane &l) { return l.waiting > 0; });
}

bool P2PComm::lanes_idle() {
  // Owed marks too: a peer's engine envelope waits for each of them.
  return !any_lane([](const Lanes::Lane &l) { return l.waiting > 0 || !l.handoffs.empty() || l.owes; });
}

bool P2PComm::lane_detach() {
  if (!lanes_idle()) return false;
  // Messages nobody received (erroneous, or cancelled work): reclaimed, and
  // the transport told to drop what it keeps for them.
  for (int k = 0; k < lanes_->count(); ++k) {
    Lanes::Lane &l = lanes_->lane(k);
    l.lock.lock();
    match::Drained left = l.matcher.drain();
    for (auto &q : l.early)
      for (Message *e : q) left.unexpected.push_back(match::Entry{{}, reinterpret_cast<match::Cookie>(e), 0});
    l.early.clear();
    l.lock.unlock();
    for (const match::Entry &e : left.unexpected) {
      if (is_inline(e.cookie)) continue;
      std::unique_ptr<Message> m(reinterpret_cast<Message *>(e.cookie));
      if (m->kind == kRendezvous && link_) link_->discard(m->arrival());
    }
  }
  return true;
}

void P2PComm::lane_mark_sent(int dest, const WireHeader &h) {
  if (!lanes_) return;
  const bool matched = h.kind == kEager || h.kind == kSingleCopy || h.kind == kGpuRendezvous ||
                       h.kind == kGpuRendezvousBare ||
                       (h.kind == kRendezvous && (h.flags & progress::kFlagGpuChunk) == 0);
  if (matched) lane_mark(dest, h.tag);
}

std::uint64_t P2PComm::lane_count(std::atomic<std::uint64_t> Lanes::Lane::*counter) const {
  std::uint64_t n = 0;
  if (lanes_)
    for (int k = 0; k < lanes_->count(); ++k) n += (lanes_->lane(k).*counter).load(std::memory_order_relaxed);
  return n;
}

bool P2PComm::lane_inbound_waiting() {
  if (!lanes_) return false;
  for (int k = 0; k < lanes_->count(); ++k) {
    Lanes::Lane &l = lanes_->lane(k);
    if (!l.lock.try_lock()) continue;  // its holder is taking them in
    const bool waiting = l.node.inbound_waiting() || l.owes;
    l.lock.unlock();
    if (waiting) return true;
  }
  return false;
}

// ---- either side ----

void P2PComm::lane_take_message(Lanes::Lane &l, progress::shm::Ring &ring, const progress::shm::Message &m,
                                bool engine_locked) {
  LaneHeader h;
  std::memcpy(&h, m.header, sizeof h);
  lane_arrival(l, h, m.data, m.bytes, engine_locked);
  ring.pop();
}

bool P2PComm::lane_pass_mark(Lanes::Lane &l, progress::shm::Ring &ring, std::deque<Message *> &early,
                             bool engine_locked) {
  ring.pop();
  l.marks.store(l.marks.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (early.empty()) return false;
  Message *e = early.front();
  early.pop_front();
  lane_match_early(l, e, engine_locked);
  return true;
}

Message *P2PComm::keep_arrival_paid(const progress::Arrival &a) {
  Message *m = keep_arrival(a);
  if (m->kind == kEager && link_) {
    link_->consumed(m->source, m->credit);
    m->credit = 0;
  }
  return m;
}

void P2PComm::lane_engine_step(bool due) {
  if (!due) return;
  progress::EngineLock lock(engine_mutex(), std::try_to_lock);
  if (lock.owns_lock()) progress_poll();
}

int P2PComm::lane_take_in(Lanes::Lane &l, bool engine_locked) {
  int n = 0;
  progress::shm::Message m{};
  for (std::size_t i = 0; i < l.node.inbound(); ++i) {
    progress::shm::Ring &ring = l.node.in_ring(i);
    auto &early = l.early[static_cast<std::size_t>(l.node.in_source(i))];
    for (int b = 0; b < kLaneBudget && ring.peek(&m); ++b) {
      // At a mark the engine's envelope goes: matched now if it came, else
      // whoever takes it in matches it there.
      if (m.id == kLaneMark && (early.empty() || !lane_pass_mark(l, ring, early, engine_locked))) break;
      if (m.id != kLaneMark) lane_take_message(l, ring, m, engine_locked);
      ++n;
    }
  }
  return n;
}

void P2PComm::lane_arrival(Lanes::Lane &l, const LaneHeader &h, const void *payload, std::size_t bytes,
                           bool engine_locked) {
  progress::Arrival a;
  a.source = h.source;
  a.h = WireHeader{h.tag, kEager, bytes, 0, 0};
  a.payload = static_cast<const char *>(payload);
  a.payload_bytes = bytes;
  const bool tiny = inlinable(a);
  const match::ArriveResult res = l.matcher.arrive_with(
      match::Key{h.source, h.tag},
      [&] {
        if (!tiny) return reinterpret_cast<match::Cookie>(keep_arrival(a));
        l.inlined.store(l.inlined.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return inline_cookie(a);
      },
      tiny ? inline_payload(a) : 0);
  l.messages.store(l.messages.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (!res.matched()) return;
  auto *r = reinterpret_cast<Request *>(res.partner);
  if (r->lane) {
    --l.waiting;
    lane_complete(r, a.payload, bytes, h.source, h.tag);
  } else if (engine_locked) {
    receive_unqueued();
    if (r->host_capacity >= 0) {
      deliver_eager_host(r, h.source, h.tag, a.payload, bytes);
    } else {
      Message m;
      m.take_arrival(a);
      deliver(r, m);
    }
  } else {
    // An engine receive (a derived type, device memory, a blocking call's
    // own request): the engine completes it at its next progress step.
    l.handoffs.push_back(Lanes::Handoff{r, keep_arrival(a)});
    lanes_->handoffs_pending.store(true, std::memory_order_release);
  }
}

void P2PComm::lane_complete(Request *r, const char *payload, std::uint64_t bytes, int source, int tag) {
  const auto capacity = static_cast<std::uint64_t>(r->host_capacity);
  const std::uint64_t n = bytes < capacity ? bytes : capacity;
  if (n > 0) std::memcpy(static_cast<char *>(r->rbuf) + r->host_lb, payload, n);
  r->st_source = source;
  r->st_tag = tag;
  r->st_bytes = static_cast<MPI_Count>(n);
  r->st_error = bytes > capacity ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
  r->queued = false;
  // MPI_Request_free'd while it waited (lane_free): nobody will look again.
  if (r->user_freed) {
    lane_request_recycle(r);
    return;
  }
  r->complete = true;  // release: the fields above first
}

// ---- the lock-free paths ----

bool P2PComm::lane_send(const void *buf, int count, MPI_Datatype dtype, int dest, int tag) {
  if (!lanes_ || dest == rank_ || dest < 0 || progress::common_type_size(dtype) <= 0) return false;
  const progress::Layout lay = progress::layout_of(dtype, count);
  const auto bytes = static_cast<std::size_t>(lay.bytes);
  if (!lay.contiguous || bytes > lanes_->max_bytes()) return false;
  if (bytes > 0 && device::device_of(buf) >= 0) return false;
  Lanes::Lane &l = lanes_->lane(lanes_->lane_of(tag));
  const LaneHeader h{rank_, tag};
  const char *payload = static_cast<const char *>(buf) + lay.true_lb;
  for (unsigned tries = 1;; ++tries) {
    l.lock.lock();
    const bool sent = lane_pay_marks(l, dest) && l.node.send(dest, kLaneData, &h, sizeof h, payload, bytes);
    // A full ring waits for the peer, which may be waiting for us.
    if (!sent) lane_take_in(l, false);
    l.lock.unlock();
    if (sent) return true;
    lane_engine_step(tries % kLaneSpinsPerEngineStep == 0);
    cpu_relax();
  }
}

Request *P2PComm::lane_irecv(void *buf, int count, MPI_Datatype dtype, int source, int tag) {
  if (!lanes_ || source == rank_ || source < 0 || progress::common_type_size(dtype) <= 0) return nullptr;
  const progress::Layout lay = progress::layout_of(dtype, count);
  // A receive larger than a lane message waits for the engine's messages
  // (rendezvous, single copy): posted through the engine it is completed
  // there, without a hand-over from the lane to the next progress step.
  if (!lay.contiguous || static_cast<std::size_t>(lay.bytes) > lanes_->max_bytes() ||
      (lay.bytes > 0 && device::device_of(buf) >= 0))
    return nullptr;
  Request *r = lane_request(ReqKind::kRecv);
  r->rbuf = buf;
  r->count = count;
  r->dtype = dtype;
  r->peer = source;
  r->tag = tag;
  r->host_capacity = static_cast<std::int64_t>(lay.bytes);
  r->host_lb = lay.true_lb;
  r->rbuf_device = Request::kRbufHost;
  r->comm.borrow(this);
  r->lane_user = user_;
  r->active = true;
  Lanes::Lane &l = lanes_->lane(lanes_->lane_of(tag));
  l.lock.lock();
  const match::PostResult res = l.matcher.post(match::Key{source, tag}, reinterpret_cast<match::Cookie>(r));
  if (!res.matched()) {
    r->queued = true;
    r->match_handle = res.handle;
    ++l.waiting;
    l.lock.unlock();
    return r;
  }
  if (is_inline(res.partner)) {
    // Tiny: the payload is the matcher's aux word (its credit went back
    // when it was kept).
    char payload[sizeof res.partner_aux];
    std::memcpy(payload, &res.partner_aux, sizeof payload);
    lane_complete(r, payload, inline_bytes(res.partner), source, tag);
    l.lock.unlock();
    return r;
  }
  auto *m = reinterpret_cast<Message *>(res.partner);
  if (m->kind == kEager && m->flags == 0 && m->credit == 0) {
    lane_complete(r, m->payload, m->bytes, m->source, m->tag);
    l.lock.unlock();
    delete m;  // NOLINT: owned by the matcher's queue until now
    return r;
  }
  // A rendezvous, a synchronous send's envelope, a GPU descriptor: the
  // engine's to deliver.
  l.handoffs.push_back(Lanes::Handoff{r, m});
  lanes_->handoffs_pending.store(true, std::memory_order_release);
  l.lock.unlock();
  return r;
}

bool P2PComm::lane_test(Request *r) {
  if (r->complete) return true;
  Lanes::Lane &l = lanes_->lane(lanes_->lane_of(r->tag));
  if (l.lock.try_lock()) {
    lane_take_in(l, false);
    l.lock.unlock();
  }
  if (r->complete) return true;
  // The engine's part (handed-over receives, rendezvous data, envelopes
  // behind a mark): every so many tests, not on each, or threads testing
  // side by side would take turns on the engine lock again.
  static thread_local unsigned tests = 0;
  lane_engine_step(++tests % kLaneSpinsPerEngineStep == 0 ||
                   lanes_->handoffs_pending.load(std::memory_order_acquire));
  return r->complete;
}

void P2PComm::lane_wait(Request *r) {
  if (r->complete) return;
  Lanes::Lane &l = lanes_->lane(lanes_->lane_of(r->tag));
  unsigned idle = 0;
  while (!r->complete) {
    int n = 0;
    if (l.lock.try_lock()) {
      n = lane_take_in(l, false);
      l.lock.unlock();
    }
    if (r->complete) return;
    if (n == 0 && (++idle % kLaneSpinsPerEngineStep == 0 || lanes_->handoffs_pending.load(std::memory_order_acquire))) {
      lane_engine_step(true);
    } else if (n == 0) {
      cpu_relax();
    }
  }
}

bool P2PComm::lane_free(Request *r) {
  // Complete: its communicator may be freed and its lanes gone.
  if (r->complete) return false;
  Lanes::Lane &l = lanes_->lane(lanes_->lane_of(r->tag));
  l.lock.lock();
  const bool done = r->complete;
  if (!done) r->user_freed = true;  // lane_complete recycles it
  l.lock.unlock();
  return !done;
}

}  // namespace mpix::p2p
