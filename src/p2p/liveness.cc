#include "liveness.h"

#include <atomic>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <system_error>
#include <thread>

#include "engine.h"
#include "gpu_path.h"
#include "progress/immortal.h"
#include "progress/transport.h"

namespace mpix::p2p {
namespace {

using Clock = std::chrono::steady_clock;

// While a receive waits: the longest a blocked peer waits for us. Idle: how
// often to look whether one waits now (a flag read, no MPI call).
constexpr auto kPendingPeriod = std::chrono::microseconds(200);
constexpr auto kIdlePeriod = std::chrono::milliseconds(1);
// While the application polls by itself the thread has nothing to do, and
// each wake-up takes the core from a rank that busy-polls on it (two ranks
// and their threads on two cores made 32 KiB - 2 MiB ping-pongs 10-30%
// slower): the period doubles up to this, and drops back to kPendingPeriod
// at the first period without an application poll (which is then at most
// this late to notice that the application blocked elsewhere).
constexpr auto kBusyPeriodMax = std::chrono::milliseconds(5);

struct State {
  std::mutex mutex;
  std::condition_variable cv;
  std::thread thread;
  bool stop = false;
  bool running = false;
};

State &state() {
  static Immortal<State> s;
  return s.get();
}

// Engine polls so far: a count, not a time, since every poll bumps it and
// reading the clock there cost a tenth of a small message's round trip
// (clock_gettime is slow on virtual machines). The thread compares it with
// what it saw one period earlier.
std::atomic<std::uint64_t> g_polls{0};

// Whether something may need this process's progress: a posted receive, a
// transport transfer, a GPU transfer.
bool work_pending() { return receives_pending() || progress::transport_busy() || gpu_busy(); }

void run() {
  progress::mark_internal_thread();
  State &s = state();
  std::unique_lock<std::mutex> lock(s.mutex);
  std::uint64_t last_polls = 0;
  std::chrono::microseconds busy_period = kPendingPeriod;
  for (;;) {
    // A matched transfer of the transport may need this process too (a
    // rendezvous pulled over a transport that emulates the get).
    const bool pending = work_pending();
    s.cv.wait_for(lock, pending ? busy_period : std::chrono::duration_cast<std::chrono::microseconds>(kIdlePeriod),
                  [&] { return s.stop; });
    if (s.stop) return;
    const std::uint64_t polls = g_polls.load(std::memory_order_relaxed);
    const bool polled = polls != last_polls;  // the application polls by itself
    last_polls = polls;
    busy_period = polled ? std::min<std::chrono::microseconds>(busy_period * 2, kBusyPeriodMax) : kPendingPeriod;
    if (polled) continue;
    const bool wanted = work_pending() || gpu_wants_idle_polls();
    lock.unlock();
    {
      // Never wait for the engine: whoever holds it is progressing.
      progress::EngineLock engine(engine_mutex(), std::try_to_lock);
      if (engine.owns_lock()) {
        if (wanted) {
          progress_poll();
        } else if (progress::transport_inbound_waiting() || lanes_inbound_waiting()) {
          // Nothing of ours waits, but messages wait in our rings: their
          // sender, of this node, may be waiting for room in them while we
          // block in a call mpix does not see (a flood of sends before a
          // barrier: the sender's MPI_Waitall, our MPI_Barrier). All that
          // is there, not a poll's share of it.
          progress_drain();
        }
        last_polls = g_polls.load(std::memory_order_relaxed);  // not the application's
      }
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

void liveness_note_poll() { g_polls.store(g_polls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

}  // namespace mpix::p2p
