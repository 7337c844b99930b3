// libFuzzer target: operation streams on the matching engine (match/),
// every result compared with the reference matcher (test/unit). The input
// is a program: its first byte picks the mode, then each 3 bytes are one
// operation (kind, source, tag). Keys come from a small space (so they
// repeat: the multiplicity is what exercises ordering) plus the extreme
// values; wildcards only where the mode allows them, as the engine's
// callers guarantee. Unordered mode is checked against its contract: a
// partner with an equal key, nothing matched twice, and never a queued
// receive beside a queued message of the same key.
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>
#include <utility>
#include <vector>

#include "match/matcher.h"
#include "test/unit/reference_matcher.h"

namespace {

using mpix::match::Cookie;
using mpix::match::Key;
using mpix::match::Matcher;
using mpix::match::Mode;

[[noreturn]] void fail(const char *what, std::size_t op) {
  std::fprintf(stderr, "fuzz_matcher: %s differs from the reference at operation %zu\n", what, op);
  std::abort();
}

std::int32_t field(std::uint8_t b) { return b >= 0xF8 ? INT32_MAX - (0xFF - b) : static_cast<std::int32_t>(b % 6); }

Key pattern_of(std::uint8_t s, std::uint8_t t, bool wildcards) {
  Key k{field(s), field(t)};
  if (wildcards && (s & 0x40) != 0) k.source = mpix::match::kAnySource;
  if (wildcards && (t & 0x40) != 0) k.tag = mpix::match::kAnyTag;
  return k;
}

void ordered(const std::uint8_t *data, std::size_t size, Mode mode) {
  const bool wildcards = mode == Mode::kOrderedWildcard;
  Matcher m(mode);
  mpix::match::test::ReferenceMatcher ref;
  std::vector<std::pair<mpix::match::RecvHandle, std::uint64_t>> handles;
  Cookie next = 1;
  for (std::size_t i = 0; i + 3 <= size; i += 3) {
    const std::size_t op = i / 3;
    const std::uint8_t kind = data[i] % 6, s = data[i + 1], t = data[i + 2];
    switch (kind) {
      case 0: {  // post a receive
        const Key k = pattern_of(s, t, wildcards);
        std::uint64_t id = 0;
        const auto want = ref.post(k, next, &id);
        const auto got = m.post(k, next);
        ++next;
        if (got.matched() != want.has_value() || (want && got.partner != *want)) fail("post", op);
        if (!want) handles.emplace_back(got.handle, id);
        break;
      }
      case 1:
      case 2: {  // a message arrives (twice as often: queues fill both ways)
        const Key k{field(s), field(t)};
        const auto want = ref.arrive(k, next);
        const auto got = m.arrive(k, next);
        ++next;
        if (got.matched() != want.has_value() || (want && got.partner != *want)) fail("arrive", op);
        break;
      }
      case 3: {
        const Key k = pattern_of(s, t, wildcards);
        const auto want = ref.probe(k);
        const auto got = m.probe(k);
        if (got.found != want.has_value() || (want && got.cookie != *want)) fail("probe", op);
        break;
      }
      case 4: {
        const Key k = pattern_of(s, t, wildcards);
        const auto want = ref.take(k);
        const auto got = m.take(k);
        if (got.found != want.has_value() || (want && got.cookie != *want)) fail("take", op);
        break;
      }
      default: {  // cancel a receive posted earlier (often one already matched)
        if (handles.empty()) break;
        const auto &[handle, id] = handles[(static_cast<std::size_t>(s) << 8 | t) % handles.size()];
        if (m.cancel(handle) != ref.cancel(id)) fail("cancel", op);
        break;
      }
    }
  }
  const auto posted = m.posted_entries();
  const auto unexpected = m.unexpected_entries();
  if (posted.size() != ref.posted().size() || unexpected.size() != ref.unexpected().size()) fail("queue depth", 0);
  auto p = ref.posted().begin();
  for (const auto &e : posted)
    if (!(e.key == p->pattern) || e.cookie != (p++)->cookie) fail("posted queue", 0);
  auto u = ref.unexpected().begin();
  for (const auto &e : unexpected)
    if (!(e.key == u->envelope) || e.cookie != (u++)->cookie) fail("unexpected queue", 0);
}

void unordered(const std::uint8_t *data, std::size_t size) {
  Matcher m(Mode::kUnordered);
  std::vector<Key> key_of{Key{0, 0}};  // by cookie
  std::unordered_set<Cookie> matched;
  for (std::size_t i = 0; i + 3 <= size; i += 3) {
    const std::size_t op = i / 3;
    const Key k{field(data[i + 1]), field(data[i + 2])};
    const Cookie c = key_of.size();
    key_of.push_back(k);
    bool found = false;
    Cookie partner = 0;
    if (data[i] % 2 == 0) {
      const auto r = m.post(k, c);
      found = r.matched();
      partner = r.partner;
    } else {
      const auto r = m.arrive(k, c);
      found = r.matched();
      partner = r.partner;
    }
    if (!found) continue;
    if (partner == 0 || partner >= c || !(key_of[partner] == k)) fail("unordered partner key", op);
    if (!matched.insert(partner).second) fail("unordered partner matched twice", op);
    matched.insert(c);
  }
  // Maximality: no key both queued as a receive and as a message.
  std::unordered_set<std::uint64_t> receive_keys;
  auto pack = [](Key k) { return static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.source)) << 32 |
                                 static_cast<std::uint32_t>(k.tag); };
  for (const auto &e : m.posted_entries()) receive_keys.insert(pack(e.key));
  for (const auto &e : m.unexpected_entries())
    if (receive_keys.count(pack(e.key)) != 0) fail("unordered maximality", 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0) return 0;
  switch (data[0] % 3) {
    case 0: ordered(data + 1, size - 1, Mode::kOrdered); break;
    case 1: ordered(data + 1, size - 1, Mode::kOrderedWildcard); break;
    default: unordered(data + 1, size - 1); break;
  }
  return 0;
}
