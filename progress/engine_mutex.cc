#include "engine_mutex.h"

#include <sched.h>
#include <time.h>

namespace mpix::progress {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// A holder lets go within a poll or a call (well under a microsecond), so
// a waiter spins first; one whose holder was descheduled (more threads than
// cores) yields its core to it, and past that naps, so that a thread
// blocked here for long costs its core little.
constexpr int kSpins = 256;
constexpr int kYields = 64;
constexpr long kNapNs = 20000;

}  // namespace

void EngineMutex::wait_and_lock() noexcept {
  for (int i = 0;; ++i) {
    if (try_lock()) return;
    if (i < kSpins) {
      cpu_relax();
    } else if (i < kSpins + kYields) {
      sched_yield();
    } else {
      const timespec nap{0, kNapNs};
      nanosleep(&nap, nullptr);
    }
  }
}

}  // namespace mpix::progress
