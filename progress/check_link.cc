#include "check_link.h"

#include <atomic>

namespace mpix::progress {
namespace {
std::atomic<std::size_t> g_held{0};
}  // namespace

CheckLink::CheckLink(std::unique_ptr<Link> inner) : inner_(std::move(inner)) {}

CheckLink::~CheckLink() {
  // A link goes once its communicator has no operation left, so nothing
  // should be held; whatever is still goes out, and completions nobody
  // waits for any more are dropped.
  forward();
  note(-static_cast<std::ptrdiff_t>(completions_.size()));
}

void CheckLink::note(std::ptrdiff_t delta) {
  if (delta >= 0) g_held.fetch_add(static_cast<std::size_t>(delta), std::memory_order_relaxed);
  else g_held.fetch_sub(static_cast<std::size_t>(-delta), std::memory_order_relaxed);
}

std::size_t CheckLink::held_everywhere() { return g_held.load(std::memory_order_relaxed); }

void CheckLink::forward() {
  while (!held_.empty()) {
    const Held s = held_.front();
    held_.pop_front();
    // The payload is read from here on, long after the caller's call
    // returned. The completion goes along: a link must not wait for the
    // wire when a nonblocking call handed it a send (pmpi would, for a
    // send without one), and a synchronous send completes once matched.
    bool pending = false;
    const int rc = inner_->send_eager(s.dest, s.h, s.payload, s.n, s.done, &pending);
    if (rc == MPI_SUCCESS && pending) {
      note(-1);
      continue;
    }
    completions_.emplace_back(s.done, rc);  // finished already: run at poll(), still counted
  }
}

int CheckLink::send_eager(int dest, const WireHeader &h, const void *payload, std::size_t n, Pending *done,
                          bool *pending) {
  if (done == nullptr) {
    // Reusable on return: forwarded now, behind what is held.
    forward();
    return inner_->send_eager(dest, h, payload, n, nullptr, pending);
  }
  held_.push_back(Held{dest, h, payload, n, done});
  note(1);
  *pending = true;
  return MPI_SUCCESS;
}

int CheckLink::send_rendezvous(int dest, const WireHeader &h, const void *buf, int count, MPI_Datatype dtype,
                               SendMode mode, Pending *done, bool *pending) {
  forward();
  return inner_->send_rendezvous(dest, h, buf, count, dtype, mode, done, pending);
}

int CheckLink::pull(const Arrival &a, void *buf, int count, MPI_Datatype dtype, Pending *done) {
  forward();
  return inner_->pull(a, buf, count, dtype, done);
}

void CheckLink::discard(const Arrival &a) {
  forward();
  inner_->discard(a);
}

void CheckLink::matched(const Arrival &a) {
  forward();
  inner_->matched(a);
}

void CheckLink::consumed(int source, std::size_t credit) { inner_->consumed(source, credit); }

void CheckLink::want_more() {
  forward();
  inner_->want_more();
}

int CheckLink::poll() {
  forward();
  // A completion may start new operations on this link (held anew, run at
  // the next poll): run the ones taken now.
  std::vector<std::pair<Pending *, int>> now;
  now.swap(completions_);
  int events = static_cast<int>(now.size());
  note(-static_cast<std::ptrdiff_t>(now.size()));
  for (const auto &[done, rc] : now) {
    MPI_Status st{};
    st.MPI_ERROR = rc;
    done->on_complete(st);
  }
  return events + inner_->poll();
}

}  // namespace mpix::progress
