// Reference matcher for tests (and the benchmark's baseline): MPI's matching
// rules written as plainly as possible, with two linear lists and no index.
// Deliberately slow: O(depth) per operation.
//
//   - A posted receive takes the first message, in arrival order, that it
//     accepts; otherwise it is appended to the posted list.
//   - An arriving message takes the first receive, in post order, that
//     accepts it; otherwise it is appended to the unexpected list.
//   - A receive (source, tag) accepts a message iff each field is equal or
//     the receive's field is the wildcard.
#ifndef MPIX_TEST_UNIT_REFERENCE_MATCHER_H_
#define MPIX_TEST_UNIT_REFERENCE_MATCHER_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <vector>

#include "match/key.h"

namespace mpix::match::test {

class ReferenceMatcher {
 public:
  struct Posted {
    Key pattern;
    Cookie cookie;
    std::uint64_t id;  // what cancel() takes
  };
  struct Message {
    Key envelope;
    Cookie cookie;
  };

  // Written out here rather than taken from the engine, so that a mistake
  // there cannot hide in both.
  static bool accepts(Key pattern, Key envelope) {
    const bool source_ok = pattern.source == kAnySource || pattern.source == envelope.source;
    const bool tag_ok = pattern.tag == kAnyTag || pattern.tag == envelope.tag;
    return source_ok && tag_ok;
  }

  // Returns the matched message's cookie, or nothing (then *queued_id names
  // the queued receive).
  std::optional<Cookie> post(Key pattern, Cookie receive, std::uint64_t* queued_id) {
    for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
      if (accepts(pattern, it->envelope)) {
        const Cookie c = it->cookie;
        unexpected_.erase(it);
        return c;
      }
    }
    posted_.push_back(Posted{pattern, receive, ++last_id_});
    if (queued_id != nullptr) *queued_id = last_id_;
    return std::nullopt;
  }

  std::optional<Cookie> arrive(Key envelope, Cookie message) {
    for (auto it = posted_.begin(); it != posted_.end(); ++it) {
      if (accepts(it->pattern, envelope)) {
        const Cookie c = it->cookie;
        posted_.erase(it);
        return c;
      }
    }
    unexpected_.push_back(Message{envelope, message});
    return std::nullopt;
  }

  std::optional<Cookie> probe(Key pattern) const {
    for (const Message& m : unexpected_) {
      if (accepts(pattern, m.envelope)) return m.cookie;
    }
    return std::nullopt;
  }

  std::optional<Cookie> take(Key pattern) {
    for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
      if (accepts(pattern, it->envelope)) {
        const Cookie c = it->cookie;
        unexpected_.erase(it);
        return c;
      }
    }
    return std::nullopt;
  }

  bool cancel(std::uint64_t id) {
    for (auto it = posted_.begin(); it != posted_.end(); ++it) {
      if (it->id == id) {
        posted_.erase(it);
        return true;
      }
    }
    return false;
  }

  const std::list<Posted>& posted() const { return posted_; }
  const std::list<Message>& unexpected() const { return unexpected_; }

 private:
  std::list<Posted> posted_;         // in post order
  std::list<Message> unexpected_;    // in arrival order
  std::uint64_t last_id_ = 0;
};

}  // namespace mpix::match::test

#endif  // MPIX_TEST_UNIT_REFERENCE_MATCHER_H_
