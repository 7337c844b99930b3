// The pmpi transport: envelopes through the MPI library underneath.
//
// Each handled communicator has two shadow communicators (made by the
// engine). Envelopes (with eager payloads) go on the control shadow under
// tag 0 into landing receives (MPI_ANY_SOURCE) the link keeps posted;
// rendezvous payloads go on the data shadow under the envelope's data_tag,
// left in the MPI library (its own rendezvous, no copy here) until the
// receiver matched and posts the receive into the user's buffer.
//
// Back-pressure: once more than the unexpected limit of arrived payloads is
// held by the engine and no receive waits, landing receives are not
// reposted, so new messages stay in the MPI library's queue (and its flow
// control) until the engine consumed half of it or a receive or probe
// wants more.
#ifndef MPIX_PROGRESS_PMPI_LINK_H
#define MPIX_PROGRESS_PMPI_LINK_H

#include <deque>
#include <memory>
#include <vector>

#include "progress/transport.h"

namespace mpix::progress {

class PmpiLink final : public Link {
 public:
  PmpiLink(const LinkParams &params, const TransportConfig &config);
  ~PmpiLink() override;
  PmpiLink(const PmpiLink &) = delete;
  PmpiLink &operator=(const PmpiLink &) = delete;

  int send_eager(int dest, const WireHeader &h, const void *payload, std::size_t n, Pending *done,
                 bool *pending) override;
  int send_rendezvous(int dest, const WireHeader &h, const void *buf, int count, MPI_Datatype dtype, SendMode mode,
                      Pending *done, bool *pending) override;
  int pull(const Arrival &a, void *buf, int count, MPI_Datatype dtype, Pending *done) override;
  void discard(const Arrival &) override {}
  void matched(const Arrival &) override {}
  void consumed(int source, std::size_t credit) override;
  void want_more() override;
  bool eager_sync() const override { return false; }
  // Takes the landing receives that completed, in posting order. Only the
  // oldest one needs testing: MPI fills ANY_SOURCE receives in the order
  // they were posted, and handing them up in that order keeps each
  // sender's messages in sending order even when a later slot completes
  // first.
  int poll() override;

  // Envelopes sent and landed by every pmpi link of this process
  // (transport_counts; rendezvous payloads move inside the MPI library).
  static TransportCounts counts();
  // Eager and rendezvous envelopes sent and envelopes landed, counted like
  // the UCX transport's so that statistics and MPI_T read the same on both.
  static TransportStats stats();

 private:
  struct Landing {
    std::unique_ptr<char[]> buffer;
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Status status{};
  };
  void post(Landing *slot);
  void unpark();

  LinkParams params_;
  std::size_t slot_bytes_;
  std::size_t limit_;
  std::vector<std::unique_ptr<Landing>> slots_;
  std::deque<Landing *> posted_order_;
  std::vector<Landing *> parked_;  // not reposted: back-pressure
  std::size_t held_ = 0;           // credit of arrivals the engine still holds
  std::vector<char> scratch_;      // blocking eager sends: envelope + payload
  int self_ = -1;                  // this process's rank in the shadows
};

}  // namespace mpix::progress

#endif
