#include "inflight.h"

#include <algorithm>

namespace mpix::progress {

void InflightSet::add(MPI_Request request, Pending *owner) {
  requests_.push_back(request);
  owners_.push_back(owner);
}

int InflightSet::poll() {
  const int n = static_cast<int>(requests_.size());
  if (n == 0) return 0;
  indices_.resize(n);
  statuses_.resize(n);
  int outcount = 0;
  // Errors (truncation of a rendezvous receive) come back per status: the
  // shadow communicators use MPI_ERRORS_RETURN.
  PMPI_Testsome(n, requests_.data(), &outcount, indices_.data(), statuses_.data());
  if (outcount == MPI_UNDEFINED || outcount == 0) return 0;
  done_.clear();
  for (int i = 0; i < outcount; ++i) done_.emplace_back(owners_[indices_[i]], statuses_[i]);
  // Completed entries are MPI_REQUEST_NULL now; compact before the callbacks,
  // which may add new requests.
  std::size_t w = 0;
  for (std::size_t r = 0; r < requests_.size(); ++r) {
    if (requests_[r] == MPI_REQUEST_NULL) continue;
    requests_[w] = requests_[r];
    owners_[w] = owners_[r];
    ++w;
  }
  requests_.resize(w);
  owners_.resize(w);
  // Callbacks may add (push_back) while we iterate over a copy of done_.
  std::vector<std::pair<Pending *, MPI_Status>> done;
  done.swap(done_);
  for (auto &[owner, status] : done) owner->on_complete(status);
  done.clear();
  if (done_.capacity() < done.capacity()) done_.swap(done);
  return outcount;
}

void InflightSet::cancel_owned_by(const Pending *owner) {
  std::size_t w = 0;
  for (std::size_t r = 0; r < requests_.size(); ++r) {
    if (owners_[r] == owner) {
      PMPI_Cancel(&requests_[r]);
      PMPI_Request_free(&requests_[r]);
      continue;
    }
    requests_[w] = requests_[r];
    owners_[w] = owners_[r];
    ++w;
  }
  requests_.resize(w);
  owners_.resize(w);
}

InflightSet &inflight() {
  static InflightSet set;
  return set;
}

}  // namespace mpix::progress
