// A communicator as mpix's point-to-point layer sees it: the assertions in
// force and, when mpix carries its traffic ("handled"), the matching engine
// and the control/data channels over shadow communicators (the pmpi
// transport of DESIGN.md).
#ifndef MPIX_SRC_P2P_ENGINE_H
#define MPIX_SRC_P2P_ENGINE_H

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "hints.h"
#include "lanes.h"
#include "match/matcher.h"
#include "progress/datatype.h"
#include "progress/engine_mutex.h"
#include "progress/inflight.h"
#include "request.h"
#include "src/comm_table.h"
#include "src/errors.h"

namespace mpix::p2p {

// The envelope every transport carries (progress/transport.h).
using progress::kEager;
using progress::kGpuRendezvous;
using progress::kGpuBuffered;
using progress::kGpuRendezvousBare;
using progress::kRendezvous;
using progress::kSingleCopy;
using progress::WireHeader;

// An arrived envelope that no receive has taken yet (or taken by Mprobe).
// Laid out for a deep unexpected queue received in random order, where
// each record is a cache miss: what every receive and the destructor read
// first, then the credit and a small payload; the rendezvous fields last.
struct Message {
  int source = 0;
  int tag = 0;
  std::uint32_t kind = kEager;
  std::uint32_t flags = 0;        // progress::kFlagSyncAck
  std::uint64_t bytes = 0;
  const char *payload = nullptr;  // eager: the bytes, in `small`, `owned` or the transport's buffer
  std::unique_ptr<char[]> owned;
  // An unexpected GPU rendezvous's communicator while gpu_path.cc can find
  // it (for a kGpuBuffered arrival), else nullptr.
  const void *gpu_waiting_on = nullptr;
  std::weak_ptr<class P2PComm> comm;  // for Mrecv of a message taken by Mprobe (set by take())
  std::size_t credit = 0;         // given back to the transport when the payload is released
  // Unexpected payloads this small are kept here, and so are the sender's
  // descriptors of an unexpected kGpuRendezvous or kSingleCopy (112 bytes):
  // no allocation of their own.
  static constexpr std::size_t kSmall = 112;
  alignas(8) char small[kSmall];
  int data_tag = 0;
  std::uint64_t ticket = 0;       // the transport's reference (rendezvous data, sync ack)

  // The envelope and payload reference of an arrival (payload not copied).
  void take_arrival(const progress::Arrival &a) {
    source = a.source;
    tag = a.h.tag;
    bytes = a.h.bytes;
    kind = a.h.kind;
    data_tag = a.h.data_tag;
    flags = a.h.flags;
    ticket = a.ticket;
    credit = a.credit;
    payload = a.payload;
  }

  // An eager payload that must outlive the transport's buffer: copied into
  // `small` or `owned` (memory of the message's own size).
  void keep_payload(const char *from);

  Message() = default;
  Message(const Message &) = delete;
  Message &operator=(const Message &) = delete;
  ~Message();

  // From a per-thread cache of freed messages: an unexpected message costs
  // no allocator call in the steady state (a flood of them did, twice).
  static void *operator new(std::size_t bytes);
  static void operator delete(void *p) noexcept;

  // What the transport handed up, for the calls that name the arrival.
  progress::Arrival arrival() const {
    progress::Arrival a;
    a.source = source;
    a.h = WireHeader{tag, kind, bytes, data_tag, flags};
    a.ticket = ticket;
    a.credit = credit;
    return a;
  }
};

struct MatchTotals;
MatchTotals match_totals();

// How long the bytes a send names stay valid. kUntilComplete: the
// application's buffer, which MPI leaves alone until the send completes.
// kDuringCall: a scratch copy of mpix's own (the GPU path's bounce buffer)
// that the next send may overwrite as soon as this call returns; nothing
// may read it later, so the engine never hands it to a link with a
// completion.
enum class PayloadLife : std::uint8_t { kUntilComplete, kDuringCall };

class P2PComm final : public CommState, public progress::ArrivalSink {
 public:
  // A communicator whose assertions are only recorded (MPI_Comm_set_info):
  // the MPI library keeps matching it.
  explicit P2PComm(const Hints &hints);
  ~P2PComm() override;
  // A reference to this (made by make_shared, CommTable holds one).
  std::shared_ptr<P2PComm> self() { return std::static_pointer_cast<P2PComm>(shared_from_this()); }

