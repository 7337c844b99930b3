// One handled communicator over UCX (see ucx_worker.h for the wire).
//
// Every member gives the communicator a process-local link id; the ids are
// exchanged once when the link is made (with the worker addresses of
// members met for the first time), so a sender names the receiver's link
// in each envelope and the receiver finds it in one hash lookup, with no
// agreement on a common id. Envelopes carry a sequence number per (sender,
// receiver) pair: UCX does not promise that active messages of one
// endpoint arrive in order on every transport (several lanes, rendezvous
// beside eager), MPI's matching needs them in sending order, so an early
// one waits here for its predecessors.
#ifndef MPIX_PROGRESS_UCX_LINK_H
#define MPIX_PROGRESS_UCX_LINK_H

#include <memory>
#include <mutex>
#include <vector>

#include "progress/link_core.h"
#include "ucx_worker.h"

namespace mpix::progress::ucx {

class UcxLink final : public LinkCore<Worker> {
 public:
  // world: each member's rank in MPI_COMM_WORLD; rank: this process's.
  UcxLink(Worker &w, const LinkParams &params, std::vector<int> world, int rank);
  ~UcxLink() override;
  UcxLink(const UcxLink &) = delete;
  UcxLink &operator=(const UcxLink &) = delete;

  int send_eager(int dest, const WireHeader &h, const void *payload, std::size_t n, Pending *done,
                 bool *pending) override;
  int pull(const Arrival &a, void *buf, int count, MPI_Datatype dtype, Pending *done) override;
  void discard(const Arrival &a) override;
  void matched(const Arrival &a) override;

  // From the worker's message handler: UCS_INPROGRESS keeps a rendezvous
  // descriptor (or UCX's copy of the data) for later.
  ucs_status_t receive(const Envelope &e, void *data, std::size_t length, bool rndv);

 private:
  Envelope envelope(int dest, const WireHeader &h);
  int rendezvous(int dest, const WireHeader &h, const void *src, std::size_t n, std::unique_ptr<char[]> owned,
                 Pending *done, bool *pending) override;
  void hand_up(const Envelope &e, const void *data, std::size_t length, bool rndv);

  // Arrivals ahead of their predecessors.
  struct Early {
    Envelope e;
    std::unique_ptr<char[]> data;  // eager payload copy
    std::size_t length = 0;
    void *desc = nullptr;          // rendezvous descriptor
    bool rndv = false;
  };
  InOrder<Early> in_order_;
};

// The link of a new communicator (collective over params.user; called
// with the engine lock held, released during the exchange). *out stays
// empty when a member is outside MPI_COMM_WORLD (another job's process):
// the caller falls back to the pmpi transport, as every member does.
int create_link(Worker &w, const LinkParams &params, EngineLock &lock, std::unique_ptr<Link> *out);

}  // namespace mpix::progress::ucx

#endif
