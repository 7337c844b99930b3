// One handled communicator over libfabric (see ofi_fabric.h for the wire).
//
// As over UCX (ucx_link.h): every member gives the communicator a
// process-local link id, exchanged once when the link is made, so that a
// sender names the receiver's link in each envelope; envelopes carry a
// sequence number per (sender, receiver) pair and one that arrives ahead
// of its predecessors waits here for them. Providers order the messages of
// one endpoint pair (FI_ORDER_SAS) but not a send that waited for room
// against one that did not need to; MPI's matching needs sending order.
#ifndef MPIX_PROGRESS_OFI_LINK_H
#define MPIX_PROGRESS_OFI_LINK_H

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "progress/link_core.h"
#include "ofi_fabric.h"

namespace mpix::progress::ofi {

class OfiLink final : public LinkCore<Fabric> {
 public:
  // world: each member's rank in MPI_COMM_WORLD; rank: this process's.
  OfiLink(Fabric &f, const LinkParams &params, std::vector<int> world, int rank);
  ~OfiLink() override;
  OfiLink(const OfiLink &) = delete;
  OfiLink &operator=(const OfiLink &) = delete;

  int send_eager(int dest, const WireHeader &h, const void *payload, std::size_t n, Pending *done,
                 bool *pending) override;
  int pull(const Arrival &a, void *buf, int count, MPI_Datatype dtype, Pending *done) override;
  void discard(const Arrival &a) override;
  void matched(const Arrival &a) override;

  // From the fabric's poll: a message or rendezvous frame for this link.
  // Its payload is valid during the call.
  void receive(const Frame &f);

 private:
  Envelope envelope(int dest, const WireHeader &h, FrameKind kind);
  int rendezvous(int dest, const WireHeader &h, const void *src, std::size_t n, std::unique_ptr<char[]> owned,
                 Pending *done, bool *pending) override;
  void hand_up(const Envelope &e, const char *payload, std::size_t n);

  // Arrivals ahead of their predecessors.
  struct Early {
    Envelope e;
    std::unique_ptr<char[]> data;  // eager payload copy
    std::size_t length = 0;
  };
  InOrder<Early> in_order_;
  // Rendezvous arrivals handed up and not pulled or discarded yet, by
  // ticket: where their data is at the sender.
  struct Remote {
    int world;
    std::uint64_t addr, key, cookie;
  };
  std::unordered_map<std::uint64_t, Remote> rendezvous_in_;
  std::uint64_t next_ticket_ = 1;
};

// The link of a new communicator (collective over params.user; called
// with the engine lock held, released during the exchange). *out stays
// empty when a member is outside MPI_COMM_WORLD (another job's process):
// the caller falls back to the pmpi transport, as every member does.
int create_link(Fabric &f, const LinkParams &params, EngineLock &lock, std::unique_ptr<Link> *out);

}  // namespace mpix::progress::ofi

#endif
