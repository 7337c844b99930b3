// Public value types of the matcher: modes, results, handles, statistics.
#ifndef MPIX_MATCH_MATCHER_TYPES_H_
#define MPIX_MATCH_MATCHER_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "match/key.h"

namespace mpix::match {

enum class Mode : std::uint8_t {
  // Exact MPI non-overtaking order; receives never use wildcards.
  kOrdered,
  // Full MPI semantics: kAnySource and/or kAnyTag in receives and probes.
  kOrderedWildcard,
  // Any pending partner with an equal key may match; no wildcards. Adds the
  // batch interface (Matcher::match_batch).
  kUnordered,
};

const char* mode_name(Mode mode);

enum class Status : std::uint8_t {
  kMatched,     // `partner` holds the partner's cookie
  kQueued,      // the entry waits in the matcher
  kInvalidKey,  // negative field other than a wildcard, a wildcard in a
                // message, or a wildcard in a mode without wildcards
  kWrongMode,   // operation not offered by this mode (batch outside kUnordered)
};

const char* status_name(Status status);

// Identifies a queued receive for cancel(). Stays safe to use after the
// receive matched or was cancelled: cancel() then returns false.
struct RecvHandle {
  std::uint64_t seq = 0;  // 0: no receive
  std::uint32_t slot = 0;
};

struct PostResult {
  Status status;
  Cookie partner;     // the matched message, when status == kMatched
  RecvHandle handle;  // the queued receive, when status == kQueued
  Cookie partner_aux = 0;  // the aux word the message was queued with
  bool matched() const { return status == Status::kMatched; }
};

struct ArriveResult {
  Status status;
  Cookie partner;  // the matched receive, when status == kMatched
  bool matched() const { return status == Status::kMatched; }
};

// Probe and take: found == false when nothing matches (or the key is invalid).
struct ProbeResult {
  bool found;
  Cookie cookie;
  Cookie aux = 0;
};

// A queued entry as seen by snapshot/drain (in queue order).
struct Entry {
  Key key;  // receive pattern or message envelope
  Cookie cookie;
  // A second word an unexpected message carries in the exact modes (see
  // Matcher::arrive_with), 0 otherwise.
  Cookie aux = 0;
};

// What drain() removed: the matcher is empty afterwards.
struct Drained {
  std::vector<Entry> posted;      // in post order
  std::vector<Entry> unexpected;  // in arrival order
};

struct Stats {
  std::size_t posted_depth = 0;       // receives waiting now
  std::size_t unexpected_depth = 0;   // messages waiting now
  std::size_t max_posted_depth = 0;   // since construction
  std::size_t max_unexpected_depth = 0;
  std::uint64_t posts = 0;            // post() and batch receives
  std::uint64_t arrivals = 0;         // arrive() and batch arrivals
  std::uint64_t matches = 0;
  std::uint64_t cancels = 0;          // successful cancels
  std::uint64_t probes = 0;
  std::uint64_t takes = 0;            // successful takes
  std::size_t keys = 0;               // hash buckets in use (keys queued now,
                                      // or lately: see KeyTable)
  std::size_t bytes = 0;              // memory held by pool and table

  // The stats of two disjoint parts of one matching (ShardedMatcher's
  // shards) as one: every field adds, the peaks too (an upper bound of the
  // whole's peak, which no part saw).
  Stats& operator+=(const Stats& o) {
    posted_depth += o.posted_depth;
    unexpected_depth += o.unexpected_depth;
    max_posted_depth += o.max_posted_depth;
    max_unexpected_depth += o.max_unexpected_depth;
    posts += o.posts;
    arrivals += o.arrivals;
    matches += o.matches;
    cancels += o.cancels;
    probes += o.probes;
    takes += o.takes;
    keys += o.keys;
    bytes += o.bytes;
    return *this;
  }
};

}  // namespace mpix::match

#endif  // MPIX_MATCH_MATCHER_TYPES_H_
