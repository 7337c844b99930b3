#include "engine_mutex.h"

#include <linux/membarrier.h>
#include <cstdlib>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sanitizers.h"

namespace mpix::progress {

namespace {

// The engine's relock() spins first (MPIX_LOCK_SPINS tries: a holder lets
// go within a poll or a call, well under a microsecond); a thread still
// waiting here has a holder that was descheduled (more threads than cores)
// or works for long: it yields its core, and past that naps, so that a
// thread blocked here for long costs its core little.
constexpr int kYields = 64;
constexpr long kNapNs = 20000;

long membarrier(int cmd) { return syscall(__NR_membarrier, cmd, 0, 0); }

// Registers the process for private expedited barriers, once; whether they
// can be used.
bool membarrier_ready() {
  static const bool ready = [] {
    const long supported = membarrier(MEMBARRIER_CMD_QUERY);
    if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  }();
  return ready;
}

}  // namespace

bool EngineMutex::took_word_biasable() noexcept {
  if (!engine_internal_thread()) return true;
  app_run_ = 0;
  if (biased_.load(std::memory_order_relaxed)) {
    biased_.store(false, std::memory_order_relaxed);
    // Every thread of the process passes a full barrier before this
    // returns: an application thread that stored "inside" before its
    // barrier is seen inside below; one that stores it after sees the bias
    // gone on its next load and takes the word, which is ours.
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
      // Registered, so this cannot fail. If it ever did: the global
      // barrier (slow: it waits for every CPU) gives the same guarantee,
      // and the bias stays off from now on. A lock that cannot exclude
      // must not go on.
      bias_allowed_.store(false, std::memory_order_relaxed);
      if (membarrier(MEMBARRIER_CMD_GLOBAL) != 0) std::abort();
    }
    ++revocations_;
  }
  // The application may still be inside from its fast path (here or from a
  // revocation an earlier try made): then this try fails, and the
  // application, back on the word, cannot come back in fast.
  if (!app_inside_.load(std::memory_order_acquire)) return true;
  held_.store(false, std::memory_order_release);
  return false;
}

bool EngineMutex::allow_bias(bool on) noexcept {
#ifdef MPIX_UNDER_TSAN
  on = false;
#endif
  if (on && !membarrier_ready()) on = false;
  // The application's side, neither on the fast path nor holding the word.
  for (int i = 0; held_.load(std::memory_order_relaxed) || held_.exchange(true, std::memory_order_acquire); ++i)
    if (i >= kYields) sched_yield();
  bias_allowed_.store(on, std::memory_order_relaxed);
  biased_.store(false, std::memory_order_relaxed);
  app_run_ = 0;
  held_.store(false, std::memory_order_release);
  return on;
}

void EngineMutex::wait_and_lock() noexcept {
  for (int i = 0;; ++i) {
    if (try_lock()) return;
    if (i < kYields) {
      sched_yield();
    } else {
      const timespec nap{0, kNapNs};
      nanosleep(&nap, nullptr);
    }
  }
}

}  // namespace mpix::progress
