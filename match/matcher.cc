// Cold parts of the Matcher: construction, batch entry point, inspection.
#include "match/matcher.h"

#include <algorithm>

namespace mpix::match {

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::kOrdered: return "ordered";
    case Mode::kOrderedWildcard: return "ordered-wildcard";
    case Mode::kUnordered: return "unordered";
  }
  return "?";
}

const char* status_name(Status status) {
  switch (status) {
    case Status::kMatched: return "matched";
    case Status::kQueued: return "queued";
    case Status::kInvalidKey: return "invalid key";
    case Status::kWrongMode: return "operation not offered by this mode";
  }
  return "?";
}

struct Matcher::BatchState {
  std::vector<BatchItem> arrivals;
  std::vector<BatchItem> receives;
  std::vector<std::uint32_t> unmatched_arrivals;
  std::vector<std::uint32_t> unmatched_receives;
  BatchScratch scratch;
};

namespace {
std::variant<detail::ExactQueues, detail::WildcardQueues> make_queues(Mode mode) {
  if (mode == Mode::kOrderedWildcard) {
    return std::variant<detail::ExactQueues, detail::WildcardQueues>(
        std::in_place_type<detail::WildcardQueues>);
  }
  return std::variant<detail::ExactQueues, detail::WildcardQueues>(
      std::in_place_type<detail::ExactQueues>);
}

void to_batch_items(const Entry* in, std::uint32_t n, std::vector<BatchItem>& out) {
  out.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    out[i] = BatchItem{BatchKey{0, in[i].key.source, in[i].key.tag}, in[i].cookie};
  }
}
}  // namespace

Matcher::Matcher(Mode mode) : mode_(mode), queues_(make_queues(mode)) {}
Matcher::~Matcher() = default;
Matcher::Matcher(Matcher&&) noexcept = default;
Matcher& Matcher::operator=(Matcher&&) noexcept = default;

MatcherBatchCounts Matcher::match_batch(const Entry* arrivals, std::uint32_t n_arrivals,
                                        const Entry* receives, std::uint32_t n_receives,
                                        const MatcherBatchOutput& out) {
  MatcherBatchCounts c{Status::kWrongMode, 0, 0, 0};
  if (mode_ != Mode::kUnordered) return c;
  const auto invalid = [](const Entry& e) { return !is_valid_message_key(e.key); };
  if (std::any_of(arrivals, arrivals + n_arrivals, invalid) ||
      std::any_of(receives, receives + n_receives, invalid)) {
    c.status = Status::kInvalidKey;
    return c;
  }
  if (!batch_) batch_ = std::make_unique<BatchState>();
  BatchState& b = *batch_;
  to_batch_items(arrivals, n_arrivals, b.arrivals);
  to_batch_items(receives, n_receives, b.receives);
  b.unmatched_arrivals.resize(n_arrivals);
  b.unmatched_receives.resize(n_receives);

  // 1. The batch among itself (out.pairs is large enough for these pairs).
  const BatchCounts inner = match_batch_unordered(
      b.arrivals.data(), n_arrivals, b.receives.data(), n_receives,
      BatchOutput{out.pairs, b.unmatched_arrivals.data(), b.unmatched_receives.data()},
      b.scratch);
  c.pairs = inner.pairs;
  detail::ExactQueues& q = *std::get_if<detail::ExactQueues>(&queues_);
  q.core().counters.posts += inner.pairs;
  q.core().counters.arrivals += inner.pairs;
  q.core().counters.matches += inner.pairs;

  // 2. The rest against the queues. The leftover arrivals and receives have
  // no key in common, so their relative order cannot change the outcome.
  // Buckets are prefetched a few entries ahead: at large depth each lookup
  // is a cache miss, and a batch is what lets them overlap.
  constexpr std::uint32_t kAhead = 8;
  for (std::uint32_t k = 0; k < inner.unmatched_receives; ++k) {
    if (k + kAhead < inner.unmatched_receives) {
      q.prefetch(receives[b.unmatched_receives[k + kAhead]].key);
    }
    const std::uint32_t r = b.unmatched_receives[k];
    const PostResult p = q.post(receives[r].key, receives[r].cookie);
    if (p.matched()) {
      out.pairs[c.pairs++] = BatchPair{kFromQueue, r, p.partner, receives[r].cookie, p.partner_aux};
    } else {
      out.queued_receives[c.queued_receives++] = QueuedReceive{r, p.handle};
    }
  }
  for (std::uint32_t k = 0; k < inner.unmatched_arrivals; ++k) {
    if (k + kAhead < inner.unmatched_arrivals) {
      q.prefetch(arrivals[b.unmatched_arrivals[k + kAhead]].key);
    }
    const std::uint32_t a = b.unmatched_arrivals[k];
    const ArriveResult r = q.arrive(arrivals[a].key, arrivals[a].cookie, arrivals[a].aux);
    if (r.matched()) {
      out.pairs[c.pairs++] = BatchPair{a, kFromQueue, arrivals[a].cookie, r.partner};
    } else {
      out.queued_arrivals[c.queued_arrivals++] = a;
    }
  }
  c.status = Status::kMatched;
  return c;
}

Stats Matcher::stats() const {
  Stats s = with_queues([](const auto& q) { return q.core().stats(); });
  if (batch_) {
    s.bytes += batch_->scratch.bytes() +
               (batch_->arrivals.capacity() + batch_->receives.capacity()) * sizeof(BatchItem) +
               (batch_->unmatched_arrivals.capacity() + batch_->unmatched_receives.capacity()) *
                   sizeof(std::uint32_t);
  }
  return s;
}

std::vector<Entry> Matcher::posted_entries() {
  return with_queues([](auto& q) { return q.snapshot(/*unexpected=*/false); });
}

std::vector<Entry> Matcher::unexpected_entries() {
  return with_queues([](auto& q) { return q.snapshot(/*unexpected=*/true); });
}

Drained Matcher::drain() {
  Drained d{posted_entries(), unexpected_entries()};
  with_queues([](auto& q) { q.reset(); });
  return d;
}

void Matcher::trim() {
  with_queues([](auto& q) { q.core().maintain(/*now=*/true); });
  batch_.reset();
}

}  // namespace mpix::match