  // Makes comm handled: shadow communicators and the transport's link
  // (collective over comm; lock: the engine lock, held on return, released
  // during the collectives). wildcards: whether receives may use them.
  int attach(MPI_Comm comm, bool wildcards, progress::EngineLock &lock);

  // Hints and the region flag are written under the engine lock but read
  // without it (argument checks before the lock is taken): atomics.
  Hints hints() const { return Hints::from_bits(hint_bits_.load(std::memory_order_acquire)); }
  void add_hints(const Hints &h) { hint_bits_.fetch_or(h.bits(), std::memory_order_acq_rel); }
  bool region_open() const { return region_open_.load(std::memory_order_acquire); }
  void set_region_open(bool open) { region_open_.store(open, std::memory_order_release); }
  bool handled() const { return handled_; }
  // A stream communicator whose enqueued operations run on the GPU
  // (mpix/enqueue_kernel.h): host point-to-point calls cannot match them.
  bool gpu_run() const { return gpu_run_.load(std::memory_order_acquire); }
  void set_gpu_run() { gpu_run_.store(true, std::memory_order_release); }
  MPI_Comm user() const { return user_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  // ---- unordered regions: batch matching ----
  // While a region is open, receives and arrivals are collected instead of
  // matched one by one; region_flush() matches what was collected as one
  // batch (src/p2p/region_batch.h; on the GPU when large) and hands the
  // rest to the matcher. progress_poll() flushes after taking in arrivals,
  // probes flush first, and closing the region flushes. Returns the number
  // of entries handled.
  bool region_pending() const { return !region_arrivals_.empty() || !region_receives_.empty(); }
  int region_flush();
  // progress_poll()'s flush: only once the application stopped posting
  // (the receives did not grow since the last poll), so that a loop of
  // MPI_Irecv makes one batch rather than many small ones; arrivals with no
  // receive of the region and none in the matcher wait for receives.
  int region_progress();

  // Whether a receive/probe pattern is refused on this communicator
  // (wildcards asserted away or inside a region), the error in *why. Inline,
  // and no std::optional: GCC built one in memory, a byte store read back
  // as a word, which the store buffer cannot forward (5-7% of a streaming
  // receiver's samples, even inlined).
  bool check_pattern(int source, int tag, Err *why) const {
    return (source == MPI_ANY_SOURCE || tag == MPI_ANY_TAG) && refuses_wildcard(source, tag, why);
  }

  // ---- sends (handled communicators) ----
  // Blocking: returns when the send buffer may be reused (and, for kSync,
  // when the receive started). MPI error code.
  int send(const void *buf, int count, MPI_Datatype dtype, int dest, int tag, SendMode mode,
           progress::EngineLock &lock);
  // Starts r (kind kSend, fields filled).
  int start_send(Request *r);

  // ---- receives ----
  // Starts r (kind kRecv): matches it against arrived messages or queues it.
  int start_recv(Request *r);
  // A blocking receive (MPI_Recv): returns when it completed, its status
  // written. MPI error code.
  int recv(void *buf, int count, MPI_Datatype dtype, int source, int tag, MPI_Status *status,
           progress::EngineLock &lock);
  // Completes r with message m (taken out of the matcher).
  void deliver(Request *r, Message &m);
  // Sets r's host_capacity and host_lb (request.h) from its buffer and type:
  // every receive, however it starts (start_recv, MPI_Mrecv/MPI_Imrecv).
  void classify_receive(Request *r) const;
  // Completes r with arrival a (matched to it), its payload read in place.
  void deliver_arrival(Request *r, const progress::Arrival &a);
  // An eager payload into a receive classified as contiguous host memory.
  void deliver_eager_host(Request *r, int source, int tag, const char *payload, std::uint64_t bytes);
  bool cancel(Request *r);

  // ---- probes ----
  // The oldest matching arrived message, left in place; nullptr if none.
  const Message *probe(int source, int tag);
  // Removes and returns it (MPI_Mprobe).
  std::unique_ptr<Message> take(int source, int tag);

  // Requests of this communicator still running (free/disconnect wait).
  // Requests holding this communicator (CommRef), counted under the engine
  // lock; while any do, it holds a reference to itself, taken on the first
  // and dropped with the last (which may destroy it: the caller touches
  // nothing of it after).
  void request_hold() {
    if (request_holds_++ == 0) held_by_requests_ = self();
  }
  void request_unhold() {
    if (--request_holds_ == 0) std::shared_ptr<P2PComm> last = std::move(held_by_requests_);
  }
  int live_ops() const { return live_ops_; }
  void op_started() { ++live_ops_; }
  // The last operation of a freed communicator ends inside a completion
  // callback; the teardown waits for the next progress() (see detach()).
  void op_done() {
    if (--live_ops_ == 0 && freed_) detach_requested_ = true;
  }
  bool detach_requested() const { return detach_requested_; }
  // No lane receive waits, no hand-over or mark is pending (true without
  // lanes): a freed communicator is detached only then.
  bool lanes_idle();
  // A detached communicator's lanes and rings, once no thread can be in
  // them (engine.cc, lingering()).
  void drop_lanes() { lanes_.reset(); }

  // The link's own polling (the pmpi transport's landing receives).
  int poll_link() { return link_ ? link_->poll() : 0; }
  // Receives waiting for their sender's part of a split transfer, and the
  // check progress_poll() makes for them now and then: a sender that exited
  // mid-write fails its receive (split_copy.cc).
  bool splits_waiting() const { return !split_waits_.empty(); }
  // Runs the receivers' own reads of split transfers asked for since the
  // last call (after the transport's poll: a link defers the ask sent from
  // inside its callbacks until then, and the sender must see it while we
  // read), then checks that waited-for senders still live. Returns the
  // reads run.
  int split_progress();
  // Lets held-back messages in (MPI_Finalize's drain).
  void want_more() {
    if (link_) link_->want_more();
  }

  // ---- lanes (lanes.h): MPI_THREAD_MULTIPLE, no wildcards ----
  Lanes *lanes() const { return lanes_.get(); }
  // A standard-mode send that a lane carries, copied into its ring now (no
  // engine lock); false (nothing done) where it is not a lane message.
  bool lane_send(const void *buf, int count, MPI_Datatype dtype, int dest, int tag);
  // A started lane request receiving (buf, count, dtype) from (source,
  // tag), or nullptr (nothing done) where the receive is not a lane one.
  Request *lane_irecv(void *buf, int count, MPI_Datatype dtype, int source, int tag);
  // Whether lane request r completed, after taking its lane's arrivals in
  // (unless another thread is) and, when needed, progressing the engine.
  bool lane_test(Request *r);
  // Returns once lane request r completed.
  void lane_wait(Request *r);
  // Engine lock held: takes every lane's arrivals in and completes the
  // receives handed over to the engine. Returns what it handled.
  int lane_progress();
  // MPI_Request_free of an active lane receive: completes into nothing.
  // False where it completed already (the caller concludes it).
  bool lane_free(Request *r);
  // Lane messages taken in, engine envelopes ordered by a mark, and
  // unexpected lane messages kept inline, so far.
  std::uint64_t lane_messages() const { return lane_count(&Lanes::Lane::messages); }
  std::uint64_t lane_marks() const { return lane_count(&Lanes::Lane::marks); }
  std::uint64_t lane_inlined() const { return lane_count(&Lanes::Lane::inlined); }
  std::uint64_t lane_count(std::atomic<std::uint64_t> Lanes::Lane::*counter) const;
  // Whether a lane ring from another process holds messages not taken in,
  // or a lane owes marks.
  bool lane_inbound_waiting();
  bool lane_receives_waiting();  // a lane receive queued in its matcher
  // Whether pred holds for some lane, each looked at under its lock.
  template <class Pred>
  bool any_lane(Pred pred);

  // progress::ArrivalSink: an envelope from the transport.
  void arrived(const progress::Arrival &a) override;
  bool receive_waiting() override { return receives_waiting_ > 0 || lane_receives_waiting(); }

  // Closes the link and frees the shadow communicators. Never from a
  // completion callback: the link being torn down may be running it.
  void detach();
  // MPI_Comm_free: detach now, or once the last running operation ends.
  void release_when_idle();

 private:
  // ---- lanes (lanes.cc) ----
  // The matcher of a key of tag with its lane's lock held until release()
  // or the end of the scope (lanes), else matcher_ (the engine lock).
  class KeyMatcher {
   public:
    KeyMatcher(match::Matcher *m, Lanes::Lane *lane) : m_(m), lane_(lane) {}
    KeyMatcher(const KeyMatcher &) = delete;
    KeyMatcher &operator=(const KeyMatcher &) = delete;
    ~KeyMatcher() { release(); }
    match::Matcher *operator->() const { return m_; }
    Lanes::Lane *lane() const { return lane_; }
    void release() {
      if (lane_ != nullptr && locked_) lane_->lock.unlock();
      locked_ = false;
    }

   private:
    match::Matcher *m_;
    Lanes::Lane *lane_;
    bool locked_ = true;
  };
  // take_in: a lane's ring messages taken in first (probes must see them).
  KeyMatcher matcher_for(int tag, bool take_in = false);
  // An engine envelope of a lane communicator: ordered after the lane
  // messages its sender sent before it, then matched in its lane.
  void lane_engine_arrival(const progress::Arrival &a);
  // Sender: the mark that orders an engine envelope just handed to the
  // link among its key's lane messages.
  void lane_mark(int dest, int tag);
  // l locked: its owed marks to dest into the ring (false: some still
  // owed), or to everyone.
  bool lane_pay_marks(Lanes::Lane &l, int dest);
  bool lane_pay_all_marks(Lanes::Lane &l);
  // l locked: an envelope that waited for its mark, matched now.
  void lane_match_early(Lanes::Lane &l, Message *e, bool engine_locked);
  // l locked: one lane message m at the head of ring, taken in and popped.
  void lane_take_message(Lanes::Lane &l, progress::shm::Ring &ring, const progress::shm::Message &m,
                         bool engine_locked);
  // l locked: the mark at the head of ring popped; the oldest envelope of
  // early (from that ring's sender) matched there. False where none waited.
  bool lane_pass_mark(Lanes::Lane &l, progress::shm::Ring &ring, std::deque<Message *> &early,
                      bool engine_locked);
  // A record of arrival a whose eager payload was copied: its credit given
  // back now, so that a lane receive can take it without the engine.
  Message *keep_arrival_paid(const progress::Arrival &a);
  // A try of the engine lock and a progress step, where due.
  static void lane_engine_step(bool due);
  // Takes lane l's ring messages in, each ring up to a mark (l locked).
  int lane_take_in(Lanes::Lane &l, bool engine_locked);
  void lane_arrival(Lanes::Lane &l, const LaneHeader &h, const void *payload, std::size_t bytes, bool engine_locked);
  static void lane_complete(Request *r, const char *payload, std::uint64_t bytes, int source, int tag);
  // A lane request the engine completes (a rendezvous, a handed-over
  // receive): counted among this communicator's operations meanwhile.
  void engine_takes(Request *r);
  // Detach: frees what the lanes' matchers still hold, unless a lane
  // receive still waits (false: the lanes are still in use).
  bool lane_detach();
 public:
  // After a matched envelope was handed to the link: its mark (lanes).
  void lane_mark_sent(int dest, const WireHeader &h);
 private:

  // check_pattern() of a pattern with a wildcard.
  bool refuses_wildcard(int source, int tag, Err *why) const;
  friend struct GpuAccess;  // gpu_path.cc: the channels and transmit()

  // start_recv()'s first part: counted, fields reset, buffer classified.
  void begin_recv(Request *r);
  void receive_queued();
  void receive_unqueued();
  void unexpected_consumed(const Message &m);
  std::uint64_t capacity_bytes(const Request *r) const;
  // Eager or rendezvous send; r == nullptr for blocking sends (lock given).
  // life: how long (buf, count, dtype) stays valid (progress/transport.h,
  // "Payload lifetimes").
  int transmit(const void *buf, int count, MPI_Datatype dtype, int dest, int tag, SendMode mode, Request *r,
               progress::EngineLock *lock, PayloadLife life = PayloadLife::kUntilComplete);
  // transmit() of data known to be in host memory: the GPU protocols hand
  // their host copies here, without classifying them again.
  int transmit_host(const void *buf, int count, MPI_Datatype dtype, int dest, int tag, SendMode mode, Request *r,
                    progress::EngineLock *lock, PayloadLife life);
  // A rendezvous-size send to a process of this node that reads it itself
  // (progress/single_copy.h); false when this one cannot go so.
  bool transmit_single_copy(const void *buf, int count, MPI_Datatype dtype, const progress::Layout &l, int dest,
                            int tag, SendMode mode, Request *r, progress::EngineLock *lock, int *rc);
  // Receiver: reads a kSingleCopy message into r, then acknowledges it.
  void deliver_single_copy(Request *r, Message &m);
  // The stderr line of a failed single-copy read (the receive then returns
  // MPI_ERR_OTHER).
  static void report_read_failure(std::size_t bytes, int source, std::int32_t pid, int err);

  // ---- split single-copy transfers (split_copy.cc) ----
  // A large single-copy message is copied by both processes: the receiver,
  // once matched, asks the sender (kSplitAsk) to write the second part
  // into the receive buffer and reads the first itself. A claim word in the
  // shared ring header settles who copies the second part: the sender
  // moves it from "asked" to "writing" before writing; a receiver done with
  // its part that still finds "asked" takes the part back, so a sender busy
  // outside MPI never holds a receive up.
  struct SplitOffer final : progress::Pending {
    P2PComm *comm = nullptr;
    std::uint32_t id = 0;
    const char *src = nullptr;  // the bytes the receiver reads (live until the send completes)
    std::size_t bytes = 0;
    int dest = 0;
    bool asked = false;
    progress::Pending *inner = nullptr;  // the send's own completion
    // The send completed (the receiver acknowledged, or it failed): the
    // offer goes, then the send's completion runs.
    void on_complete(const MPI_Status &status) override;
  };
  struct SplitWait {
    Request *r = nullptr;
    progress::Arrival arrival;  // acknowledged once both parts are in
    int source = 0;
    int tag = 0;
    std::size_t bytes = 0;      // of the message
    std::size_t first = 0;      // bytes of our part, from the start
    std::int32_t pid = 0;       // the sender's process
    std::uint64_t remote = 0;   // its buffer there
    char *into = nullptr;       // the receive buffer
    std::atomic<std::uint64_t> *claim = nullptr;
    bool own_done = false;      // our part read (or failed: error)
    bool peer_done = false;     // its kSplitDone came (peer_error)
    int error = MPI_SUCCESS;
    int peer_error = MPI_SUCCESS;
  };
  // Sender: the completion to hand the link in place of `inner`, offering
  // (src, bytes) for a kSplitAsk from dest; *offer is the offer's name for
  // the descriptor (0 and `inner` returned where the message is too small).
  progress::Pending *split_offer(const char *src, std::size_t bytes, int dest, progress::Pending *inner,
                                 std::uint32_t *offer);
  // Sender: the link refused the send, so no ask will come.
  void split_withdraw(std::uint32_t offer);
  // Receiver: takes r over when the sender offered and the split pays,
  // reading the first part into `into` now; false: the caller reads it all.
  bool split_deliver(Request *r, const Message &m, const progress::SingleCopyRts &d, char *into, std::size_t n);
  // A kSplitAsk (we send) or kSplitDone (we receive) from a peer.
  void split_arrived(const progress::Arrival &a);
  // Our part of `ask`, then whichever way the second part goes.
  void split_read_own(std::uint32_t ask);
  // Both parts are in (or failed): the sender acknowledged, the receive done.
  void split_complete(std::uint32_t ask);
  std::vector<std::uint32_t> split_reads_, split_reads_spare_;
  std::unordered_map<std::uint32_t, std::unique_ptr<SplitOffer>> split_offers_;
  std::unordered_map<std::uint32_t, SplitWait> split_waits_;
  std::uint32_t next_offer_ = 0;
  std::vector<int> world_;  // MPI_COMM_WORLD rank of each member (-1: another world)

  std::atomic<unsigned> hint_bits_{0};
  std::atomic<bool> region_open_{false};
  bool handled_ = false;
  std::atomic<bool> gpu_run_{false};
  MPI_Comm user_ = MPI_COMM_NULL;
  MPI_Comm ctrl_ = MPI_COMM_NULL;
  MPI_Comm data_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
  std::unique_ptr<match::Matcher> matcher_;
  std::unique_ptr<progress::Link> link_;
  std::unique_ptr<Lanes> lanes_;
  std::size_t receives_waiting_ = 0;    // posted receives queued in the matcher
  std::uint64_t unexpected_inline_ = 0;  // messages queued as inline cookies (engine.cc)
  // The tag of each transfer's payload (and, + 1, its GPU replies), per
  // destination: 0 .. MPI_TAG_UB - 1, then again (src/p2p/gpu_tags.h).
  int next_data_tag(int dest);
  std::vector<int> next_data_tag_;
  int data_tag_limit_ = 32767;
  int live_ops_ = 0;
  std::size_t request_holds_ = 0;
  std::shared_ptr<P2PComm> held_by_requests_;
  bool freed_ = false;
  bool detach_requested_ = false;
  // Region entries not matched yet (cookies: Message*, Request*), in order.
  std::vector<match::BatchItem> region_arrivals_;
  std::vector<match::BatchItem> region_receives_;
  std::vector<match::BatchItem> region_spare_[2];  // capacity kept between flushes
  std::vector<match::BatchItem> region_seq_[2];    // entries of keys queued in the matcher, per flush
  std::size_t region_receives_seen_ = 0;  // region_receives_.size() at the last poll
  void region_queue_arrival(const match::BatchItem &a);
  // Whether an entry of an open region joins the region's next batch;
  // false: it is matched at once, the ordered way, which is one of the
  // matchings a region allows. A batch pays only where it is large: it
  // spares a deep queue's walk, but each of its entries costs more than a
  // match made at once (the arrival's record, the lists, the delivery
  // through the general path). So a region's receive (may_start) starts a
  // batch only when the communicator already holds MPIX_REGION_BATCH_MIN
  // messages and receives waiting (a deep queue for the batch to meet);
  // then what comes (receives, arrivals) joins that batch until it is
  // matched. Windows of tens of receives go the ordered way. papers/000
  // ch. 7.2; crossover measured in bench/RESULTS.md. Inline: every arrival
  // and receive asks, nearly always outside any region.
  bool region_collects(bool may_start) { return region_open() && region_collects_open(may_start); }
  bool region_collects_open(bool may_start);
  // Adds started receive r to the region's next batch.
  void region_collect(Request *r);
  void region_queue_receive(const match::BatchItem &r);
  // A record of arrival a that outlives the transport's buffer (its payload
  // kept); the caller owns it.
  Message *keep_arrival(const progress::Arrival &a);
  // probe()'s answer for a message kept inline in the matcher (engine.cc,
  // "Inline messages"), valid until the next probe.
  Message probe_view_;
  friend MatchTotals match_totals();
};

// MPI_Finalize, before requests go: progresses until no message is on its
// way anywhere (collective over MPI_COMM_WORLD), so that freed requests,
// buffered sends and the receives that wait for them finish.
void drain(progress::EngineLock &lock);
// Detaches every handled communicator (MPI_Finalize).
void detach_all();

// The p2p state of comm (handled or with recorded assertions), or nullptr.
std::shared_ptr<P2PComm> p2p_find(MPI_Comm comm);
// The same without a reference, for a call on comm (valid until it returns).
P2PComm *p2p_find_raw(MPI_Comm comm);

// Drives every handled communicator once: polls underlying transfers and
// landing receives. Returns the number of events handled.
int progress_poll();
// progress() plus, when nothing happened, a pause with the engine lock
// released (other threads progress; oversubscribed cores get a turn).
void progress_wait(progress::EngineLock &lock);
// progress_poll() until a poll finds nothing (at most kDrainPasses polls,
// so that a peer that keeps sending cannot hold the caller): takes in all
// that waits, where one poll takes a bounded share of each ring. Caller
// holds the engine lock.
constexpr int kDrainPasses = 1024;
void progress_drain();

// Serialises the point-to-point engine (MPI_THREAD_MULTIPLE programs call
// it from many threads). Never held while user code (error handlers) runs.
// Takes lock's mutex again, counted as a waiter while it blocks (so that a
// thread polling with the lock lets go of it).
void relock(progress::EngineLock &lock);
// Times a thread found the engine lock taken, and the time all such threads
// waited for it in all (MPIX_VERBOSE's contention line: what one lock costs
// threads that call MPI side by side).
struct LockWaitStats {
  std::uint64_t waits = 0;
  std::uint64_t wait_ns = 0;
};
LockWaitStats lock_wait_stats();
// The mutex behind engine_lock(), for a try_lock from the liveness thread.
progress::EngineMutex &engine_mutex();
// Inline: every intercepted call on a handled communicator takes it, and
// the lock is free far more often than not.
inline progress::EngineLock engine_lock() {
  progress::EngineLock lock(engine_mutex(), std::try_to_lock);
  if (!lock.owns_lock()) relock(lock);
  return lock;
}
// Engine lock held: whether a lane ring of a handled communicator holds
// messages not taken in (their sender may wait for room while this process
// blocks in a call mpix does not see: the liveness thread takes them in).
bool lanes_inbound_waiting();
// Whether any posted receive waits in a matcher, or for its sender's part of
// a split transfer (no lock needed).
bool receives_pending();
// A receive started or stopped waiting outside the matcher (split_copy.cc).
void note_receive_waiting(int delta);

// Matching over the whole process, for MPI_T's performance variables:
// every handled communicator now, plus what detached ones did (so that a
// counter never goes back when a communicator is freed). Caller holds the
// engine lock.
struct MatchTotals {
  std::uint64_t matches = 0;         // receives paired with messages by the matchers
  std::uint64_t unexpected_now = 0;  // messages waiting for a receive
  std::uint64_t posted_now = 0;      // receives waiting for a message
  std::uint64_t unexpected_max = 0;  // deepest unexpected queue of one communicator
  std::uint64_t unexpected_inline = 0;  // unexpected messages kept without a record (engine.cc)
  std::uint64_t lane_messages = 0;      // messages carried by lanes (lanes.h)
  std::uint64_t lane_marks = 0;         // engine envelopes of lane communicators ordered by a mark
};
MatchTotals match_totals();


// Tunables, set at MPI_Init from mpix::Config (whose defaults are in
// src/config.cc alone; these zeros are never used by the library).
struct P2PConfig {
  std::size_t eager_limit = 0;
  int landing_slots = 0;
  // Unexpected eager bytes mpix holds before it stops pulling messages out of
  // the MPI library underneath (whose own flow control then applies), unless
  // a posted receive is still waiting for one.
  std::size_t unexpected_limit = 0;
  // Single-copy messages at least this large are split between receiver
  // and sender (0: never); MPIX_SINGLE_COPY_SPLIT.
  std::size_t split_min = 0;
  int verbose = 0;  // MPIX_VERBOSE
  // Tries of the engine lock before a thread yields its core; MPIX_LOCK_SPINS.
  int lock_spins = 0;
};
const P2PConfig &p2p_config();
void p2p_configure(const P2PConfig &c);

}  // namespace mpix::p2p

#endif
