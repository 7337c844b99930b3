// Cold paths of the node pool: opening and trimming chunks.
#include "match/node_pool.h"

#include <stdexcept>

namespace mpix::match::detail {

std::uint32_t NodePool::open_chunk() {
  std::uint32_t c = 0;
  while (c < chunks_.size() && chunks_[c].nodes != nullptr) ++c;
  if (c >= (kMaxSlots >> kChunkBits)) {
    throw std::length_error("mpix::match: more than 2^31 queued entries");
  }
  if (c == chunks_.size()) {
    chunks_.emplace_back();
    has_free_.resize(chunks_.size() / 64 + 1, 0);
  }
  Chunk& ch = chunks_[c];
  ch.nodes = std::make_unique<Node[]>(kChunkNodes);  // zeroed: every seq is 0
  if (with_links_) ch.links = std::make_unique<IndexLinks[]>(kChunkNodes);
  else ch.aux = std::make_unique<Cookie[]>(kChunkNodes);
  ch.free_stack = std::make_unique<std::uint16_t[]>(kChunkNodes);
  // Hand out offsets in increasing order: fresh entries are then adjacent in
  // memory, which the hardware prefetcher likes.
  for (std::uint32_t i = 0; i < kChunkNodes; ++i) {
    ch.free_stack[i] = static_cast<std::uint16_t>(kChunkNodes - 1 - i);
  }
  ch.live = 0;
  ++open_chunks_;
  ++empty_chunks_;
  set_has_free(c);
  return c;
}

void NodePool::trim(std::size_t keep_live) {
  const std::size_t needed = (keep_live + kChunkNodes - 1) / kChunkNodes + 1;
  // Free from the top: allocation fills the lowest chunks first, so the high
  // ones are the ones that stay empty.
  for (std::size_t c = chunks_.size(); c-- > 0;) {
    if (open_chunks_ <= needed || empty_chunks_ == 0) break;
    Chunk& ch = chunks_[c];
    if (ch.nodes == nullptr || ch.live != 0) continue;
    ch.nodes.reset();
    ch.links.reset();
    ch.aux.reset();
    ch.free_stack.reset();
    clear_has_free(static_cast<std::uint32_t>(c));
    --open_chunks_;
    --empty_chunks_;
  }
  while (!chunks_.empty() && chunks_.back().nodes == nullptr) chunks_.pop_back();
  has_free_.resize(chunks_.size() / 64 + 1);
  if (first_word_ > has_free_.size()) first_word_ = has_free_.size();
  if (chunks_.empty()) {
    chunks_.shrink_to_fit();
    has_free_.shrink_to_fit();
  }
}

std::size_t NodePool::bytes() const {
  const std::size_t per_node =
      sizeof(Node) + sizeof(std::uint16_t) + (with_links_ ? sizeof(IndexLinks) : sizeof(Cookie));
  return open_chunks_ * kChunkNodes * per_node + chunks_.capacity() * sizeof(Chunk) +
         has_free_.capacity() * sizeof(std::uint64_t);
}

}  // namespace mpix::match::detail
