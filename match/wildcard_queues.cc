// Cold paths of the wildcard queues: enabling an index, reset.
#include "match/wildcard_queues.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace mpix::match::detail {

void WildcardQueues::enable_index(IndexId which) {
  // The queued messages, in arrival order: walk every exact FIFO, then sort
  // by sequence number.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> messages;
  core_.table.for_each([&](const Bucket& b) {
    if (!b.has_messages() || pattern_of(b.key) != kExactPattern) return;
    for (std::uint32_t s = b.head; s != kNil; s = core_.pool.node(s).fifo.next) {
      messages.emplace_back(core_.pool.node(s).seq, s);
    }
  });
  std::sort(messages.begin(), messages.end());
  index_on_[which] = true;
  if (which == kAll) {
    for (const auto& m : messages) dlist_push_back(all_, m.second, index_links(kAll));
    return;
  }
  core_.table.reserve(messages.size());
  for (const auto& m : messages) {
    const Key k = unpack(core_.pool.node(m.second).key);
    const PackedKey index_key =
        which == kByTag ? pack(kAnySource, k.tag) : pack(k.source, kAnyTag);
    Bucket* b = core_.table.find_or_insert(index_key);
    b->set_holds_unexpected(true);
    dlist_push_back(*b, m.second, index_links(which));
  }
}

void WildcardQueues::reset() {
  core_.reset_queues();
  all_ = ListHead{};
  for (std::size_t& p : pending_) p = 0;
  for (bool& on : index_on_) on = false;
}

}  // namespace mpix::match::detail
