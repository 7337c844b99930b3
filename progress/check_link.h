// A link that holds its callers to the payload contract of transport.h
// (MPIX_LINK_CHECK=defer; tests). It wraps the transport's link and keeps
// every eager send handed over with a completion, forwarding it (and so
// letting the link underneath read its payload) only at the next poll, or
// before any other operation of the link (which keeps the order of
// everything sent). The completion comes from the link underneath, or at
// the next poll where that one finished the send at once. A caller that reuses or frees such a payload
// before its completion then delivers wrong bytes on every run, where the
// real transports do so only when their wire is busy (issue 24: the GPU
// path's one bounce buffer behind thousands of queued sends).
//
// Free of MPI calls and of any transport, so that a unit test drives it
// over a fake link (test/unit/test_check_link.cc).
#ifndef MPIX_PROGRESS_CHECK_LINK_H
#define MPIX_PROGRESS_CHECK_LINK_H

#include <cstddef>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "transport.h"

namespace mpix::progress {

class CheckLink final : public Link {
 public:
  explicit CheckLink(std::unique_ptr<Link> inner);
  ~CheckLink() override;

  int send_eager(int dest, const WireHeader &h, const void *payload, std::size_t n, Pending *done,
                 bool *pending) override;
  int send_rendezvous(int dest, const WireHeader &h, const void *buf, int count, MPI_Datatype dtype, SendMode mode,
                      Pending *done, bool *pending) override;
  int pull(const Arrival &a, void *buf, int count, MPI_Datatype dtype, Pending *done) override;
  void discard(const Arrival &a) override;
  void matched(const Arrival &a) override;
  void consumed(int source, std::size_t credit) override;
  void want_more() override;
  bool eager_sync() const override { return inner_->eager_sync(); }
  // Forwards what it holds, runs the completions of what it forwarded,
  // then polls the link underneath.
  int poll() override;

  // Sends held or completions not yet run, over every checking link of the
  // process: each needs a poll (the liveness thread keeps polling while
  // there are, and MPI_Finalize's drain counts them as local work).
  static std::size_t held_everywhere();

 private:
  struct Held {
    int dest;
    WireHeader h;
    const void *payload;  // read only when forwarded
    std::size_t n;
    Pending *done;
  };
  // Forwards every held send, in order; their completions wait for poll().
  void forward();
  void note(std::ptrdiff_t delta);

  std::unique_ptr<Link> inner_;
  std::deque<Held> held_;
  std::vector<std::pair<Pending *, int>> completions_;  // finished when forwarded: done, error
};

}  // namespace mpix::progress

#endif
