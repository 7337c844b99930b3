// Cold paths shared by every mode: maintenance, statistics, reset.
#include "match/queue_core.h"

#include <algorithm>
#include <utility>

namespace mpix::match::detail {

namespace {
// Fewest operations between two maintenance passes.
constexpr std::uint64_t kMinMaintenanceWindow = std::uint64_t{1} << 16;
}  // namespace

QueueCore::QueueCore(bool with_index_links)
    : pool(with_index_links),
      with_index_links_(with_index_links),
      ticks_left_(kMinMaintenanceWindow) {}

void QueueCore::maintain(bool now) {
  const std::size_t live = pool.live();
  const std::size_t peak = now ? live : std::max(window_peak_live_, live);
  pool.trim(peak);
  // Live keys are at most the entries (exact FIFOs), plus the tag and source
  // index buckets in the wildcard mode: at most one each per message.
  table.trim(peak * (with_index_links_ ? 3 : 1));
  window_peak_live_ = live;
  ticks_left_ = std::max<std::uint64_t>(kMinMaintenanceWindow,
                                        2 * (pool.capacity() + table.capacity()));
}

Stats QueueCore::stats() const {
  Stats s = counters;
  s.keys = table.occupied();
  s.bytes = pool.bytes() + table.bytes();
  return s;
}

void QueueCore::reset_queues() {
  pool = NodePool(with_index_links_);
  table = KeyTable();
  counters.posted_depth = 0;
  counters.unexpected_depth = 0;
  window_peak_live_ = 0;
}

}  // namespace mpix::match::detail
