// Matching keys, wildcards and caller cookies of the CPU matching engine.
//
// The engine never sees MPI constants: the MPI layer translates
// MPI_ANY_SOURCE / MPI_ANY_TAG into kAnySource / kAnyTag and keeps
// MPI_PROC_NULL away from the engine.
#ifndef MPIX_MATCH_KEY_H_
#define MPIX_MATCH_KEY_H_

#include <cstdint>

// The hash functions below also run in the GPU batch matcher (device/).
#if defined(__CUDACC__)
#define MPIX_HOST_DEVICE __host__ __device__
#else
#define MPIX_HOST_DEVICE
#endif

namespace mpix::match {

// Opaque caller value (usually a pointer to the caller's request or envelope
// record). The engine stores it and hands it back; it never dereferences it.
using Cookie = std::uint64_t;

// Wildcards. Real sources (ranks) and tags are non-negative, so every negative
// value is free; only -1 is accepted, anything else negative is invalid.
inline constexpr std::int32_t kAnySource = -1;
inline constexpr std::int32_t kAnyTag = -1;

// (source, tag) of one communicator. For a receive either field may be a
// wildcard; an arriving message always has both fields >= 0.
struct Key {
  std::int32_t source;
  std::int32_t tag;
};

inline constexpr bool operator==(Key a, Key b) {
  return a.source == b.source && a.tag == b.tag;
}
inline constexpr bool operator!=(Key a, Key b) { return !(a == b); }

inline constexpr bool is_wildcard(Key k) {
  return k.source == kAnySource || k.tag == kAnyTag;
}
// A message envelope: both fields are real values.
inline constexpr bool is_valid_message_key(Key k) {
  return k.source >= 0 && k.tag >= 0;
}
// A receive pattern: each field a real value or its wildcard.
inline constexpr bool is_valid_receive_key(Key k) {
  return k.source >= kAnySource && k.tag >= kAnyTag;
}
// MPI's matching rule for one (receive pattern, message) pair.
inline constexpr bool receive_accepts(Key receive, Key message) {
  return (receive.source == kAnySource || receive.source == message.source) &&
         (receive.tag == kAnyTag || receive.tag == message.tag);
}

namespace detail {

// Keys packed into one 64-bit word for hashing and comparison. Each field is
// stored +1, so a wildcard (-1) packs to 0 and the largest real value
// (INT32_MAX) to 2^31: no packed key can ever equal kEmptyPackedKey, which
// the key table uses to mark free slots.
using PackedKey = std::uint64_t;
inline constexpr PackedKey kEmptyPackedKey = ~PackedKey{0};

inline constexpr PackedKey pack(std::int32_t source, std::int32_t tag) {
  // +1 in unsigned arithmetic: INT32_MAX + 1 must not overflow.
  return (PackedKey{static_cast<std::uint32_t>(source) + 1u} << 32) |
         PackedKey{static_cast<std::uint32_t>(tag) + 1u};
}
inline constexpr PackedKey pack(Key k) { return pack(k.source, k.tag); }
inline constexpr Key unpack(PackedKey p) {
  return Key{static_cast<std::int32_t>(static_cast<std::uint32_t>(p >> 32) - 1u),
             static_cast<std::int32_t>(static_cast<std::uint32_t>(p) - 1u)};
}

// 64-bit mixer (the finaliser of MurmurHash3). Tags are often small
// consecutive integers and sources small ranks: the mixing spreads them over
// the whole word so that the table can use the high bits.
MPIX_HOST_DEVICE inline constexpr std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

}  // namespace detail
}  // namespace mpix::match

#endif  // MPIX_MATCH_KEY_H_
