// Split single-copy transfers: the receiver of a large message within a node
// reads its first part while the sender writes the second, so that two
// cores copy at once (issue 30: one core reading every byte trailed native
// MPICH's pipelined two-copy rendezvous by 15% in streaming on a 16-core
// Xeon). The protocol is in engine.h beside SplitWait; the wire in
// progress/wire.h (kSplitAsk, kSplitDone).
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "engine.h"
#include "progress/shm_ring.h"
#include "progress/single_copy.h"

namespace mpix::p2p {
namespace {

// A claim word: the state in the high half, the ask's name in the low.
// Only the receiver makes a word non-zero (asked) and zero again (after the
// receive completed); the sender only moves asked to writing.
constexpr std::uint64_t kAsked = 1, kWriting = 2, kTaken = 3;
std::uint64_t claim(std::uint64_t state, std::uint32_t ask) { return state << 32 | ask; }

// Asks are named process-wide (under the engine lock): the claim words of
// a pair of processes serve every communicator between them.
std::uint32_t g_next_ask = 0;
std::uint32_t next_ask() {
  if (++g_next_ask == 0) ++g_next_ask;
  return g_next_ask;
}

// How often a receive waiting for its sender's part checks that the sender
// still lives (/proc reads: not every poll).
constexpr auto kPeerCheckPeriod = std::chrono::milliseconds(20);

void send_control(progress::Link &link, int dest, std::uint32_t kind, const void *payload, std::size_t n) {
  const progress::WireHeader h{0, kind, n, 0, 0};
  bool pending = false;
  // done == nullptr: the link copies the few bytes before it returns.
  link.send_eager(dest, h, payload, n, nullptr, &pending);
}

}  // namespace

void P2PComm::SplitOffer::on_complete(const MPI_Status &status) {
  progress::Pending *then = inner;
  comm->split_offers_.erase(id);  // destroys this
  then->on_complete(status);
}

progress::Pending *P2PComm::split_offer(const char *src, std::size_t bytes, int dest, progress::Pending *inner,
                                        std::uint32_t *offer) {
  *offer = 0;
  const std::size_t min = p2p_config().split_min;
  if (min == 0 || bytes < min || progress::shm::active_node() == nullptr) return inner;
  if (++next_offer_ == 0) ++next_offer_;
  auto o = std::make_unique<SplitOffer>();
  o->comm = this;
  o->id = next_offer_;
  o->src = src;
  o->bytes = bytes;
  o->dest = dest;
  o->inner = inner;
  SplitOffer *raw = o.get();
  split_offers_[raw->id] = std::move(o);
  *offer = raw->id;
  return raw;
}

void P2PComm::split_withdraw(std::uint32_t offer) {
  if (offer != 0) split_offers_.erase(offer);
}

bool P2PComm::split_deliver(Request *r, const Message &m, const progress::SingleCopyRts &d, char *into,
                            std::size_t n) {
  const std::size_t min = p2p_config().split_min;
  if (d.offer == 0 || min == 0 || n < min || n != m.bytes || d.pid == progress::single_copy_pid()) return false;
  // A sender that our own large sends keep busy reading (traffic both ways)
  // has no core to spare: asking would only cost it the ask and us a
  // take-back (bidirectional streaming lost 5-10% on the 2-core VM).
  for (const auto &[id, o] : split_offers_)
    if (o->dest == m.source && !o->asked) return false;
  progress::shm::Node *node = progress::shm::active_node();
  const int world = world_[static_cast<std::size_t>(m.source)];
  std::atomic<std::uint64_t> *words = node != nullptr ? node->claims_from(world) : nullptr;
  if (words == nullptr) return false;
  std::size_t k = 0;
  while (k < progress::shm::Ring::kClaims && words[k].load(std::memory_order_relaxed) != 0) ++k;
  if (k == progress::shm::Ring::kClaims) return false;  // this pair's claims all in use: read it all
  // Our part ends on a page boundary of the receive buffer (cross-memory
  // copies pin whole pages; two processes pinning one page contend).
  const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(into);
  const std::size_t first = static_cast<std::size_t>(((base + n / 2 + 4095) & ~std::uintptr_t{4095}) - base);
  if (first == 0 || first >= n) return false;
  const std::uint32_t ask = next_ask();
  words[k].store(claim(kAsked, ask), std::memory_order_release);
  SplitWait &w = split_waits_[ask];
  w.r = r;
  w.arrival = m.arrival();
  w.source = m.source;
  w.tag = m.tag;
  w.bytes = n;
  w.first = first;
  w.pid = d.pid;
  w.remote = d.addr;
  w.into = into;
  w.claim = &words[k];
  note_receive_waiting(+1);
  const progress::SplitAsk a{static_cast<std::uint64_t>(base + first),
                             first,
                             n - first,
                             progress::single_copy_pid(),
                             d.offer,
                             ask,
                             static_cast<std::uint32_t>(k)};
  send_control(*link_, m.source, progress::kSplitAsk, &a, sizeof a);
  // Our part is read by split_progress(), once the ask is on its way.
  split_reads_.push_back(ask);
  return true;
}

void P2PComm::split_read_own(std::uint32_t ask) {
  auto it = split_waits_.find(ask);
  if (it == split_waits_.end()) return;
  SplitWait &w = it->second;
  int err = progress::single_copy_read(w.pid, w.remote, w.into, w.first);
  w.own_done = true;
  // The sender not started on its part: it is ours too.
  std::uint64_t expect = claim(kAsked, ask);
  if (!w.peer_done && w.claim->compare_exchange_strong(expect, claim(kTaken, ask), std::memory_order_acq_rel)) {
    if (err == 0) err = progress::single_copy_read(w.pid, w.remote + w.first, w.into + w.first, w.bytes - w.first, false);
    w.peer_done = true;
  }
  if (err != 0) {
    report_read_failure(w.bytes, w.source, w.pid, err);
    w.error = MPI_ERR_OTHER;
  }
  if (w.peer_done) split_complete(ask);  // else the sender is writing: its kSplitDone completes it
}

void P2PComm::split_complete(std::uint32_t ask) {
  auto it = split_waits_.find(ask);
  if (it == split_waits_.end()) return;
  const SplitWait w = it->second;
  split_waits_.erase(it);
  note_receive_waiting(-1);
  w.claim->store(0, std::memory_order_release);
  // The sender's buffer is free now (its part written, ours read).
  link_->matched(w.arrival);
  w.r->finish(w.source, w.tag, w.error != MPI_SUCCESS ? w.error : w.peer_error, static_cast<MPI_Count>(w.bytes));
}

void P2PComm::split_arrived(const progress::Arrival &a) {
  if (a.h.kind == progress::kSplitDone) {
    progress::SplitDone d{};
    const progress::WireError bad = progress::decode_split_done(a.payload, a.payload_bytes, &d);
    auto it = bad == progress::WireError::kOk ? split_waits_.find(d.ask) : split_waits_.end();
    if (bad != progress::WireError::kOk || it == split_waits_.end() || it->second.source != a.source) {
      progress::report_malformed("point-to-point", a.source,
                                 bad != progress::WireError::kOk ? bad : progress::WireError::kBadField);
      return;
    }
    SplitWait &w = it->second;
    if (d.error != 0) {
      std::fprintf(stderr, "[mpix] rank %d could not write its part of a split message to rank %d: %s\n", a.source,
                   rank_, std::strerror(d.error));
      w.peer_error = MPI_ERR_OTHER;
    }
    w.peer_done = true;
    if (w.own_done) split_complete(d.ask);
    return;
  }
  // kSplitAsk: the receiver wants our second part.
  progress::SplitAsk ask{};
  progress::WireError bad = progress::decode_split_ask(a.payload, a.payload_bytes, &ask);
  auto it = bad == progress::WireError::kOk ? split_offers_.find(ask.offer) : split_offers_.end();
  if (bad == progress::WireError::kOk &&
      (it == split_offers_.end() || it->second->dest != a.source || it->second->asked ||
       ask.offset + ask.bytes != it->second->bytes || ask.claim >= progress::shm::Ring::kClaims))
    bad = progress::WireError::kBadField;
  progress::shm::Node *node = progress::shm::active_node();
  std::atomic<std::uint64_t> *words =
      bad == progress::WireError::kOk && node != nullptr ? node->claims_to(world_[static_cast<std::size_t>(a.source)])
                                                         : nullptr;
  if (words == nullptr) {
    // Nothing to write from: the receiver takes the part back itself once
    // it finds its claim still "asked".
    progress::report_malformed("point-to-point", a.source,
                               bad != progress::WireError::kOk ? bad : progress::WireError::kBadKind);
    return;
  }
  SplitOffer &o = *it->second;
  o.asked = true;
  std::uint64_t expect = claim(kAsked, ask.ask);
  if (!words[ask.claim].compare_exchange_strong(expect, claim(kWriting, ask.ask), std::memory_order_acq_rel))
    return;  // the receiver took it back
  const int err = progress::single_copy_write(ask.pid, ask.dst, o.src + ask.offset, static_cast<std::size_t>(ask.bytes));
  const progress::SplitDone done{ask.ask, err};
  send_control(*link_, a.source, progress::kSplitDone, &done, sizeof done);
}

int P2PComm::split_progress() {
  int n = 0;
  if (!split_reads_.empty()) {
    // Reads may complete receives whose callers post more: a list of our own.
    split_reads_spare_.swap(split_reads_);
    for (std::uint32_t ask : split_reads_spare_) split_read_own(ask);
    n = static_cast<int>(split_reads_spare_.size());
    split_reads_spare_.clear();
  }
  static auto last = std::chrono::steady_clock::now();
  const auto now = std::chrono::steady_clock::now();
  if (split_waits_.empty() || now - last < kPeerCheckPeriod) return n;
  last = now;
  for (auto it = split_waits_.begin(); it != split_waits_.end();) {
    const std::uint32_t ask = it->first;
    SplitWait &w = it->second;
    ++it;  // split_complete erases the entry
    if (!w.own_done || !progress::process_exited(world_[static_cast<std::size_t>(w.source)])) continue;
    std::fprintf(stderr, "[mpix] rank %d exited while writing its part of a message to rank %d\n", w.source, rank_);
    w.peer_error = MPI_ERR_OTHER;
    split_complete(ask);
  }
  return n;
}

}  // namespace mpix::p2p
