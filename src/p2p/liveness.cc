#include "liveness.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>

#include "engine.h"
#include "progress/transport.h"

namespace mpix::p2p {
namespace {

using Clock = std::chrono::steady_clock;

// While a receive waits: the longest a blocked peer waits for us. Idle: how
// often to look whether one waits now (a flag read, no MPI call).
constexpr auto kPendingPeriod = std::chrono::microseconds(200);
constexpr auto kIdlePeriod = std::chrono::milliseconds(1);

struct State {
  std::mutex mutex;
  std::condition_variable cv;
  std::thread thread;
  bool stop = false;
  bool running = false;
};

State &state() {
  static State s;
  return s;
}

std::atomic<Clock::rep> g_last_poll{0};

Clock::rep now_ticks() { return Clock::now().time_since_epoch().count(); }

void run() {
  State &s = state();
  std::unique_lock<std::mutex> lock(s.mutex);
  for (;;) {
    // A matched transfer of the transport may need this process too (a
    // rendezvous pulled over a transport that emulates the get).
    const bool pending = receives_pending() || progress::transport_busy();
    s.cv.wait_for(lock, pending ? std::chrono::duration_cast<std::chrono::microseconds>(kPendingPeriod)
                                : std::chrono::duration_cast<std::chrono::microseconds>(kIdlePeriod),
                  [&] { return s.stop; });
    if (s.stop) return;
    if (!receives_pending() && !progress::transport_busy()) continue;
    const auto since = Clock::duration(now_ticks() - g_last_poll.load(std::memory_order_relaxed));
    if (since < kPendingPeriod) continue;  // the application polls by itself
    lock.unlock();
    {
      // Never wait for the engine: whoever holds it is progressing.
      std::unique_lock<std::mutex> engine(engine_mutex(), std::try_to_lock);
      if (engine.owns_lock()) progress_poll();
    }
    lock.lock();
  }
}

}  // namespace

bool liveness_start() {
  State &s = state();
  std::lock_guard<std::mutex> g(s.mutex);
  if (s.running) return true;
  s.stop = false;
  try {
    s.thread = std::thread(run);
  } catch (const std::system_error &) {
    return false;
  }
  s.running = true;
  return true;
}

void liveness_stop() {
  State &s = state();
  {
    std::lock_guard<std::mutex> g(s.mutex);
    if (!s.running) return;
    s.stop = true;
  }
  s.cv.notify_one();
  s.thread.join();
  std::lock_guard<std::mutex> g(s.mutex);
  s.running = false;
}

void liveness_note_poll() { g_last_poll.store(now_ticks(), std::memory_order_relaxed); }

}  // namespace mpix::p2p
