#include "inflight.h"

#include <algorithm>

#include "immortal.h"

namespace mpix::progress {

void InflightSet::add(MPI_Request request, Pending *owner) {
  requests_.push_back(request);
  owners_.push_back(owner);
  ++live_;
}

void InflightSet::gather(std::size_t from, std::size_t count) {
  for (std::size_t k = from; k < from + count; ++k) {
    if (requests_[k] == MPI_REQUEST_NULL) continue;
    picked_.push_back(k);
    batch_.push_back(requests_[k]);
  }
}

std::size_t InflightSet::test_gathered() {
  const std::size_t count = batch_.size();
  if (count == 0) return 0;
  indices_.resize(count);
  statuses_.resize(count);
  int outcount = 0;
  // Errors (truncation of a rendezvous receive) come back per status: the
  // shadow communicators use MPI_ERRORS_RETURN.
  PMPI_Testsome(static_cast<int>(count), batch_.data(), &outcount, indices_.data(), statuses_.data());
  if (outcount == MPI_UNDEFINED) outcount = 0;
  if (outcount > 0) {
    for (int i = 0; i < outcount; ++i) {
      const std::size_t k = picked_[static_cast<std::size_t>(indices_[i])];
      done_.emplace_back(owners_[k], statuses_[i]);
      requests_[k] = MPI_REQUEST_NULL;  // a hole
      owners_[k] = nullptr;
    }
    live_ -= static_cast<std::size_t>(outcount);
  }
  picked_.clear();
  batch_.clear();
  return static_cast<std::size_t>(outcount);
}

void InflightSet::compact() {
  std::size_t w = 0;
  for (std::size_t r = head_; r < requests_.size(); ++r) {
    if (requests_[r] == MPI_REQUEST_NULL) continue;
    requests_[w] = requests_[r];
    owners_[w] = owners_[r];
    ++w;
  }
  requests_.resize(w);
  owners_.resize(w);
  head_ = 0;
  cursor_ = 0;
}

int InflightSet::poll() {
  if (live_ == 0) return 0;
  done_.clear();
  const std::size_t end = requests_.size();
  // Oldest first, a window at a time for as long as at least half of a
  // window completes: in-order transports (eager sends to one peer) finish
  // there, so a poll takes in all that finished at a cost that follows
  // them, and a few long transfers among them do not stop it.
  std::size_t from = head_;
  while (from < end) {
    const std::size_t n = std::min(kWindow, end - from);
    gather(from, n);
    const std::size_t picked = picked_.size();
    const std::size_t completed = test_gathered();
    from += n;
    if (2 * completed < picked) break;
  }
  // Then, in one more call, the newest (what a blocking call waits for was
  // added last) and a window that sweeps round the rest.
  if (from < end) {
    const std::size_t hi = end - from > kWindow ? end - kWindow : from;
    if (cursor_ < from || cursor_ >= hi) cursor_ = from;
    const std::size_t n = std::min(kWindow, hi - cursor_);
    gather(cursor_, n);
    cursor_ += n;
    gather(hi, end - hi);
    test_gathered();
  }
  if (done_.empty()) return 0;
  while (head_ < requests_.size() && requests_[head_] == MPI_REQUEST_NULL) ++head_;
  // Before the callbacks, which may add new requests.
  if (live_ == 0) {
    requests_.clear();
    owners_.clear();
    head_ = 0;
    cursor_ = 0;
  } else if (requests_.size() - live_ > live_ + kWindow) {
    compact();
  }
  // Callbacks may add (push_back) while we iterate over a copy of done_.
  std::vector<std::pair<Pending *, MPI_Status>> done;
  done.swap(done_);
  for (auto &[owner, status] : done) owner->on_complete(status);
  const int completed = static_cast<int>(done.size());
  done.clear();
  if (done_.capacity() < done.capacity()) done_.swap(done);
  return completed;
}

void InflightSet::cancel_owned_by(const Pending *owner) {
  for (std::size_t r = head_; r < requests_.size(); ++r) {
    if (requests_[r] == MPI_REQUEST_NULL || owners_[r] != owner) continue;
    PMPI_Cancel(&requests_[r]);
    PMPI_Request_free(&requests_[r]);
    requests_[r] = MPI_REQUEST_NULL;
    owners_[r] = nullptr;
    --live_;
  }
  compact();
}

InflightSet &inflight() {
  static Immortal<InflightSet> set;
  return set.get();
}

}  // namespace mpix::progress
