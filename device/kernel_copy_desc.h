// The resident copy kernel's descriptor (device/kernel_copy.h): its layout
// and the pure functions both sides use, so that a host unit test checks
// what the kernel relies on. Compiles as plain C++ and as CUDA.
//
// A descriptor is one 64-byte line of eight words. Each word carries the
// lap tag of its slot's current use in its top byte: a reader takes the
// descriptor only when all eight tags are the expected lap's, so a line
// read while the host was writing it (old and new words mixed) is never
// taken. Word 0: source address, 1: destination, 2: byte count (bits
// 0-31) and flags, 3-7: up to 35 payload bytes, 7 per word.
#ifndef MPIX_DEVICE_KERNEL_COPY_DESC_H
#define MPIX_DEVICE_KERNEL_COPY_DESC_H

#include <cstddef>
#include <cstdint>

#ifdef __CUDACC__
#define MPIX_HD __host__ __device__
#else
#define MPIX_HD
#endif

namespace mpix::device::kcopy {

constexpr unsigned kSlots = 64;
constexpr std::uint64_t kTagShift = 56;
constexpr std::uint64_t kValueMask = (std::uint64_t{1} << kTagShift) - 1;
constexpr std::uint64_t kInlineFlag = std::uint64_t{1} << 40;
constexpr std::size_t kInlineBytes = 35;

struct alignas(64) Descriptor {
  std::uint64_t word[8];
};

// 1..255 (never 0, which zeroed memory shows): a slot's consecutive uses
// differ.
MPIX_HD inline std::uint64_t lap_tag(std::uint64_t seq) { return (seq / kSlots) % 255 + 1; }

// The words of descriptor seq (inline: n <= kInlineBytes payload bytes
// instead of a source). Addresses and counts must fit below kTagShift.
inline void encode(std::uint64_t seq, std::uint64_t src, std::uint64_t dst, std::uint64_t n,
                   const unsigned char *inline_bytes, std::uint64_t out[8]) {
  const std::uint64_t tag = lap_tag(seq) << kTagShift;
  const std::uint64_t flags = inline_bytes != nullptr ? kInlineFlag : 0;
  out[0] = src | tag;
  out[1] = dst | tag;
  out[2] = n | flags | tag;
  for (int i = 3; i < 8; ++i) out[i] = tag;
  if (inline_bytes != nullptr)
    for (std::size_t i = 0; i < n; ++i) out[3 + i / 7] |= std::uint64_t{inline_bytes[i]} << (8 * (i % 7));
}

// Whether word w belongs to descriptor seq.
MPIX_HD inline bool word_current(std::uint64_t w, std::uint64_t seq) { return (w >> kTagShift) == lap_tag(seq); }

// Inline payload byte i of a descriptor's (tag-stripped) words.
MPIX_HD inline unsigned char inline_byte(const std::uint64_t *words, std::uint32_t i) {
  return static_cast<unsigned char>(words[3 + i / 7] >> (8 * (i % 7)));
}

}  // namespace mpix::device::kcopy

#undef MPIX_HD

#endif
