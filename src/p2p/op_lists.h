// Who owns the GPU operations in flight, and which of them a progress step
// looks at (gpu_path.cc; free of MPI and CUDA, so unit-tested alone).
//
// A step used to poll every operation: a receiver with a window of 64
// small device messages in flight tested 64 resident-kernel copies per
// step (each untaken test a lock and a clock read), a sender 64 sends
// that only wait for their answers, so a step cost O(in flight). At a
// window of 64 this was not what bounds the message rate (bench/RESULTS.md,
// fourteenth session: no change either way), but thousands in flight
// would pay it at every step. So an operation waits where its next event
// can be seen at O(1) per step:
//  - polled: every step (pipelines of chunks, copy-engine events);
//  - behind a queue's sequence number: copies one queue (a GPU's copy
//    kernel) finishes in order, so only the oldest is tested;
//  - until a deadline, in the order they were given (a send that may be
//    buffered after a wait): only the earliest is looked at;
//  - parked: nothing to poll until woken (a send that waits for its
//    answer, whose arrival wakes it).
// Each is owned here until it is finished, has no outstanding requests,
// and no list holds it.
#ifndef MPIX_SRC_P2P_OP_LISTS_H
#define MPIX_SRC_P2P_OP_LISTS_H

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace mpix::p2p {

// Bookkeeping an operation carries for OpLists (its base class).
struct OpLink {
  std::size_t owned_at = 0;   // index in the owner list
  std::size_t polled_at = 0;  // index in the polled list, while polled
  bool polled = false;
  bool queued = false;  // behind a sequence number or a deadline
};

// Op: derives from OpLink; has poll(), `finished` and `outstanding`.
template <class Op>
class OpLists {
 public:
  using Clock = std::chrono::steady_clock;

  std::size_t size() const { return owned_.size(); }

  // Polled at every step until finished.
  Op *adopt(std::unique_ptr<Op> op) {
    Op *p = own(std::move(op));
    poll_every_step(p);
    return p;
  }

  // Polled once ready(queue, seq) says so (gpu_progress's test: the copy
  // is done or failed), then every step until finished. A queue's ready()
  // must be monotonic in seq.
  Op *adopt_behind(std::unique_ptr<Op> op, const void *queue, std::uint64_t seq) {
    Op *p = own(std::move(op));
    Fifo *f = fifo_of(queue);
    f->items.push_back(Behind{seq, p});
    p->queued = true;
    return p;
  }

  // Polled from `due` on, or from wake(). Deadlines out of order (a
  // caller that took its time) are polled at once: a later one must not
  // wait behind it.
  Op *adopt_until(std::unique_ptr<Op> op, Clock::time_point due) {
    Op *p = own(std::move(op));
    if (timers_head_ < timers_.size() && due < timers_.back().due) {
      poll_every_step(p);
      return p;
    }
    timers_.push_back(Timer{due, p});
    p->queued = true;
    return p;
  }

  // Not polled until woken.
  Op *adopt_parked(std::unique_ptr<Op> op) { return own(std::move(op)); }

  // Polled at every step from now on (what it waited for came).
  void wake(Op *p) { poll_every_step(p); }

  // One progress step. ready(queue, seq): whether the queue's operation
  // numbered seq has something to see. Operations given during the step
  // (by a poll) are polled in it too; a nested call returns at once.
  template <class Ready>
  int progress(Clock::time_point now, Ready &&ready) {
    if (in_progress_) return 0;
    in_progress_ = true;
    int events = 0;
    for (std::size_t q = 0; q < fifos_.size(); ++q) {
      for (;;) {
        Fifo &f = fifos_[q];  // polls may add queues: no reference across them
        if (f.head == f.items.size()) break;
        const Behind b = f.items[f.head];
        if (!ready(f.queue, b.seq)) break;
        if (++f.head == f.items.size()) f.items.clear(), f.head = 0;
        b.op->queued = false;
        poll_every_step(b.op);
      }
    }
    while (timers_head_ < timers_.size()) {
      Op *p = timers_[timers_head_].op;
      if (!p->finished && now < timers_[timers_head_].due) break;
      if (++timers_head_ == timers_.size()) timers_.clear(), timers_head_ = 0;
      p->queued = false;
      if (p->finished) events += release_if_done(p);
      else poll_every_step(p);
    }
    for (std::size_t i = 0; i < polled_.size(); ++i) polled_[i]->poll();
    for (std::size_t i = 0; i < polled_.size();) {
      Op *p = polled_[i];
      if (p->finished && p->outstanding == 0) {
        stop_polling(p);  // moves the last one into i
        events += release_if_done(p);
      } else {
        ++i;
      }
    }
    in_progress_ = false;
    return events;
  }

  void clear() {
    fifos_.clear();
    timers_.clear();
    timers_head_ = 0;
    polled_.clear();
    owned_.clear();
  }

 private:
  struct Behind {
    std::uint64_t seq;
    Op *op;
  };
  struct Fifo {
    const void *queue = nullptr;
    std::vector<Behind> items;
    std::size_t head = 0;
  };
  struct Timer {
    Clock::time_point due;
    Op *op;
  };

  Op *own(std::unique_ptr<Op> op) {
    Op *p = op.get();
    p->owned_at = owned_.size();
    owned_.push_back(std::move(op));
    return p;
  }

  Fifo *fifo_of(const void *queue) {
    for (auto &f : fifos_)
      if (f.queue == queue) return &f;
    fifos_.push_back(Fifo{queue, {}, 0});
    return &fifos_.back();
  }

  void poll_every_step(Op *p) {
    if (p->polled) return;
    p->polled = true;
    p->polled_at = polled_.size();
    polled_.push_back(p);
  }

  void stop_polling(Op *p) {
    const std::size_t i = p->polled_at;
    polled_[i] = polled_.back();  // itself, when last
    polled_[i]->polled_at = i;
    polled_.pop_back();
    p->polled = false;
  }

  // 1 when it was finished and nothing held it (destroyed now).
  int release_if_done(Op *p) {
    if (!p->finished || p->outstanding != 0 || p->polled || p->queued) return 0;
    const std::size_t i = p->owned_at;
    std::unique_ptr<Op> gone = std::move(owned_[i]);
    if (i + 1 != owned_.size()) {
      owned_[i] = std::move(owned_.back());
      owned_[i]->owned_at = i;
    }
    owned_.pop_back();
    return 1;  // `gone` is destroyed here, after the lists no longer name it
  }

  std::vector<std::unique_ptr<Op>> owned_;
  std::vector<Op *> polled_;
  std::vector<Fifo> fifos_;
  std::vector<Timer> timers_;
  std::size_t timers_head_ = 0;
  bool in_progress_ = false;
};

}  // namespace mpix::p2p

#endif
