#include "thread.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "engine_mutex.h"
#include "immortal.h"

namespace mpix::progress {
namespace {

using Clock = std::chrono::steady_clock;

// Right after activity the next event (a stream reaching its trigger) is
// usually microseconds away: spin. Then yield, then sleep ever longer, so a
// long kernel ahead of the trigger costs a fraction of a core, not a core.
constexpr auto kSpin = std::chrono::microseconds(200);
constexpr auto kYield = std::chrono::milliseconds(2);
constexpr auto kMaxSleep = std::chrono::microseconds(200);

struct State {
  std::mutex mutex;                // guards everything below
  std::condition_variable cv;      // the parked thread waits here
  std::mutex poll_mutex;           // held for a pass; detach waits on it
  std::vector<Poller *> pollers;
  std::thread thread;
  std::uint64_t epoch = 0;         // bumped by every wake
  bool stop = false;
  bool running = false;
  bool parked = false;
};

State &state() {
  static Immortal<State> s;
  return s.get();
}

void run() {
  mark_internal_thread();
  State &s = state();
  Clock::time_point last_activity = Clock::now();
  auto sleep_for = std::chrono::microseconds(1);
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::lock_guard<std::mutex> g(s.mutex);
      if (s.stop) return;
      if (s.epoch != seen) {
        seen = s.epoch;
        last_activity = Clock::now();
        sleep_for = std::chrono::microseconds(1);
      }
    }
    int moved = 0;
    bool idle = true;
    {
      std::lock_guard<std::mutex> pass(s.poll_mutex);
      // Pollers are attached and detached under both mutexes.
      for (Poller *p : s.pollers) {
        moved += p->poll();
        idle = idle && p->idle();
      }
    }
    if (moved > 0) {
      last_activity = Clock::now();
      sleep_for = std::chrono::microseconds(1);
      continue;
    }
    if (idle) {
      // Park until new work; a wake between our idle() check and the wait
      // is seen through the epoch, so it is never lost.
      std::unique_lock<std::mutex> lock(s.mutex);
      s.parked = true;
      s.cv.wait(lock, [&] { return s.stop || s.epoch != seen; });
      s.parked = false;
      continue;
    }
    const auto quiet = Clock::now() - last_activity;
    if (quiet < kSpin) continue;
    if (quiet < kYield) {
      sched_yield();
      continue;
    }
    std::unique_lock<std::mutex> lock(s.mutex);
    s.cv.wait_for(lock, sleep_for, [&] { return s.stop || s.epoch != seen; });
    sleep_for = std::min(sleep_for * 2, kMaxSleep);
  }
}

}  // namespace

bool thread_attach(Poller *p) {
  State &s = state();
  std::lock_guard<std::mutex> pass(s.poll_mutex);
  std::lock_guard<std::mutex> g(s.mutex);
  s.pollers.push_back(p);
  ++s.epoch;
  if (s.running) {
    s.cv.notify_one();
    return true;
  }
  s.stop = false;
  try {
    s.thread = std::thread(run);
  } catch (const std::system_error &) {
    s.pollers.pop_back();
    return false;
  }
  s.running = true;
  return true;
}

void thread_detach(Poller *p) {
  State &s = state();
  std::lock_guard<std::mutex> pass(s.poll_mutex);
  std::lock_guard<std::mutex> g(s.mutex);
  s.pollers.erase(std::remove(s.pollers.begin(), s.pollers.end(), p), s.pollers.end());
}

void thread_wake() {
  State &s = state();
  std::lock_guard<std::mutex> g(s.mutex);
  ++s.epoch;
  if (s.parked) s.cv.notify_one();
}

void thread_stop() {
  State &s = state();
  {
    std::lock_guard<std::mutex> g(s.mutex);
    if (!s.running) return;
    s.stop = true;
    s.cv.notify_one();
  }
  s.thread.join();
  std::lock_guard<std::mutex> g(s.mutex);
  s.running = false;
}

}  // namespace mpix::progress
