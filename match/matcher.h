// mpix::match::Matcher: posted receives and unexpected messages of one
// communicator, matched by (source, tag). Single-threaded: the caller locks.
//
//   Matcher m(Mode::kOrdered);
//   PostResult p = m.post({src, tag}, reinterpret_cast<Cookie>(req));
//   if (p.matched()) ...  // p.partner is the unexpected message's cookie
//   else                  // keep p.handle for cancel()
//   ArriveResult a = m.arrive({src, tag}, msg_cookie);
//
// Every operation is O(1) expected at any queue depth (see README.md) and
// allocates nothing except when the queues grow past their previous peak.
#ifndef MPIX_MATCH_MATCHER_H_
#define MPIX_MATCH_MATCHER_H_

#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

#include "match/batch.h"
#include "match/exact_queues.h"
#include "match/matcher_types.h"
#include "match/wildcard_queues.h"

namespace mpix::match {

// BatchPair index of a partner that came from the matcher's own queues.
inline constexpr std::uint32_t kFromQueue = ~std::uint32_t{0};

struct QueuedReceive {
  std::uint32_t index;  // into the batch's receives
  RecvHandle handle;
};

// Caller-owned output arrays of Matcher::match_batch. Capacities: pairs >=
// n_arrivals + n_receives, queued_arrivals >= n_arrivals, queued_receives >=
// n_receives.
struct MatcherBatchOutput {
  BatchPair* pairs;
  std::uint32_t* queued_arrivals;   // batch arrivals now unexpected, in order
  QueuedReceive* queued_receives;   // batch receives now posted, in order
};

struct MatcherBatchCounts {
  Status status;  // kMatched (done), kInvalidKey or kWrongMode (nothing done)
  std::uint32_t pairs;
  std::uint32_t queued_arrivals;
  std::uint32_t queued_receives;
};

class Matcher {
  // Dispatch to the queues of the mode (an index check, inlined).
  template <class F>
  decltype(auto) with_queues(F&& f) {
    if (auto* exact = std::get_if<detail::ExactQueues>(&queues_)) return f(*exact);
    return f(*std::get_if<detail::WildcardQueues>(&queues_));
  }
  template <class F>
  decltype(auto) with_queues(F&& f) const {
    if (auto* exact = std::get_if<detail::ExactQueues>(&queues_)) return f(*exact);
    return f(*std::get_if<detail::WildcardQueues>(&queues_));
  }


 public:
  explicit Matcher(Mode mode);
  ~Matcher();
  Matcher(Matcher&&) noexcept;
  Matcher& operator=(Matcher&&) noexcept;

  Mode mode() const { return mode_; }

  // Posts a receive: matches the earliest-arrived eligible unexpected message
  // (kMatched, partner = its cookie) or queues the receive (kQueued, handle).
  PostResult post(Key pattern, Cookie receive) {
    return with_queues([&](auto& q) { return q.post(pattern, receive); });
  }
  // post() that calls make_cookie() only when the receive is queued.
  template <class MakeCookie>
  PostResult post_with(Key pattern, MakeCookie&& make_cookie) {
    return with_queues([&](auto& q) { return q.post_with(pattern, make_cookie); });
  }
  // A message envelope arrived: matches the earliest-posted eligible receive
  // or queues the message as unexpected.
  ArriveResult arrive(Key envelope, Cookie message) {
    return with_queues([&](auto& q) { return q.arrive(envelope, message); });
  }
  // arrive() that calls make_cookie() only when the message is queued (so a
  // caller builds its record of an unexpected message only if there is one).
  // aux: a second word queued with the message and handed back with its
  // cookie (PostResult::partner_aux, ProbeResult::aux, Entry::aux), kept in
  // the key's bucket while the message heads its key, so that the receive
  // of a message that small (a few payload bytes beside a tagged cookie)
  // reads no memory but the bucket. Exact modes only (keeps_aux()); the
  // wildcard mode refuses a nonzero aux with kWrongMode.
  template <class MakeCookie>
  ArriveResult arrive_with(Key envelope, MakeCookie&& make_cookie, Cookie aux = 0) {
    return with_queues([&](auto& q) { return q.arrive_with(envelope, make_cookie, aux); });
  }
  bool keeps_aux() const { return mode_ != Mode::kOrderedWildcard; }
  // The unexpected message that post(pattern) would match, left in place
  // (MPI_Iprobe).
  ProbeResult probe(Key pattern) {
    return with_queues([&](auto& q) { return q.probe(pattern); });
  }
  // Removes and returns that message without posting anything (MPI_Mprobe).
  ProbeResult take(Key pattern) {
    return with_queues([&](auto& q) { return q.take(pattern); });
  }
  // Whether a new entry with exact key k could meet something already
  // queued (batch callers keep such keys out of a batch, so that older
  // entries keep their precedence).
  bool key_busy(Key k) {
    return with_queues([&](auto& q) { return q.key_busy(k); });
  }
  // Removes a queued receive; false if it already matched or was cancelled.
  bool cancel(RecvHandle handle) {
    return with_queues([&](auto& q) { return q.cancel(handle); });
  }

  // Mode::kUnordered only. Matches the batch among itself and against the
  // queues, then queues what is left (maximal: nothing left queued can match
  // anything else queued). Pairs whose partner came from the queues carry
  // kFromQueue as that partner's index.
  MatcherBatchCounts match_batch(const Entry* arrivals, std::uint32_t n_arrivals,
                                 const Entry* receives, std::uint32_t n_receives,
                                 const MatcherBatchOutput& out);

  Stats stats() const;
  // Receives plus messages queued now (stats() without its walk of the
  // table and pool sizes).
  std::size_t depth() const {
    return with_queues([](const auto& q) {
      const Stats& c = q.core().counters;
      return c.posted_depth + c.unexpected_depth;
    });
  }
  // Queued entries in queue order, left in place.
  std::vector<Entry> posted_entries();
  std::vector<Entry> unexpected_entries();
  // Removes everything (e.g. at communicator free); old handles stay invalid.
  Drained drain();
  // Gives back all memory the current depth does not need (maintenance also
  // does this on its own, down to the recent peak).
  void trim();

 private:
  struct BatchState;  // scratch of match_batch, made on first use

  Mode mode_;
  std::variant<detail::ExactQueues, detail::WildcardQueues> queues_;
  std::unique_ptr<BatchState> batch_;
};

}  // namespace mpix::match

#endif  // MPIX_MATCH_MATCHER_H_
