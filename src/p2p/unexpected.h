// Unexpected messages as the matchers keep them: a Message record, or for
// a tiny eager one no record at all (an inline cookie). Shared by the engine
// (engine.cc) and the lanes (lanes.cc), which queue messages in one format
// so that either can deliver what the other kept.
#ifndef MPIX_SRC_P2P_UNEXPECTED_H
#define MPIX_SRC_P2P_UNEXPECTED_H

#include <cstdint>
#include <cstring>
#include <memory>

#include "engine.h"

namespace mpix::p2p {
namespace unexpected {

// Inline messages. An unexpected eager message of at most 8 bytes, without
// a synchronous send's acknowledgement, on a communicator whose matcher
// keeps aux words (the exact modes), gets no record: its cookie says so in
// bit 0 (never set in a Message*, which is at least 8-aligned) and carries
// its size (bits 1-4) and the transport's credit (bits 5-63); its payload
// is the matcher's aux word, which the key's bucket holds while the
// message heads its key. Receiving it then reads the bucket and nothing
// else: the record was a second dependent cache miss (16384 unexpected
// 8-byte messages received in random order on the 2-core VM: 55% of
// P2PComm::recv's samples on the record's first load, 33% on the
// bucket's). Wherever a cookie leaves the matcher, an inline one becomes a
// Message: on the stack for a delivery, on the heap where a record must
// live on (MPI_Mprobe, a region's batch).
constexpr std::uint64_t kInlineMax = sizeof(match::Cookie);
constexpr std::uint64_t kInlineCreditLimit = std::uint64_t{1} << 59;

static_assert(alignof(Message) > 1, "bit 0 of a Message* is never set");
inline bool is_inline(match::Cookie c) { return (c & 1u) != 0; }
inline std::uint64_t inline_bytes(match::Cookie c) { return (c >> 1) & 0xf; }
inline std::size_t inline_credit(match::Cookie c) { return static_cast<std::size_t>(c >> 5); }

inline bool inlinable(const progress::Arrival &a) {
  return a.h.kind == kEager && a.h.flags == 0 && a.h.bytes <= kInlineMax && a.credit < kInlineCreditLimit;
}

inline match::Cookie inline_cookie(const progress::Arrival &a) {
  return 1u | a.h.bytes << 1 | static_cast<std::uint64_t>(a.credit) << 5;
}

// Copies of a constant size, which the compiler makes one load each: a
// memcpy of a.h.bytes was a call through the PLT on every tiny arrival,
// 12% of P2PComm::arrived's samples when streaming 8-byte messages (perf,
// 2-core VM, 2026-11-30).
template <std::size_t N>
inline match::Cookie first_bytes(const void *p) {
  match::Cookie aux = 0;
  std::memcpy(&aux, p, N);
  return aux;
}

inline match::Cookie inline_payload(const progress::Arrival &a) {
  static_assert(kInlineMax == 8, "one case per size below");
  switch (a.h.bytes) {
    case 1: return first_bytes<1>(a.payload);
    case 2: return first_bytes<2>(a.payload);
    case 3: return first_bytes<3>(a.payload);
    case 4: return first_bytes<4>(a.payload);
    case 5: return first_bytes<5>(a.payload);
    case 6: return first_bytes<6>(a.payload);
    case 7: return first_bytes<7>(a.payload);
    case 8: return first_bytes<8>(a.payload);
    default: return 0;
  }
}

// m (fresh) as the inline message (c, aux) of envelope (source, tag).
inline void from_inline(match::Cookie c, match::Cookie aux, int source, int tag, Message &m) {
  m.source = source;
  m.tag = tag;
  m.kind = kEager;
  m.flags = 0;
  m.bytes = inline_bytes(c);
  m.credit = inline_credit(c);
  std::memcpy(m.small, &aux, sizeof aux);
  m.payload = m.small;
}

// The message a matched cookie names, for one delivery: its record (owned
// from here) or, inline, one made on the stack.
class Claimed {
 public:
  Claimed(match::Cookie c, match::Cookie aux, int source, int tag) {
    if (is_inline(c)) from_inline(c, aux, source, tag, inl_);
    else rec_.reset(reinterpret_cast<Message *>(c));
  }
  Message &operator*() { return rec_ ? *rec_ : inl_; }

 private:
  Message inl_;
  std::unique_ptr<Message> rec_;
};

// The same as a record of its own (made for an inline one).
inline std::unique_ptr<Message> message_record(match::Cookie c, match::Cookie aux, int source, int tag) {
  if (!is_inline(c)) return std::unique_ptr<Message>(reinterpret_cast<Message *>(c));
  auto m = std::make_unique<Message>();
  from_inline(c, aux, source, tag, *m);
  return m;
}

}  // namespace unexpected
}  // namespace mpix::p2p

#endif
