// OpLists (src/p2p/op_lists.h): each kind of wait polls an operation only
// when its event can have come, a step costs O(1) for what waits behind a
// copy or a deadline, and every operation is freed exactly once, after it
// finished with nothing outstanding and no list holding it. Checked case
// by case and against a model under random events.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "src/p2p/op_lists.h"

namespace {

using mpix::p2p::OpLink;
using mpix::p2p::OpLists;
using Clock = std::chrono::steady_clock;

struct World {
  std::set<int> alive;
  std::map<int, int> polls;
  std::map<int, int> freed;
  bool strict = false;  // every free must be of a finished, idle op
};

struct FakeOp : OpLink {
  FakeOp(World &w, int id) : w(w), id(id) { w.alive.insert(id); }
  ~FakeOp() {
    if (w.strict) {
      EXPECT_TRUE(finished && outstanding == 0) << "op " << id << " freed while in use";
    }
    w.alive.erase(id);
    ++w.freed[id];
  }
  void poll() {
    ++w.polls[id];
    if (finish_on_poll) finished = true;
    if (on_poll) on_poll();
  }
  World &w;
  int id;
  bool finished = false;
  int outstanding = 0;
  bool finish_on_poll = false;
  void (*on_poll)() = nullptr;
};

std::unique_ptr<FakeOp> make(World &w, int id, bool finish_on_poll = false) {
  auto op = std::make_unique<FakeOp>(w, id);
  op->finish_on_poll = finish_on_poll;
  return op;
}

const int kQueueA = 0;

TEST(OpLists, PolledEveryStepUntilFinishedThenFreed) {
  World w;
  OpLists<FakeOp> l;
  FakeOp *op = l.adopt(make(w, 1));
  auto never = [](const void *, std::uint64_t) { return false; };
  for (int i = 0; i < 3; ++i) EXPECT_EQ(l.progress(Clock::now(), never), 0);
  EXPECT_EQ(w.polls[1], 3);
  op->finished = true;
  op->outstanding = 1;  // a request still outstanding keeps it
  EXPECT_EQ(l.progress(Clock::now(), never), 0);
  EXPECT_EQ(w.alive.count(1), 1u);
  op->outstanding = 0;
  EXPECT_EQ(l.progress(Clock::now(), never), 1);
  EXPECT_EQ(w.alive.count(1), 0u);
  EXPECT_EQ(w.freed[1], 1);
  EXPECT_EQ(l.size(), 0u);
}

TEST(OpLists, BehindACopyOnlyTheOldestIsTested) {
  World w;
  OpLists<FakeOp> l;
  for (int i = 1; i <= 64; ++i) l.adopt_behind(make(w, i, true), &kQueueA, static_cast<std::uint64_t>(i));
  std::uint64_t done = 0;
  int tests = 0;
  auto ready = [&](const void *q, std::uint64_t seq) {
    EXPECT_EQ(q, &kQueueA);
    ++tests;
    return seq <= done;
  };
  for (int step = 0; step < 10; ++step) l.progress(Clock::now(), ready);
  EXPECT_EQ(tests, 10) << "one test per step while nothing is done";
  EXPECT_TRUE(w.polls.empty()) << "nothing polled before its copy";
  done = 40;
  tests = 0;
  EXPECT_EQ(l.progress(Clock::now(), ready), 40);
  EXPECT_EQ(tests, 41) << "the 40 done and the first not";
  for (int i = 1; i <= 40; ++i) EXPECT_EQ(w.polls[i], 1) << i;
  EXPECT_EQ(w.polls.count(41), 0u);
  done = 64;
  EXPECT_EQ(l.progress(Clock::now(), ready), 24);
  EXPECT_EQ(l.size(), 0u);
  for (int i = 1; i <= 64; ++i) EXPECT_EQ(w.freed[i], 1);
}

TEST(OpLists, QueuesAreIndependent) {
  World w;
  OpLists<FakeOp> l;
  static const int qa = 0, qb = 0;
  l.adopt_behind(make(w, 1, true), &qa, 5);
  l.adopt_behind(make(w, 2, true), &qb, 5);
  auto only_b = [&](const void *q, std::uint64_t) { return q == &qb; };
  EXPECT_EQ(l.progress(Clock::now(), only_b), 1);
  EXPECT_EQ(w.alive.count(1), 1u);
  EXPECT_EQ(w.alive.count(2), 0u);
}

TEST(OpLists, UntilADeadlineOrWoken) {
  World w;
  OpLists<FakeOp> l;
  const auto t0 = Clock::now();
  auto never = [](const void *, std::uint64_t) { return false; };
  FakeOp *a = l.adopt_until(make(w, 1), t0 + std::chrono::microseconds(10));
  FakeOp *b = l.adopt_until(make(w, 2), t0 + std::chrono::microseconds(20));
  l.progress(t0 + std::chrono::microseconds(5), never);
  EXPECT_TRUE(w.polls.empty());
  l.progress(t0 + std::chrono::microseconds(15), never);
  EXPECT_EQ(w.polls[1], 1);
  EXPECT_EQ(w.polls.count(2), 0u);
  // b's answer comes before its deadline: woken, finished, freed.
  l.wake(b);
  b->finish_on_poll = true;
  EXPECT_EQ(l.progress(t0 + std::chrono::microseconds(16), never), 0) << "still in the deadline list";
  EXPECT_EQ(w.polls[2], 1);
  EXPECT_EQ(l.progress(t0 + std::chrono::microseconds(17), never), 1) << "finished: leaves it early";
  EXPECT_EQ(w.alive.count(2), 0u);
  a->finished = true;
  EXPECT_EQ(l.progress(t0 + std::chrono::microseconds(30), never), 1);
  EXPECT_EQ(l.size(), 0u);
}

TEST(OpLists, ADeadlineOutOfOrderIsPolledAtOnce) {
  World w;
  OpLists<FakeOp> l;
  const auto t0 = Clock::now();
  auto never = [](const void *, std::uint64_t) { return false; };
  l.adopt_until(make(w, 1), t0 + std::chrono::seconds(100));
  l.adopt_until(make(w, 2), t0 + std::chrono::microseconds(1));
  l.progress(t0 + std::chrono::microseconds(2), never);
  EXPECT_EQ(w.polls[2], 1) << "not kept behind the later deadline";
  EXPECT_EQ(w.polls.count(1), 0u);
}

TEST(OpLists, ParkedUntilWoken) {
  World w;
  OpLists<FakeOp> l;
  FakeOp *op = l.adopt_parked(make(w, 1));
  auto never = [](const void *, std::uint64_t) { return false; };
  for (int i = 0; i < 5; ++i) l.progress(Clock::now(), never);
  EXPECT_TRUE(w.polls.empty());
  op->finished = true;  // completed by its answer, outside a poll
  l.wake(op);
  EXPECT_EQ(l.progress(Clock::now(), never), 1);
  EXPECT_EQ(w.freed[1], 1);
}

// An operation adopted by a poll is polled in the same step; a nested
// progress call (a poll that progresses) does nothing.
OpLists<FakeOp> *g_lists = nullptr;
World *g_world = nullptr;
void adopt_another() { g_lists->adopt(make(*g_world, 99, true)); }
void nested() {
  EXPECT_EQ(g_lists->progress(Clock::now(), [](const void *, std::uint64_t) { return true; }), 0);
}

TEST(OpLists, AdoptedDuringAStepIsPolledInIt) {
  World w;
  OpLists<FakeOp> l;
  g_lists = &l;
  g_world = &w;
  FakeOp *op = l.adopt(make(w, 1, true));
  op->on_poll = adopt_another;
  auto never = [](const void *, std::uint64_t) { return false; };
  EXPECT_EQ(l.progress(Clock::now(), never), 2);
  EXPECT_EQ(w.polls[99], 1);
  EXPECT_EQ(l.size(), 0u);
  FakeOp *n = l.adopt(make(w, 2, true));
  n->on_poll = nested;
  EXPECT_EQ(l.progress(Clock::now(), never), 1);
}

// Random events against a model: no operation polled while its wait
// holds, none freed twice or while held, none leaked; per step the
// copy queues are tested at most once more than they release.
TEST(OpLists, RandomEventsAgainstAModel) {
  std::mt19937_64 rng(20261129);
  for (int round = 0; round < 50; ++round) {
    World w;
    w.strict = true;
    OpLists<FakeOp> l;
    static const int queues[3] = {0, 0, 0};
    struct Model {
      int kind;  // 0 polled, 1 behind, 2 until, 3 parked
      FakeOp *op;
      int queue;
      std::uint64_t seq;
      Clock::time_point due;
      bool woken;
      bool in_fifo;
    };
    std::map<int, Model> model;
    std::uint64_t next_seq[3] = {1, 1, 1}, done[3] = {0, 0, 0};
    auto t = Clock::time_point{} + std::chrono::seconds(1);
    auto last_due = t;
    int id = 0;
    for (int step = 0; step < 400; ++step) {
      for (int k = static_cast<int>(rng() % 4); k > 0; --k) {
        const int kind = static_cast<int>(rng() % 4);
        Model m{kind, nullptr, 0, 0, {}, false, kind == 1};
        auto op = make(w, ++id);
        if (kind == 0) {
          m.op = l.adopt(std::move(op));
        } else if (kind == 1) {
          m.queue = static_cast<int>(rng() % 3);
          m.seq = next_seq[m.queue]++;
          m.op = l.adopt_behind(std::move(op), &queues[m.queue], m.seq);
        } else if (kind == 2) {
          m.due = last_due = std::max(last_due, t + std::chrono::microseconds(rng() % 50));
          m.op = l.adopt_until(std::move(op), m.due);
        } else {
          m.op = l.adopt_parked(std::move(op));
        }
        model[id] = m;
      }
      // Outside events: copies finish, answers wake, operations finish.
      for (int q = 0; q < 3; ++q)
        if (rng() % 3 == 0) done[q] = std::min(next_seq[q] - 1, done[q] + rng() % 8);
      for (auto &[i, m] : model) {
        if (rng() % 10 == 0 && !m.woken) {
          m.woken = true;
          l.wake(m.op);
        }
        if (rng() % 6 == 0) m.op->finished = true;
        if (rng() % 20 == 0) m.op->outstanding = m.op->outstanding ? 0 : 1;
      }
      t += std::chrono::microseconds(rng() % 10);
      int tests = 0, leaving = 0;
      for (auto &[i, m] : model)
        if (m.in_fifo && m.seq <= done[m.queue]) ++leaving, m.in_fifo = false;
      const std::map<int, int> before = w.polls;
      const int events = l.progress(t, [&](const void *q, std::uint64_t seq) {
        ++tests;
        return seq <= done[static_cast<const int *>(q) - queues];
      });
      // Who could be polled this step.
      std::set<int> pollable;
      for (auto &[i, m] : model) {
        const bool may = m.kind == 0 || m.woken || (m.kind == 1 && m.seq <= done[m.queue]) ||
                         (m.kind == 2 && m.due <= t);
        if (may) pollable.insert(i);
      }
      for (auto &[i, n] : w.polls) {
        const auto it = before.find(i);
        if (n != (it == before.end() ? 0 : it->second)) {
          ASSERT_TRUE(pollable.count(i)) << "op " << i << " polled while waiting";
          // Once allowed, stays allowed: remember it.
          model[i].kind = 0;
        }
      }
      int released = 0;
      for (auto it = model.begin(); it != model.end();) {
        if (w.alive.count(it->first) == 0) {
          it = model.erase(it);
          ++released;
        } else {
          ++it;
        }
      }
      EXPECT_EQ(events, released);
      EXPECT_LE(tests, leaving + 3) << "one test per queue beyond those that leave it";
    }
    // Drain: every copy done, every op woken and finished.
    for (int q = 0; q < 3; ++q) done[q] = next_seq[q];
    for (auto &[i, m] : model) {
      m.op->finished = true;
      m.op->outstanding = 0;
      l.wake(m.op);
    }
    l.progress(t + std::chrono::seconds(10), [](const void *, std::uint64_t) { return true; });
    EXPECT_EQ(l.size(), 0u);
    EXPECT_TRUE(w.alive.empty());
    for (auto &[i, n] : w.freed) EXPECT_EQ(n, 1) << "op " << i;
    EXPECT_EQ(static_cast<int>(w.freed.size()), id);
  }
}

}  // namespace
