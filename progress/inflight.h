// Operations handed to the MPI library underneath whose completion mpix waits
// for: landing receives, eager and rendezvous transfers. One set per process,
// polled by progress() with a single PMPI_Testsome.
#ifndef MPIX_PROGRESS_INFLIGHT_H
#define MPIX_PROGRESS_INFLIGHT_H

#include <mpi.h>

#include <vector>

namespace mpix::progress {

// Whoever started an underlying request. on_complete runs once, from poll(),
// with the status PMPI reported; it may start new operations (add()).
class Pending {
 public:
  virtual ~Pending() = default;
  virtual void on_complete(const MPI_Status &status) = 0;
};

class InflightSet {
 public:
  void add(MPI_Request request, Pending *owner);
  // Tests every request once and runs the callbacks of those that completed.
  // Returns how many completed.
  int poll();
  bool empty() const { return requests_.empty(); }
  std::size_t size() const { return requests_.size(); }
  // Cancels and forgets every request owned by `owner` (its callbacks do not
  // run); used when a communicator's landing receives are torn down.
  void cancel_owned_by(const Pending *owner);

 private:
  std::vector<MPI_Request> requests_;
  std::vector<Pending *> owners_;
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;
  std::vector<std::pair<Pending *, MPI_Status>> done_;
};

InflightSet &inflight();

}  // namespace mpix::progress

#endif
