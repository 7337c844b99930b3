// The point-to-point engine's lock (src/p2p/engine.h: engine_lock): taken
// by every intercepted call on a handled communicator, by the transports'
// callbacks' callers and by mpix's own threads, and nearly always free.
// A test-and-set lock: taking it is one atomic exchange and letting go one
// release store, where std::mutex's unlock is a second locked instruction
// (it must learn whether a sleeper needs a futex wake). The price is that a
// thread that finds it taken never sleeps in the kernel on it: after the
// engine's spin (relock, MPIX_LOCK_SPINS) it yields its core, then naps
// briefly (oversubscribed cores still progress).
#ifndef MPIX_PROGRESS_ENGINE_MUTEX_H
#define MPIX_PROGRESS_ENGINE_MUTEX_H

#include <atomic>
#include <mutex>

namespace mpix::progress {

class EngineMutex {
 public:
  EngineMutex() = default;
  EngineMutex(const EngineMutex &) = delete;
  EngineMutex &operator=(const EngineMutex &) = delete;

  bool try_lock() noexcept {
    // Read first: a waiter's failed tries then share the line instead of
    // taking it from the holder.
    return !held_.load(std::memory_order_relaxed) && !held_.exchange(true, std::memory_order_acquire);
  }
  void lock() noexcept {
    if (!try_lock()) wait_and_lock();
  }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }

 private:
  void wait_and_lock() noexcept;
  std::atomic<bool> held_{false};
};

using EngineLock = std::unique_lock<EngineMutex>;

}  // namespace mpix::progress

#endif
