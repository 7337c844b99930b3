#include "engine_mutex.h"

#include <sched.h>
#include <time.h>

namespace mpix::progress {
namespace {

// The engine's relock() spins first (MPIX_LOCK_SPINS tries: a holder lets
// go within a poll or a call, well under a microsecond); a thread still
// waiting here has a holder that was descheduled (more threads than cores)
// or works for long: it yields its core, and past that naps, so that a
// thread blocked here for long costs its core little.
constexpr int kYields = 64;
constexpr long kNapNs = 20000;

}  // namespace

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
