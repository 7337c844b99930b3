#include "engine.h"
#include "unexpected.h"
#include "comms.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>

#include "datatype.h"
#include "device/memtype.h"
#include "gpu_pack.h"
#include "gpu_path.h"
#include "gpu_tags.h"
#include "gpu_wire.h"
#include "liveness.h"
#include "match/cpu_relax.h"
#include "progress/immortal.h"
#include "progress/single_copy.h"
#include "region_batch.h"
#include "stage_clock.h"
#include "src/errors.h"

namespace mpix::p2p {
using namespace unexpected;
namespace {

P2PConfig g_config;
// Posted receives queued in any communicator's matcher; read without the
// engine lock by the liveness thread. Written only under the engine lock,
// so a load and a store, not a locked read-modify-write (two per receive).
std::atomic<long> g_receives_pending{0};
void add_receives_pending(long delta) {
  g_receives_pending.store(g_receives_pending.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
}
constexpr unsigned kPollsBeforeYield = 32;
// A waiting thread lets go of the engine lock after every idle poll only
// while another thread waits for it (and once per this many polls anyway,
// for a thread that took the lock without saying so): an unlock and a
// lock are two atomic operations a poll, most of an idle poll's cost.
constexpr unsigned kPollsPerUnlock = 8;
// Idle polls between calls into the MPI library for its own progress (see
// progress_poll): rare enough to cost nothing on mpix's latency path. (At 16
// a small-message ping-pong, ~10 idle polls a message, called PMPI_Iprobe
// every other message, with the MPI library's global lock when a progress
// thread made it MPI_THREAD_MULTIPLE; 128 idle polls are still a few
// microseconds.)
constexpr unsigned kPollsPerMpiNudge = 128;
// MPI_Finalize's drain gives up after this long without any change (a
// message to a communicator its receiver freed never lands).
constexpr auto kDrainPatience = std::chrono::seconds(2);
progress::EngineMutex g_engine_mutex;
// Threads blocked in engine_lock() (or relock()) right now.
std::atomic<int> g_lock_waiters{0};
// relock(): pauses between two tries of the lock (a try is an atomic
// operation on the lock's cache line, which the holder needs too).
constexpr int kPausesPerLockTry = 4;
// progress_wait(): pauses at most that an idle poller leaves the lock to a
// waiting thread before it takes it back.
constexpr int kHandoffPauses = 64;

using match::cpu_relax;

// Handled communicators with landing receives. The strong references keep
// each alive until detach(), which runs outside completion callbacks.
std::vector<std::shared_ptr<P2PComm>> &attached() {
  static Immortal<std::vector<std::shared_ptr<P2PComm>>> v;
  return v.get();
}

// Detached lane communicators, kept (their rings too) until no thread is in
// a lane's lock-free wait or test.
std::vector<std::shared_ptr<P2PComm>> &lingering() {
  static Immortal<std::vector<std::shared_ptr<P2PComm>>> v;
  return v.get();
}

// Then without their lanes until MPI_Finalize: a lane request borrows its
// communicator (no count per message), and one completed but not yet
// concluded still reads it (its error handler's communicator).
std::vector<std::shared_ptr<P2PComm>> &shells() {
  static Immortal<std::vector<std::shared_ptr<P2PComm>>> v;
  return v.get();
}

match::Key pattern_key(int source, int tag) {
  return match::Key{source == MPI_ANY_SOURCE ? match::kAnySource : source,
                    tag == MPI_ANY_TAG ? match::kAnyTag : tag};
}

// A blocking send's completion, waited for by its caller.
struct Waiter final : progress::Pending {
  bool done = false;
  int error = MPI_SUCCESS;
  void on_complete(const MPI_Status &st) override {
    error = st.MPI_ERROR;
    done = true;
  }
};

}  // namespace

namespace {
// Freed Messages, per thread (a message may be freed by another thread than
// the one that made it: it then joins that thread's cache). Bounded, at
// about 3.4 MB: beyond that a flood's records go back to the allocator.
// (4096 records made a queue of 16K unexpected messages pay malloc and free
// for three in four of them, 9% of its receives' instructions.)
// The per-message part is plain data (a thread_local whose type has a
// destructor is reached through a guard and __tls_get_addr on every use);
// the storage and its release at thread exit belong to CacheOwner, touched
// once per thread. Messages freed while a thread exits (static destructors
// after its thread_local ones) bypass the cache: gone is set then.
constexpr std::uint32_t kMessageCacheMax = 16384;
struct MessageCache {
  void **items;
  std::uint32_t n;
  bool gone;
};
thread_local MessageCache t_messages __attribute__((tls_model("initial-exec"))) = {nullptr, 0, false};
struct CacheOwner {
  std::vector<void *> storage;
  CacheOwner() : storage(kMessageCacheMax) { t_messages.items = storage.data(); }
  ~CacheOwner() {
    MessageCache &c = t_messages;
    c.gone = true;
    for (std::uint32_t i = 0; i < c.n; ++i) ::operator delete(c.items[i]);
    c.n = 0;
    c.items = nullptr;
  }
};
}  // namespace

void *Message::operator new(std::size_t bytes) {
  MessageCache &c = t_messages;
  if (c.n == 0) return ::operator new(bytes);
  return c.items[--c.n];
}

void Message::keep_payload(const char *from) {
  char *to = small;
  if (bytes > kSmall) {
    owned = std::make_unique<char[]>(bytes);
    to = owned.get();
  }
  if (bytes > 0) std::memcpy(to, from, bytes);
  payload = to;
}

Message::~Message() {
  if (gpu_waiting_on != nullptr) gpu_forget(*this);
}

void Message::operator delete(void *p) noexcept {
  MessageCache &c = t_messages;
  if (c.items == nullptr && !c.gone) {
    try {
      static thread_local CacheOwner owner;  // sets items; frees the cache at thread exit
      (void)owner;
    } catch (...) {  // no cache for this thread
    }
  }
  if (c.items == nullptr || c.n >= kMessageCacheMax) {
    ::operator delete(p);
    return;
  }
  c.items[c.n++] = p;
}

const P2PConfig &p2p_config() { return g_config; }
void p2p_configure(const P2PConfig &c) { g_config = c; }

namespace {
// Contention on the engine lock, for MPIX_VERBOSE: written by the thread
// that just took the lock, so plain counters.
LockWaitStats g_lock_wait_stats;
}  // namespace

LockWaitStats lock_wait_stats() { return g_lock_wait_stats; }

void relock(progress::EngineLock &lock) {
  if (lock.try_lock()) return;
  const auto t0 = std::chrono::steady_clock::now();
  g_lock_waiters.fetch_add(1, std::memory_order_relaxed);
  // The holder lets go within a poll or a call, well under a microsecond.
  // A thread that gives its core up instead costs microseconds (with a
  // futex sleep, threads receiving side by side convoyed: four at 0.29x of
  // one thread's rate, bench_threads). A bounded spin first; past it, the
  // lock yields the core, then naps (oversubscribed cores).
  bool got = false;
  for (int i = 0; i < g_config.lock_spins && !got; ++i) {
    for (int k = 0; k < kPausesPerLockTry; ++k) cpu_relax();
    got = lock.try_lock();
  }
  if (!got) lock.lock();
  g_lock_waiters.fetch_sub(1, std::memory_order_relaxed);
  ++g_lock_wait_stats.waits;
  g_lock_wait_stats.wait_ns += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

progress::EngineMutex &engine_mutex() { return g_engine_mutex; }
bool receives_pending() { return g_receives_pending.load(std::memory_order_relaxed) > 0; }
void note_receive_waiting(int delta) { add_receives_pending(delta); }

namespace {
// What detached communicators' matchers did (under the engine lock).
MatchTotals &detached_totals() {
  static Immortal<MatchTotals> t;
  return t.get();
}
}  // namespace

MatchTotals match_totals() {
  MatchTotals t = detached_totals();
  for (const auto &c : attached()) {
    const match::Stats s = c->matcher_->stats();
    t.matches += s.matches;
    // Arrivals collected in an open region wait for a receive as much as
    // those in the matcher do.
    t.unexpected_now += s.unexpected_depth + c->region_arrivals_.size();
    t.posted_now += c->receives_waiting_;
    t.unexpected_max = std::max<std::uint64_t>(t.unexpected_max, s.max_unexpected_depth);
    t.unexpected_inline += c->unexpected_inline_;
    if (c->lanes_) {
      for (int k = 0; k < c->lanes_->count(); ++k) {
        Lanes::Lane &l = c->lanes_->lane(k);
        l.lock.lock();
        const match::Stats ls = l.matcher.stats();
        const auto waiting = static_cast<std::uint64_t>(l.waiting);
        l.lock.unlock();
        t.matches += ls.matches;
        t.unexpected_now += ls.unexpected_depth;
        t.posted_now += waiting;
        t.unexpected_max = std::max<std::uint64_t>(t.unexpected_max, ls.max_unexpected_depth);
      }
      t.unexpected_inline += c->lane_inlined();
      t.lane_messages += c->lane_messages();
      t.lane_marks += c->lane_marks();
    }
  }
  return t;
}

void P2PComm::receive_queued() {
  ++receives_waiting_;
  add_receives_pending(1);
}

void P2PComm::receive_unqueued() {
  --receives_waiting_;
  add_receives_pending(-1);
}

P2PComm::P2PComm(const Hints &hints) : hint_bits_(hints.bits()) {}

// attached() holds every handled communicator until detach(): by the time
// the last reference goes, nothing is left to tear down.
P2PComm::~P2PComm() = default;

int P2PComm::attach(MPI_Comm comm, bool wildcards, progress::EngineLock &lock) {
  // Collectives without the engine lock: a peer may need this process to
  // progress meanwhile (a rendezvous it started before creating comm).
  lock.unlock();
  int rc = PMPI_Comm_dup(comm, &ctrl_);
  if (rc == MPI_SUCCESS) rc = PMPI_Comm_dup(comm, &data_);
  relock(lock);
  if (rc != MPI_SUCCESS) return rc;
  // Truncation of a rendezvous receive must come back in its status, not
  // abort the job: the user's handler decides, at the API boundary.
  PMPI_Comm_set_errhandler(ctrl_, MPI_ERRORS_RETURN);
  PMPI_Comm_set_errhandler(data_, MPI_ERRORS_RETURN);
  PMPI_Comm_rank(comm, &rank_);
  PMPI_Comm_size(comm, &size_);
  // Which processes the members are (single-copy goes by node and process).
  world_.assign(static_cast<std::size_t>(size_), -1);
  {
    MPI_Group mine = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
    PMPI_Comm_group(comm, &mine);
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    std::vector<int> ranks(static_cast<std::size_t>(size_));
    for (int i = 0; i < size_; ++i) ranks[static_cast<std::size_t>(i)] = i;
    PMPI_Group_translate_ranks(mine, size_, ranks.data(), world, world_.data());
    for (int &w : world_)
      if (w == MPI_UNDEFINED) w = -1;
    PMPI_Group_free(&mine);
    PMPI_Group_free(&world);
  }
  int *tag_ub = nullptr, flag = 0;
  PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
  if (flag && tag_ub != nullptr) data_tag_limit_ = *tag_ub;
  next_data_tag_.assign(static_cast<std::size_t>(size_), 0);

  match::Mode mode = match::Mode::kOrdered;
  if (wildcards) mode = match::Mode::kOrderedWildcard;
  else if (hints().allow_overtaking) mode = match::Mode::kUnordered;
  matcher_ = std::make_unique<match::Matcher>(mode);
  user_ = comm;

  if (!wildcards && lanes_configured() > 0) {
    // Collective over the members (ctrl_: mpix's own traffic), and before
    // the link: an envelope must never find the communicator without the
    // lanes its sender has.
    lock.unlock();
    lanes_ = Lanes::create(ctrl_, lanes_configured(), lanes_tag_shift(), lanes_eager_limit());
    relock(lock);
  }
  // Arrivals may come in as soon as the link exists: the matcher is ready.
  progress::LinkParams params;
  params.user = comm;
  params.ctrl = ctrl_;
  params.data = data_;
  params.sink = this;
  rc = progress::link_create(params, lock, &link_);
  if (rc != MPI_SUCCESS) return rc;
  handled_ = true;
  attached().push_back(self());
  return MPI_SUCCESS;
}

void P2PComm::unexpected_consumed(const Message &m) {
  if (link_) link_->consumed(m.source, m.credit);
}

void P2PComm::arrived(const progress::Arrival &a) {
  MPIX_STAGE(kArrived);
  // The transport decoded its own framing; what the envelope and a GPU
  // descriptor say is the protocol's to check, before the matcher (which
  // takes a negative tag for a wildcard) or a copy trusts any of it.
  progress::WireError bad = progress::check_header(a.h, a.payload_bytes, {data_tag_limit_, sizeof(GpuRts)});
  GpuRts rts;
  if (bad == progress::WireError::kOk && a.h.kind == kGpuRendezvous)
    bad = decode_gpu_rts(a.payload, a.payload_bytes, a.h.bytes, &rts);
  progress::SingleCopyRts one;
  if (bad == progress::WireError::kOk && a.h.kind == kSingleCopy)
    bad = progress::decode_single_copy(a.payload, a.payload_bytes, a.h.bytes, &one);
  if (bad != progress::WireError::kOk) {
    progress::report_malformed("point-to-point", a.source, bad);
    if (link_) {  // (unset while attach() still exchanges)
      if (a.h.kind == kRendezvous) link_->discard(a);  // UCX keeps its data until told
      link_->consumed(a.source, a.credit);
    }
    return;
  }
  if (a.h.kind == progress::kSplitAsk || a.h.kind == progress::kSplitDone) {
    if (link_) {
      split_arrived(a);
      link_->consumed(a.source, a.credit);
    }
    return;
  }
  if (gpu_control_arrival(*this, a)) {
    // Never matched: it belongs to a GPU transfer in flight.
    if (link_) link_->consumed(a.source, a.credit);
    return;
  }
  if (region_collects(false)) {
    // Matched at the next flush, after the transport's buffer is reused.
    Message *m = keep_arrival(a);  // owned by region_arrivals_ until the flush
    region_arrivals_.push_back(
        match::BatchItem{match::BatchKey{0, m->source, m->tag}, reinterpret_cast<match::Cookie>(m)});
    return;
  }
  if (lanes_) {
    lane_engine_arrival(a);
    return;
  }
  // A message a posted receive takes at once needs no record of its own
  // beyond this call: the common case of a waiting receiver pays for no
  // Message allocated, kept and freed.
  const bool tiny = inlinable(a) && matcher_->keeps_aux();
  const match::ArriveResult res = matcher_->arrive_with(
      match::Key{a.source, a.h.tag},
      [&] {
        if (tiny) {
          ++unexpected_inline_;
          return inline_cookie(a);
        }
        return reinterpret_cast<match::Cookie>(keep_arrival(a));  // owned by the matcher's queue now
      },
      tiny ? inline_payload(a) : 0);
  if (res.matched()) {
    receive_unqueued();
    deliver_arrival(reinterpret_cast<Request *>(res.partner), a);
  }
}

void P2PComm::deliver_arrival(Request *r, const progress::Arrival &a) {
  if (a.h.kind == kEager && a.h.flags == 0 && r->host_capacity >= 0) {
    // The streaming receiver's case: straight from the transport's buffer.
    deliver_eager_host(r, a.source, a.h.tag, a.payload, a.h.bytes);
    if (link_) link_->consumed(a.source, a.credit);
    return;
  }
  Message m;
  m.take_arrival(a);
  deliver(r, m);
  unexpected_consumed(m);
}

Message *P2PComm::keep_arrival(const progress::Arrival &a) {
  auto m = std::make_unique<Message>();
  m->take_arrival(a);
  // Unexpected: the transport's buffer is about to be reused, so the payload
  // moves to memory of its own size (a flood of small messages costs what
  // they carry, not a landing buffer each).
  if (m->kind == kEager && m->bytes > 0) {
    m->keep_payload(m->payload);
  } else if (m->kind == kSingleCopy) {
    static_assert(sizeof(progress::SingleCopyRts) <= Message::kSmall, "the descriptor is kept in the message");
    std::memcpy(m->small, m->payload, sizeof(progress::SingleCopyRts));
    m->payload = m->small;
  } else {
    gpu_keep_descriptor(*this, *m);
  }
  return m.release();
}

namespace {
// Moves the items for which pred holds from `from` to the end of `to`,
// keeping the relative order in both.
template <class Pred>
void split_out(std::vector<match::BatchItem> &from, std::vector<match::BatchItem> &to, Pred pred) {
  std::size_t kept = 0;
  for (const match::BatchItem &b : from) {
    if (pred(b)) to.push_back(b);
    else from[kept++] = b;
  }
  from.resize(kept);
}

// Entries taken out of the matcher, ahead of `to` (in their order).
void prepend_entries(const std::vector<match::Entry> &entries, std::vector<match::BatchItem> &to) {
  if (entries.empty()) return;
  std::vector<match::BatchItem> all;
  all.reserve(entries.size() + to.size());
  for (const match::Entry &e : entries)
    all.push_back(match::BatchItem{match::BatchKey{0, e.key.source, e.key.tag}, e.cookie});
  all.insert(all.end(), to.begin(), to.end());
  to.swap(all);
}

// Drain the matcher into a batch when the batch has at least 1/4 of its
// queued entries (see region_flush).
constexpr std::size_t kRegionDrainRatio = 4;
}  // namespace

int P2PComm::region_flush() {
  if (!region_pending()) return 0;
  // Local lists: deliveries below must not see half-processed members.
  std::vector<match::BatchItem> arrivals, receives;
  arrivals.swap(region_spare_[0]);
  receives.swap(region_spare_[1]);
  arrivals.swap(region_arrivals_);
  receives.swap(region_receives_);
  const int handled = static_cast<int>(arrivals.size() + receives.size());
  // Keys with older entries still queued in the matcher (receives posted
  // before the region, messages a previous batch left over) must meet those
  // first: their entries go one by one through the matcher. Every other key
  // is decided by the batch alone; the two sets share no key, so neither
  // can take the other's partner.
  std::vector<match::BatchItem> &seq_arrivals = region_seq_[0], &seq_receives = region_seq_[1];
  seq_arrivals.clear();
  seq_receives.clear();
  const match::Stats st = matcher_->stats();
  const std::size_t queued = st.posted_depth + st.unexpected_depth;
  if (queued != 0 && matcher_->mode() != match::Mode::kOrderedWildcard &&
      static_cast<std::size_t>(handled) * kRegionDrainRatio >= queued) {
    // The queued entries are older than the batch: put them first in each
    // list (queue order kept), so the batch's per-key FIFO pairs them first
    // too, and the whole state is matched as one batch. Re-queueing what is
    // left costs O(queued), paid for by the batch being at least
    // 1/kRegionDrainRatio of it. (Queued wildcard receives rule this out:
    // their precedence is not per key.)
    match::Drained old = matcher_->drain();
    for (match::Entry &e : old.unexpected)  // a batch's arrivals are records
      if (is_inline(e.cookie))
        e.cookie = reinterpret_cast<match::Cookie>(message_record(e.cookie, e.aux, e.key.source, e.key.tag).release());
    prepend_entries(old.unexpected, arrivals);
    prepend_entries(old.posted, receives);
  } else if (queued != 0) {
    const auto busy = [this](const match::BatchItem &b) {
      return matcher_->key_busy(match::Key{b.key.source, b.key.tag});
    };
    split_out(arrivals, seq_arrivals, busy);
    split_out(receives, seq_receives, busy);
  }
  if (!arrivals.empty() && !receives.empty()) {
    const RegionBatchView v = region_batch_match(arrivals, receives);
    for (std::uint32_t i = 0; i < v.n_pairs; ++i) {
      auto *r = reinterpret_cast<Request *>(v.pairs[i].receive_cookie);
      std::unique_ptr<Message> m(reinterpret_cast<Message *>(v.pairs[i].arrival_cookie));
      receive_unqueued();
      unexpected_consumed(*m);
      deliver(r, *m);
    }
    // Unmatched arrivals and receives share no key (the batch is maximal):
    // they only queue.
    for (std::uint32_t i = 0; i < v.n_unmatched_arrivals; ++i)
      region_queue_arrival(arrivals[v.unmatched_arrivals[i]]);
    for (std::uint32_t i = 0; i < v.n_unmatched_receives; ++i)
      region_queue_receive(receives[v.unmatched_receives[i]]);
  } else {
    for (const match::BatchItem &a : arrivals) region_queue_arrival(a);
    for (const match::BatchItem &r : receives) region_queue_receive(r);
  }
  // The order of the two loops does not matter without wildcards; with
  // them, older wildcard receives still come first (they are queued).
  if (!seq_arrivals.empty() || !seq_receives.empty())
    region_batch_note_sequential(static_cast<std::uint64_t>(seq_arrivals.size() + seq_receives.size()));
  for (const match::BatchItem &a : seq_arrivals) region_queue_arrival(a);
  for (const match::BatchItem &r : seq_receives) region_queue_receive(r);
  arrivals.clear();
  receives.clear();
  region_spare_[0].swap(arrivals);
  region_spare_[1].swap(receives);
  return handled;
}

bool P2PComm::region_collects_open(bool may_start) {
  // A lane communicator matches a region's messages the ordered way, one of
  // the matchings a region allows: its lanes keep no batch.
  if (lanes_) return false;
  if (region_pending() || (may_start && matcher_->depth() >= region_batch_min())) return true;
  region_batch_note_direct(1);
  return false;
}

void P2PComm::region_collect(Request *r) {
  // Matched at the next flush (progress, probe or region close); wildcards
  // are refused inside a region (check_pattern), so the key is exact.
  r->queued = true;
  region_receives_.push_back(
      match::BatchItem{match::BatchKey{0, r->peer, r->tag}, reinterpret_cast<match::Cookie>(r)});
  receive_queued();
  link_->want_more();
}

int P2PComm::region_progress() {
  const bool settled = region_receives_.size() <= region_receives_seen_;
  region_receives_seen_ = region_receives_.size();
  if (!settled) return 0;
  if (region_receives_.empty() && matcher_->stats().posted_depth == 0) return 0;
  return region_flush();
}

void P2PComm::region_queue_arrival(const match::BatchItem &a) {
  auto *m = reinterpret_cast<Message *>(a.cookie);
  const match::ArriveResult res = matcher_->arrive(match::Key{a.key.source, a.key.tag}, a.cookie);
  if (!res.matched()) return;  // stays unexpected (already counted)
  std::unique_ptr<Message> owned(m);
  receive_unqueued();
  unexpected_consumed(*owned);
  deliver(reinterpret_cast<Request *>(res.partner), *owned);
}

void P2PComm::region_queue_receive(const match::BatchItem &item) {
  auto *r = reinterpret_cast<Request *>(item.cookie);
  const match::PostResult res = matcher_->post(match::Key{item.key.source, item.key.tag}, item.cookie);
  if (res.matched()) {
    Claimed claimed(res.partner, res.partner_aux, item.key.source, item.key.tag);
    Message &m = *claimed;
    receive_unqueued();
    unexpected_consumed(m);
    deliver(r, m);
    return;
  }
  if (res.status != match::Status::kQueued) {
    receive_unqueued();
    r->finish(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_ERR_INTERN, 0);
    return;
  }
  r->match_handle = res.handle;  // r->queued stays set
}

bool P2PComm::refuses_wildcard(int source, int tag, Err *why) const {
  const bool region = handled_ && region_open();
  const Hints h = hints();
  if (source == MPI_ANY_SOURCE && (h.no_any_source || region)) {
    *why = Err::kWildcardSource;
    return true;
  }
  if (tag == MPI_ANY_TAG && (h.no_any_tag || region)) {
    *why = Err::kWildcardTag;
    return true;
  }
  return false;
}

std::uint64_t P2PComm::capacity_bytes(const Request *r) const {
  MPI_Count size = common_type_size(r->dtype);
  if (size < 0) PMPI_Type_size_x(r->dtype, &size);
  return static_cast<std::uint64_t>(size) * static_cast<std::uint64_t>(r->count);
}

void P2PComm::classify_receive(Request *r) const {
  r->host_capacity = -1;
  const Layout l = layout_of(r->dtype, r->count);
  // One driver call, whose answer the GPU delivery uses too.
  r->rbuf_device = l.bytes > 0 ? device::device_of(r->rbuf) : Request::kRbufHost;
  if (l.contiguous && r->rbuf_device < 0) {
    r->host_capacity = static_cast<std::int64_t>(l.bytes);
    r->host_lb = l.true_lb;
  }
}

namespace {
// An eager payload of `bytes` into a contiguous host buffer of `capacity`
// bytes at `into`: what fits is copied; returns the bytes copied and sets
// *rc to MPI_ERR_TRUNCATE where the payload did not fit.
std::uint64_t copy_eager(char *into, std::uint64_t capacity, const char *payload, std::uint64_t bytes, int *rc) {
  const std::uint64_t n = bytes < capacity ? bytes : capacity;
  if (n > 0) std::memcpy(into, payload, n);
  *rc = bytes > capacity ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
  return n;
}
}  // namespace

void P2PComm::begin_recv(Request *r) {
  op_started();
  r->complete = false;
  r->st_cancelled = false;
  classify_receive(r);
}

int P2PComm::recv(void *buf, int count, MPI_Datatype dtype, int source, int tag, MPI_Status *status,
                  progress::EngineLock &lock) {
  // The receive's request lives on this stack, made only where something
  // must wait in it or deliver into it: a message already here, eager, into
  // host memory is copied out with no request at all (a flood of unexpected
  // messages received one by one paid a fifth of its receive for one).
  std::optional<Request> r;
  auto make = [&] {
    Request &q = r.emplace();
    q.kind = ReqKind::kRecv;
    q.comm.borrow(this);  // the call holds the communicator
    q.rbuf = buf;
    q.count = count;
    q.dtype = dtype;
    q.peer = source;
    q.tag = tag;
    return &q;
  };
  if (region_collects(true)) {
    Request *q = make();
    begin_recv(q);
    region_collect(q);
  } else {
    KeyMatcher km = matcher_for(tag);
    const match::PostResult res = km->post_with(pattern_key(source, tag), [&] {
      Request *q = make();
      begin_recv(q);
      q->queued = true;
      return reinterpret_cast<match::Cookie>(q);
    });
    // Queued, the lane's readers may complete it at once (under its lock):
    // the handle first.
    if (res.status == match::Status::kQueued) r->match_handle = res.handle;
    km.release();
    if (res.matched()) {
      // An eager payload into one block of host memory: copied out here,
      // the status written, no request.
      const auto host_block = [&](Layout *l) {
        *l = layout_of(dtype, count);
        return l->contiguous && (l->bytes == 0 || device::device_of(buf) < 0);
      };
      const auto copy_out = [&](const Layout &l, const char *payload, std::uint64_t bytes, int from, int with_tag) {
        int rc = MPI_SUCCESS;
        const std::uint64_t n =
            copy_eager(static_cast<char *>(buf) + l.true_lb, static_cast<std::uint64_t>(l.bytes), payload, bytes, &rc);
        status_fill(status, from, with_tag, -1, static_cast<MPI_Count>(n), false);
        return rc;
      };
      Layout l;
      if (is_inline(res.partner) && host_block(&l)) {
        // Straight from the matcher's aux word; (source, tag) is the
        // message's envelope (only the exact modes inline).
        link_->consumed(source, inline_credit(res.partner));
        char payload[kInlineMax];
        std::memcpy(payload, &res.partner_aux, sizeof payload);
        return copy_out(l, payload, inline_bytes(res.partner), source, tag);
      }
      Claimed claimed(res.partner, res.partner_aux, source, tag);
      Message &m = *claimed;
      unexpected_consumed(m);
      if (m.kind == kEager && host_block(&l)) {
        if ((m.flags & progress::kFlagSyncAck) != 0) link_->matched(m.arrival());
        return copy_out(l, m.payload, m.bytes, m.source, m.tag);
      }
      Request *q = make();
      begin_recv(q);
      deliver(q, m);
    } else if (res.status == match::Status::kQueued) {
      receive_queued();
      link_->want_more();  // it cannot match until more messages come in
    } else {
      return MPI_ERR_INTERN;  // (an invalid key: no request was made)
    }
  }
  while (!r->complete || r->inner_busy) progress_wait(lock);
  r->write_status(status);
  return r->st_error;
}

int P2PComm::start_recv(Request *r) {
  begin_recv(r);
  if (region_collects(true)) {
    region_collect(r);
    return MPI_SUCCESS;
  }
  KeyMatcher km = matcher_for(r->tag);
  const match::PostResult res = km->post(pattern_key(r->peer, r->tag), reinterpret_cast<match::Cookie>(r));
  if (res.status == match::Status::kQueued) {
    r->queued = true;
    r->match_handle = res.handle;
  }
  km.release();
  if (res.matched()) {
    Claimed claimed(res.partner, res.partner_aux, r->peer, r->tag);
    Message &m = *claimed;
    unexpected_consumed(m);
    deliver(r, m);
    return MPI_SUCCESS;
  }
  if (res.status != match::Status::kQueued) {
    op_done();
    return MPI_ERR_INTERN;
  }
  receive_queued();
  // A receive that cannot match yet needs messages to keep coming in.
  link_->want_more();
  return MPI_SUCCESS;
}

void P2PComm::deliver(Request *r, Message &m) {
  if (m.kind == kSingleCopy) {
    deliver_single_copy(r, m);  // acknowledged once read, not now
    return;
  }
  if ((m.flags & progress::kFlagSyncAck) != 0) link_->matched(m.arrival());  // the sender may complete now
  if (m.kind == kEager && r->host_capacity >= 0) {
    deliver_eager_host(r, m.source, m.tag, m.payload, m.bytes);
    return;
  }
  if (gpu_deliver(*this, r, m)) return;  // device buffer or GPU rendezvous
  r->queued = false;
  if (m.kind == kRendezvous) {
    // The payload waits at the sender (or in the MPI library underneath);
    // the transport moves it straight into the user's buffer and type.
    r->st_source = m.source;
    r->st_tag = m.tag;
    r->inner_busy = true;
    const int rc = link_->pull(m.arrival(), r->rbuf, r->count, r->dtype, r);
    if (rc != MPI_SUCCESS) {
      r->inner_busy = false;
      r->finish(m.source, m.tag, rc, 0);
    }
    return;
  }
  // Eager into a host type that is not one block (classify_receive sent
  // the contiguous ones to deliver_eager_host above).
  const std::uint64_t capacity = capacity_bytes(r);
  const std::uint64_t n = m.bytes < capacity ? m.bytes : capacity;
  int rc = m.bytes > capacity ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
  if (n > 0) {
    const int unpacked = unpack_bytes(m.payload, static_cast<int>(n), r->rbuf, r->count, r->dtype, ctrl_);
    if (unpacked != MPI_SUCCESS) rc = unpacked;
  }
  r->finish(m.source, m.tag, rc, static_cast<MPI_Count>(n));
}

void P2PComm::deliver_eager_host(Request *r, int source, int tag, const char *payload, std::uint64_t bytes) {
  r->queued = false;
  int rc = MPI_SUCCESS;
  const std::uint64_t n = copy_eager(static_cast<char *>(r->rbuf) + r->host_lb,
                                     static_cast<std::uint64_t>(r->host_capacity), payload, bytes, &rc);
  r->finish(source, tag, rc, static_cast<MPI_Count>(n));
}

void P2PComm::report_read_failure(std::size_t bytes, int source, std::int32_t pid, int err) {
  std::fprintf(stderr, "[mpix] single-copy read of %zu bytes from rank %d (process %d) failed: %s\n", bytes, source,
               static_cast<int>(pid), std::strerror(err));
}

void P2PComm::deliver_single_copy(Request *r, Message &m) {
  progress::SingleCopyRts d{};
  std::memcpy(&d, m.payload, sizeof d);  // decoded in arrived()
  r->queued = false;
  const std::uint64_t capacity = capacity_bytes(r);
  const std::size_t n = static_cast<std::size_t>(m.bytes < capacity ? m.bytes : capacity);
  int rc = m.bytes > capacity ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
  if (n > 0) {
    // Straight into a contiguous host buffer; through a copy of our own
    // into a datatype or device memory.
    const Layout l = layout_of(r->dtype, r->count);
    const bool direct = l.contiguous && rbuf_device_of(*r) < 0;
    std::unique_ptr<char[]> staged;
    char *into = direct ? static_cast<char *>(r->rbuf) + l.true_lb : nullptr;
    if (!direct) {
      staged = std::make_unique<char[]>(n);
      into = staged.get();
    } else if (split_deliver(r, m, d, into, n)) {
      return;  // completes with the sender's part, or has already
    }
    const int err = d.pid == progress::single_copy_pid()
                        ? (std::memcpy(into, reinterpret_cast<const void *>(static_cast<std::uintptr_t>(d.addr)), n), 0)
                        : progress::single_copy_read(d.pid, d.addr, into, n);
    if (err != 0) {
      report_read_failure(n, m.source, d.pid, err);
      rc = MPI_ERR_OTHER;
    } else if (!direct) {
      const int u = unpack_anywhere(staged.get(), n, r->rbuf, r->count, r->dtype, ctrl_);
      if (u != MPI_SUCCESS) rc = u;
    }
  }
  // The sender's buffer is free again (after a failed read as well: its
  // data are lost, and this receive says so).
  link_->matched(m.arrival());
  r->finish(m.source, m.tag, rc, static_cast<MPI_Count>(n));
}

bool P2PComm::transmit_single_copy(const void *buf, int count, MPI_Datatype dtype, const Layout &l, int dest,
                                   int tag, SendMode mode, Request *r, progress::EngineLock *lock, int *rc) {
  const std::size_t bytes = static_cast<std::size_t>(l.bytes);
  const int world = world_[static_cast<std::size_t>(dest)];
  if (mode == SendMode::kBuffered || !link_->eager_sync() || !progress::single_copy_to(world, bytes)) return false;
  // The descriptor (and, for a datatype, the packed bytes it points to)
  // must live until the receiver acknowledged: the link may read the
  // descriptor until then (progress/transport.h), and the receiver reads
  // the bytes. A blocking send waits here; a request keeps them.
  auto owned = std::make_unique<char[]>(sizeof(progress::SingleCopyRts) + (l.contiguous ? 0 : bytes));
  const char *src = static_cast<const char *>(buf) + l.true_lb;
  if (!l.contiguous) {
    char *packed = owned.get() + sizeof(progress::SingleCopyRts);
    const int prc = pack_bytes(buf, count, dtype, packed, static_cast<int>(bytes), ctrl_);
    if (prc != MPI_SUCCESS) {
      *rc = prc;
      if (r != nullptr) r->finish(MPI_PROC_NULL, MPI_ANY_TAG, prc, 0);
      return true;
    }
    src = packed;
  }
  Waiter waiter;
  // Large enough, the receiver may ask us to write a part (split_copy.cc):
  // the offer then stands between the link and the send's completion.
  std::uint32_t offer = 0;
  progress::Pending *done =
      split_offer(src, bytes, dest, r != nullptr ? static_cast<progress::Pending *>(r) : &waiter, &offer);
  const progress::SingleCopyRts d{reinterpret_cast<std::uintptr_t>(src), bytes, progress::single_copy_pid(), offer};
  std::memcpy(owned.get(), &d, sizeof d);
  const WireHeader h{tag, kSingleCopy, bytes, 0, progress::kFlagSyncAck};
  bool pending = false;
  const int sent = link_->send_eager(dest, h, owned.get(), sizeof d, done, &pending);
  if (sent == MPI_SUCCESS) lane_mark_sent(dest, h);
  if (sent != MPI_SUCCESS || !pending) split_withdraw(offer);
  if (r != nullptr) {
    r->inner_busy = pending && sent == MPI_SUCCESS;
    if (r->inner_busy) r->eager_copy = std::move(owned);
    else r->finish(MPI_PROC_NULL, MPI_ANY_TAG, sent, 0);
    *rc = sent;
    return true;
  }
  if (sent == MPI_SUCCESS && pending)
    while (!waiter.done) progress_wait(*lock);
  *rc = sent != MPI_SUCCESS ? sent : pending ? waiter.error : MPI_SUCCESS;
  return true;
}

bool P2PComm::cancel(Request *r) {
  if (lanes_) {
    // A lane's readers change queued, under its lock.
    KeyMatcher km = matcher_for(r->tag);
    if (!r->queued || !km->cancel(r->match_handle)) return false;
    r->queued = false;
    if (r->lane) --km.lane()->waiting;
    else receive_unqueued();
  } else {
    if (!r->queued) return false;
    const auto cookie = reinterpret_cast<match::Cookie>(r);
    auto it = std::find_if(region_receives_.begin(), region_receives_.end(),
                           [cookie](const match::BatchItem &b) { return b.cookie == cookie; });
    if (it != region_receives_.end()) region_receives_.erase(it);  // not in the matcher yet
    else if (!matcher_->cancel(r->match_handle)) return false;
    receive_unqueued();
    r->queued = false;
  }
  r->st_cancelled = true;
  r->finish(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, 0);
  return true;
}

const Message *P2PComm::probe(int source, int tag) {
  region_flush();  // collected arrivals become visible
  const match::ProbeResult res = matcher_for(tag, true)->probe(pattern_key(source, tag));
  if (res.found && is_inline(res.cookie)) {
    // (source, tag): an exact pattern, since only the exact modes inline.
    // Nothing else of probe_view_ is ever set.
    from_inline(res.cookie, res.aux, source, tag, probe_view_);
    return &probe_view_;
  }
  if (res.found) return reinterpret_cast<const Message *>(res.cookie);
  link_->want_more();  // a probe loop must see messages held back, too
  return nullptr;
}

std::unique_ptr<Message> P2PComm::take(int source, int tag) {
  region_flush();
  const match::ProbeResult res = matcher_for(tag, true)->take(pattern_key(source, tag));
  std::unique_ptr<Message> m(res.found ? message_record(res.cookie, res.aux, source, tag) : nullptr);
  if (m) {
    unexpected_consumed(*m);
    // Only a message taken out for MPI_Mrecv needs its way back here (set
    // now, not on every unexpected arrival: two atomic operations each).
    m->comm = self();
  } else {
    link_->want_more();
  }
  return m;
}

int P2PComm::send(const void *buf, int count, MPI_Datatype dtype, int dest, int tag, SendMode mode,
                  progress::EngineLock &lock) {
  return transmit(buf, count, dtype, dest, tag, mode, nullptr, &lock);
}

int P2PComm::start_send(Request *r) {
  op_started();
  r->complete = false;
  return transmit(r->sbuf, r->count, r->dtype, r->peer, r->tag, r->mode, r, nullptr);
}

int P2PComm::transmit(const void *buf, int count, MPI_Datatype dtype, int dest, int tag, SendMode mode,
                      Request *r, progress::EngineLock *lock, PayloadLife life) {
  int gpu_rc = MPI_SUCCESS;
  if (gpu_transmit(*this, buf, count, dtype, dest, tag, mode, r, lock, &gpu_rc)) return gpu_rc;
  return transmit_host(buf, count, dtype, dest, tag, mode, r, lock, life);
}

int P2PComm::transmit_host(const void *buf, int count, MPI_Datatype dtype, int dest, int tag, SendMode mode,
                           Request *r, progress::EngineLock *lock, PayloadLife life) {
  const Layout l = layout_of(dtype, count);
  const std::uint64_t bytes = static_cast<std::uint64_t>(l.bytes);
  WireHeader h{tag, kEager, bytes, 0, 0};
  // Who learns of the completion: the request, or (blocking) this call.
  Waiter waiter;
  const auto finish_send = [&](int rc, bool pending) {
    if (r != nullptr) {
      r->inner_busy = pending && rc == MPI_SUCCESS;
      if (!r->inner_busy) r->finish(MPI_PROC_NULL, MPI_ANY_TAG, rc, 0);
      return rc;
    }
    if (rc != MPI_SUCCESS || !pending) return rc;
    while (!waiter.done) progress_wait(*lock);
    return waiter.error;
  };

  // Synchronous sends go eagerly only where the transport acknowledges the
  // match (else by rendezvous, whose data moves only after it). Buffered
  // sends over pmpi take the rendezvous path too: the MPI library's
  // MPI_Ibsend then uses exactly the space of the attached buffer a native
  // MPI_Bsend would (an envelope in it would make an exactly sized buffer
  // too small).
  // Within a node the receiver may read the payload itself: one copy (from
  // MPIX_SINGLE_COPY_MIN bytes, below the eager limit too).
  int one_rc = MPI_SUCCESS;
  if (life == PayloadLife::kUntilComplete && progress::single_copy_possible(static_cast<std::size_t>(bytes)) &&
      transmit_single_copy(buf, count, dtype, l, dest, tag, mode, r, lock, &one_rc))
    return one_rc;

  const bool sync = mode == SendMode::kSync;
  const bool eager_mode = link_->eager_sync() || (!sync && mode != SendMode::kBuffered);
  if (bytes <= g_config.eager_limit && eager_mode) {
    std::unique_ptr<char[]> packed;
    const char *payload = static_cast<const char *>(buf) + l.true_lb;
    if (!l.contiguous && bytes > 0) {
      packed = std::make_unique<char[]>(bytes);
      const int rc = pack_bytes(buf, count, dtype, packed.get(), static_cast<int>(bytes), ctrl_);
      if (rc != MPI_SUCCESS) return finish_send(rc, false);
      payload = packed.get();
    }
    if (sync) h.flags |= progress::kFlagSyncAck;
    // Who completes the send. A buffered send is complete once the link
    // took its copy, and so is a blocking one (a link may wait for the wire
    // then); a nonblocking send must not wait, so its request is the
    // completion, and a synchronous send's completion is the match.
    progress::Pending *done = nullptr;
    if (sync) done = r != nullptr ? static_cast<progress::Pending *>(r) : &waiter;
    else if (r != nullptr && mode != SendMode::kBuffered) done = r;
    // A link may read a payload handed over with a completion until that
    // completion runs (progress/transport.h): scratch bytes that the next
    // send overwrites (another thread's, while a blocking caller waits) are
    // copied first, and a copy (packed or scratch) then belongs to the
    // request.
    if (done != nullptr && life == PayloadLife::kDuringCall && !packed && bytes > 0) {
      packed = std::make_unique<char[]>(bytes);
      std::memcpy(packed.get(), payload, bytes);
      payload = packed.get();
    }
    bool pending = false;
    const int rc = link_->send_eager(dest, h, payload, bytes, done, &pending);
    if (rc == MPI_SUCCESS) lane_mark_sent(dest, h);
    if (pending && packed && r != nullptr) r->eager_copy = std::move(packed);
    return finish_send(rc, pending);
  }

  // Rendezvous: announce it; the payload stays where it is (or in the MPI
  // library) until the receiver matched and pulls it.
  h.kind = kRendezvous;
  h.data_tag = next_data_tag(dest);
  // A buffered send's link copies at once; any other keeps reading until
  // its completion, which a blocking send waits for here, but a request
  // outlives a scratch payload: it gets a copy of its own.
  std::unique_ptr<char[]> owned;
  if (life == PayloadLife::kDuringCall && mode != SendMode::kBuffered && r != nullptr && bytes > 0) {
    owned = std::make_unique<char[]>(bytes);
    const int rc = pack_bytes(buf, count, dtype, owned.get(), static_cast<int>(bytes), ctrl_);
    if (rc != MPI_SUCCESS) return finish_send(rc, false);
    buf = owned.get();
    count = static_cast<int>(bytes);
    dtype = MPI_PACKED;
  }
  bool pending = false;
  const int rc = link_->send_rendezvous(dest, h, buf, count, dtype, mode,
                                        r != nullptr ? static_cast<progress::Pending *>(r) : &waiter, &pending);
  if (rc == MPI_SUCCESS) lane_mark_sent(dest, h);
  if (pending && owned) r->eager_copy = std::move(owned);
  return finish_send(rc, pending);
}

void P2PComm::detach() {
  if (!handled_) return;
  handled_ = false;
  detach_requested_ = false;
  add_receives_pending(-static_cast<long>(receives_waiting_));
  receives_waiting_ = 0;
  // Messages nobody received (erroneous, or cancelled work): reclaim, and
  // let the transport drop what it keeps for them.
  const auto drop = [this](Message *m) {
    if (m->kind == kRendezvous) link_->discard(m->arrival());
    delete m;  // NOLINT: owned by the matcher or the region list
  };
  for (const match::BatchItem &a : region_arrivals_) drop(reinterpret_cast<Message *>(a.cookie));
  region_arrivals_.clear();
  region_receives_.clear();
  if (lanes_) {
    MatchTotals &gone = detached_totals();
    gone.lane_messages += lane_messages();
    gone.lane_marks += lane_marks();
    gone.unexpected_inline += lane_inlined();
    // Idle (release_when_idle), but a thread in MPI_Wait on a lane request
    // that just completed may still be in a lane: kept a while.
    lane_detach();
    lingering().push_back(self());
  }
  if (matcher_) {
    const match::Stats s = matcher_->stats();
    MatchTotals &gone = detached_totals();
    gone.matches += s.matches;
    gone.unexpected_max = std::max<std::uint64_t>(gone.unexpected_max, s.max_unexpected_depth);
    gone.unexpected_inline += unexpected_inline_;
    match::Drained left = matcher_->drain();
    for (const match::Entry &e : left.unexpected)
      if (!is_inline(e.cookie)) drop(reinterpret_cast<Message *>(e.cookie));  // inline: nothing kept
  }
  link_.reset();
  if (ctrl_ != MPI_COMM_NULL) PMPI_Comm_free(&ctrl_);
  if (data_ != MPI_COMM_NULL) PMPI_Comm_free(&data_);
  // Last: this may drop the final reference.
  auto &v = attached();
  for (auto it = v.begin(); it != v.end(); ++it)
    if (it->get() == this) {
      std::shared_ptr<P2PComm> self = std::move(*it);
      v.erase(it);
      return;  // self goes out of scope last
    }
}

int P2PComm::next_data_tag(int dest) {
  int &next = next_data_tag_[static_cast<std::size_t>(dest)];
  const int t = next;
  next = next_gpu_data_tag(t, data_tag_limit_);
  return t;
}

void P2PComm::release_when_idle() {
  freed_ = true;
  if (live_ops_ > 0) return;  // the last one's op_done asks for the detach
  // A freed communicator's lane receives still wait for messages that may
  // come through its link, and its owed marks must still go: attached until
  // its lanes are idle.
  if (lanes_idle()) detach();
  else detach_requested_ = true;
}

void drain(progress::EngineLock &lock) {
  using Clock = std::chrono::steady_clock;
  auto stalled_since = Clock::now();
  std::uint64_t last[3] = {~0ull, ~0ull, ~0ull};
  for (;;) {
    for (auto &c : attached()) c->want_more();
    while (progress::transport_counts().local > 0 && Clock::now() - stalled_since < kDrainPatience)
      progress_wait(lock);
    const progress::TransportCounts c = progress::transport_counts();
    std::uint64_t mine[3] = {c.sent, c.arrived, c.local}, all[3] = {0, 0, 0};
    MPI_Request req = MPI_REQUEST_NULL;
    if (PMPI_Iallreduce(mine, all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD, &req) != MPI_SUCCESS) return;
    for (int flag = 0; !flag;) {
      progress_wait(lock);
      PMPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    }
    if (all[0] == all[1] && all[2] == 0) return;
    // Every rank sees the same sums, so every rank stops in the same round.
    if (std::equal(all, all + 3, last)) {
      if (Clock::now() - stalled_since > kDrainPatience) {
        if (g_config.verbose > 0)
          std::fprintf(stderr, "[mpix] MPI_Finalize: of %llu messages sent, %llu arrived (the rest went to freed "
                       "communicators, or nobody received them)\n",
                       static_cast<unsigned long long>(all[0]), static_cast<unsigned long long>(all[1]));
        return;
      }
    } else {
      std::copy(all, all + 3, last);
      stalled_since = Clock::now();
    }
  }
}

bool lanes_inbound_waiting() {
  for (const auto &c : attached())
    if (c->lane_inbound_waiting()) return true;
  return false;
}

void detach_all() {
  while (!attached().empty()) attached().back()->detach();
  lingering().clear();
  shells().clear();
}

std::shared_ptr<P2PComm> p2p_find(MPI_Comm comm) {
  // P2PComm is the only kind of CommState (the dynamic cast was a fifth of
  // mpix's instructions per send).
  return std::static_pointer_cast<P2PComm>(CommTable::find(comm));
}

P2PComm *p2p_find_raw(MPI_Comm comm) { return static_cast<P2PComm *>(CommTable::find_raw(comm)); }

bool comm_is_handled(MPI_Comm comm) {
  auto c = p2p_find(comm);
  return c && c->handled();
}

int progress_poll() {
  MPIX_STAGE(kProgressStep);
  liveness_note_poll();
  int n = progress::inflight().poll();
  n += progress::transport_poll();
  n += gpu_progress();
  auto &comms = attached();
  for (std::size_t i = 0; i < comms.size(); ++i) {
    n += comms[i]->poll_link();
    if (comms[i]->lanes()) n += comms[i]->lane_progress();
    if (comms[i]->splits_waiting()) n += comms[i]->split_progress();
    // One batch per progress step: the receives posted since the last step
    // against every arrival the transport just handed up.
    if (comms[i]->region_pending()) n += comms[i]->region_progress();
  }
  // Detached lane communicators: kept while a thread may still be in one
  // of their lanes (LaneCallerScope).
  if (!lingering().empty() && lane_callers_none()) {
    for (auto &c : lingering()) {
      c->drop_lanes();
      shells().push_back(std::move(c));
    }
    lingering().clear();
  }
  // Freed communicators whose last operation just ended.
  auto &v = attached();
  for (std::size_t i = 0; i < v.size();) {
    if (v[i]->detach_requested() && v[i]->lanes_idle()) v[i]->detach();  // erases v[i]
    else ++i;
  }
  // MPI's progress rule covers the application's traffic on communicators
  // mpix does not handle too: while a rank waits or tests only on mpix's
  // requests, a peer's MPI_Send to a receive it posted on such a
  // communicator must still finish, and over UCX nothing here enters the
  // MPI library. So an idle poll now and then lets it progress (the soak,
  // test/mpi/soak, hung without this). (Under the engine lock: one count
  // serves every thread.)
  static unsigned idle_polls = 0;
  if (n == 0 && ++idle_polls % kPollsPerMpiNudge == 0) {
    int flag = 0;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  }
  return n;
}

void progress_drain() {
  for (int pass = 0; pass < kDrainPasses && progress_poll() > 0; ++pass) {
  }
}

void progress_wait(progress::EngineLock &lock) {
  // Polls in a row that found nothing: a yield costs a system call, which
  // at small-message latencies is most of a round trip, so the first few
  // idle polls only let other threads of this process take the lock.
  // (Under the engine lock, so one count serves every thread.)
  static unsigned idle_polls = 0;
  if (progress_poll() > 0) {
    idle_polls = 0;
    return;
  }
  const bool yield = ++idle_polls % kPollsBeforeYield == 0;
  const int waiting = g_lock_waiters.load(std::memory_order_relaxed);
  if (!yield && idle_polls % kPollsPerUnlock != 0 && waiting == 0) {
    // One pause between idle polls. A poller that rereads the peer's ring
    // and the GPU's done word back to back may keep taking those cache
    // lines from their writers; with the pause the 8 B device-buffer rate
    // was 1.37 against 1.10 M msg/s in the same run (bench/RESULTS.md,
    // fourteenth session, call 7).
    cpu_relax();
    return;
  }
  lock.unlock();
  if (yield) {
    // Oversubscribed (more ranks than cores) the peer needs this core.
    sched_yield();
  } else if (waiting > 0) {
    // Taken back at once, the lock would stay here: this thread's try comes
    // before any spinning waiter's. Until one has it (the count drops) or
    // briefly, the lock is theirs.
    for (int i = 0; i < kHandoffPauses && g_lock_waiters.load(std::memory_order_relaxed) >= waiting; ++i)
      cpu_relax();
  }
  relock(lock);
}

}  // namespace mpix::p2p
