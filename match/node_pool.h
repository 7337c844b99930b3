// Slab pool of queue entries (posted receives and unexpected messages).
//
// Entries are addressed by 31-bit slot numbers: slot = chunk << kChunkBits |
// offset. Chunks are fixed arrays that never move, so Node& references stay
// valid while the chunk table grows. No allocation happens per operation: a
// chunk is opened once per kChunkNodes entries beyond the current capacity.
//
// Memory is reclaimed in two ways:
//  - allocation always takes a free entry from the lowest-numbered chunk that
//    has one, so under steady traffic live entries gather in the low chunks
//    and the high chunks run empty;
//  - trim() (called by the matcher's periodic maintenance) frees empty chunks
//    beyond what a given number of live entries needs.
#ifndef MPIX_MATCH_NODE_POOL_H_
#define MPIX_MATCH_NODE_POOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "match/intrusive_list.h"
#include "match/key.h"

namespace mpix::match::detail {

// One queued receive or message. 32 bytes: two per cache line.
struct Node {
  Cookie cookie;
  // Enqueue order, unique per matcher and never reused (64-bit, no wrap);
  // 0 while the slot is free. It orders candidates across indexes in the
  // wildcard mode and validates cancel handles in every mode.
  std::uint64_t seq;
  PackedKey key;  // the receive pattern or the message envelope
  Link fifo;      // position in the FIFO of `key`
};
static_assert(sizeof(Node) == 32, "two nodes per cache line");

// Extra links of an unexpected message in the wildcard mode, one per index.
enum IndexId : int { kByTag = 0, kBySource = 1, kAll = 2, kIndexCount = 3 };
struct IndexLinks {
  Link by[kIndexCount];
};

class NodePool {
 public:
  static constexpr unsigned kChunkBits = 10;
  static constexpr std::uint32_t kChunkNodes = 1u << kChunkBits;

  // with_index_links: also keep an IndexLinks per node (wildcard mode);
  // otherwise an aux word per node (the exact modes: see Bucket::head_word).
  explicit NodePool(bool with_index_links) : with_links_(with_index_links) {}

  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;
  NodePool(NodePool&&) = default;
  NodePool& operator=(NodePool&&) = default;

  // Returns a free slot; its Node fields are unspecified except seq == 0.
  // Reads no node memory: the free offsets are kept in a small per-chunk
  // stack, not threaded through the free nodes, so that allocating is not a
  // chain of dependent cache misses at large depth.
  std::uint32_t allocate() {
    std::uint32_t c = lowest_chunk_with_free();
    if (c == kNoChunk) c = open_chunk();
    Chunk& ch = chunks_[c];
    const std::uint32_t offset = ch.free_stack[kChunkNodes - 1 - ch.live];
    if (ch.live++ == 0) --empty_chunks_;
    if (ch.live == kChunkNodes) clear_has_free(c);
    ++live_;
    return (c << kChunkBits) | offset;
  }

  void release(std::uint32_t slot) {
    const std::uint32_t c = slot >> kChunkBits;
    const std::uint32_t offset = slot & (kChunkNodes - 1);
    Chunk& ch = chunks_[c];
    ch.nodes[offset].seq = 0;  // stale cancel handles now fail their seq check
    if (ch.live-- == kChunkNodes) set_has_free(c);
    ch.free_stack[kChunkNodes - 1 - ch.live] = static_cast<std::uint16_t>(offset);
    if (ch.live == 0) ++empty_chunks_;
    --live_;
  }

  Node& node(std::uint32_t slot) {
    return chunks_[slot >> kChunkBits].nodes[slot & (kChunkNodes - 1)];
  }
  const Node& node(std::uint32_t slot) const {
    return chunks_[slot >> kChunkBits].nodes[slot & (kChunkNodes - 1)];
  }
  Link& index_link(std::uint32_t slot, IndexId which) {
    return chunks_[slot >> kChunkBits].links[slot & (kChunkNodes - 1)].by[which];
  }
  // Beside the node, not in it (two nodes per cache line stay): read only
  // when an entry becomes the head of its key, which copies it into the
  // bucket. Pools without index links only.
  Cookie& aux(std::uint32_t slot) { return chunks_[slot >> kChunkBits].aux[slot & (kChunkNodes - 1)]; }

  // True when `slot` lies in an open chunk (a cancel handle may outlive a
  // trimmed chunk).
  bool is_open_slot(std::uint32_t slot) const {
    const std::uint32_t c = slot >> kChunkBits;
    return c < chunks_.size() && chunks_[c].nodes != nullptr;
  }

  std::size_t live() const { return live_; }
  std::size_t capacity() const { return open_chunks_ * std::size_t{kChunkNodes}; }
  std::size_t bytes() const;

  // Frees empty chunks while the open chunks can still hold `keep_live`
  // entries plus one chunk of slack (so that a depth oscillating around a
  // chunk boundary does not open and free a chunk every time).
  void trim(std::size_t keep_live);

 private:
  static constexpr std::uint32_t kNoChunk = ~0u;

  struct Chunk {
    std::unique_ptr<Node[]> nodes;         // null once trimmed
    std::unique_ptr<IndexLinks[]> links;   // wildcard mode only
    std::unique_ptr<Cookie[]> aux;         // the other modes only
    // Free offsets: entries [0, kChunkNodes - live) are in use, the top one
    // (index kChunkNodes - 1 - live) is handed out next.
    std::unique_ptr<std::uint16_t[]> free_stack;
    std::uint32_t live = 0;
  };
  static_assert(kChunkNodes <= 65536, "offsets are 16-bit");

  std::uint32_t lowest_chunk_with_free() {
    // Invariant: every word of has_free_ below first_word_ is zero.
    while (first_word_ < has_free_.size()) {
      const std::uint64_t w = has_free_[first_word_];
      if (w != 0) {
        return static_cast<std::uint32_t>(first_word_ * 64 + __builtin_ctzll(w));
      }
      ++first_word_;
    }
    return kNoChunk;
  }
  void set_has_free(std::uint32_t c) {
    has_free_[c / 64] |= std::uint64_t{1} << (c % 64);
    if (c / 64 < first_word_) first_word_ = c / 64;
  }
  void clear_has_free(std::uint32_t c) {
    has_free_[c / 64] &= ~(std::uint64_t{1} << (c % 64));
  }

  std::uint32_t open_chunk();  // cold: opens the lowest closed chunk number

  bool with_links_;
  std::vector<Chunk> chunks_;
  std::vector<std::uint64_t> has_free_;  // bit c: chunk c is open and not full
  std::size_t first_word_ = 0;
  std::size_t live_ = 0;
  std::size_t open_chunks_ = 0;
  std::size_t empty_chunks_ = 0;  // open chunks with no live node
};

// Link accessor of one wildcard index, for the intrusive list functions.
struct IndexLinksOf {
  NodePool& pool;
  IndexId which;
  Link& operator()(std::uint32_t slot) const { return pool.index_link(slot, which); }
};

}  // namespace mpix::match::detail

#endif  // MPIX_MATCH_NODE_POOL_H_
