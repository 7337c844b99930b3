// Operations handed to the MPI library underneath whose completion mpix waits
// for: eager and rendezvous transfers. One set per process, polled by
// progress().
#ifndef MPIX_PROGRESS_INFLIGHT_H
#define MPIX_PROGRESS_INFLIGHT_H

#include <mpi.h>

#include <cstddef>
#include <utility>
#include <vector>

namespace mpix::progress {

// Whoever started an underlying request. on_complete runs once, from poll(),
// with the status PMPI reported; it may start new operations (add()).
class Pending {
 public:
  virtual ~Pending() = default;
  virtual void on_complete(const MPI_Status &status) = 0;
};

// A poll costs O(requests that completed + kWindow) tests, not O(requests
// in flight) (thousands, when a sender outruns its receiver or the device
// proxy keeps a queue full of sends): the oldest entries, a window at a
// time while at least half of a window completes (transports that complete
// in order, eager sends to one peer, finish there), then the newest kWindow
// and a window of kWindow that sweeps round the rest, so each request is
// tested at least every size() / kWindow polls. Testing every request in
// every poll made a poll cost O(requests in flight) when few of them
// finished per poll.
class InflightSet {
 public:
  static constexpr std::size_t kWindow = 64;

  void add(MPI_Request request, Pending *owner);
  // Tests the requests above and runs the callbacks of those that
  // completed. Returns how many completed.
  int poll();
  bool empty() const { return live_ == 0; }
  std::size_t size() const { return live_; }
  // Cancels and forgets every request owned by `owner` (its callbacks do not
  // run).
  void cancel_owned_by(const Pending *owner);

 private:
  // Adds the live entries of [from, from + count) to the batch to test.
  void gather(std::size_t from, std::size_t count);
  // One PMPI_Testsome over the batch (one progress step of the MPI
  // library); completed entries become MPI_REQUEST_NULL holes, their owners
  // and statuses go to done_. Returns how many completed.
  std::size_t test_gathered();
  // Drops the holes (when they outnumber the live entries: amortised O(1)
  // per completion).
  void compact();

  // In order of add(); MPI_REQUEST_NULL: completed, not compacted away yet.
  std::vector<MPI_Request> requests_;
  std::vector<Pending *> owners_;
  std::size_t head_ = 0;    // entries below are all holes
  std::size_t cursor_ = 0;  // start of the next sweep window
  std::size_t live_ = 0;    // entries that are not holes
  std::vector<std::size_t> picked_;  // the batch: positions in requests_
  std::vector<MPI_Request> batch_;   // and their handles
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;
  std::vector<std::pair<Pending *, MPI_Status>> done_;
};

InflightSet &inflight();

}  // namespace mpix::progress

#endif
