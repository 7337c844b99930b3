// The number of each message (or receive) within its (peer, tag), in call
// order: the n-th send to (peer, tag) and the n-th receive from it meet in
// the device message table at the place hashed from (tag, n)
// (include/mpix_device/proto.h), so each side counts its own calls. Free of
// MPI and CUDA (unit-tested alone).
#ifndef MPIX_MPIX_KEY_NUMBERS_H
#define MPIX_MPIX_KEY_NUMBERS_H

#include <cstdint>
#include <unordered_map>

namespace mpix::stream {

class KeyNumbers {
 public:
  // The next number of (peer, tag): 0, 1, 2, ... (wrapping at 2^32, as the
  // device counters do).
  std::uint32_t next(int peer, int tag) { return counts_[key(peer, tag)]++; }

 private:
  static std::uint64_t key(int peer, int tag) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(peer)) << 32) | static_cast<std::uint32_t>(tag);
  }
  std::unordered_map<std::uint64_t, std::uint32_t> counts_;
};

}  // namespace mpix::stream

#endif
