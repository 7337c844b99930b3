// The point-to-point engine's lock (src/p2p/engine.h: engine_lock): taken
// by every intercepted call on a handled communicator, by the transports'
// callbacks' callers and by mpix's own threads, and nearly always free.
//
// A test-and-set lock: taking it is one atomic exchange and letting go one
// release store, where std::mutex's unlock is a second locked instruction
// (it must learn whether a sleeper needs a futex wake). The price is that a
// thread that finds it taken never sleeps in the kernel on it: after the
// engine's spin (relock, MPIX_LOCK_SPINS) it yields its core, then naps
// briefly (oversubscribed cores still progress).
//
// Biased to the application when it calls MPI from one thread at a time
// (below MPI_THREAD_MULTIPLE; allow_bias): the exchange is a full barrier,
// where a sender that streams small messages waited for the previous
// message's ring stores to drain (92% of make_send_request's own samples,
// twentieth session); without it a streaming sender's MPI_Isend took 1-4 ns
// less on the development VM, and 106 instead of 147 ns (medians of noisy
// rounds) on a 16-core host (bench/RESULTS.md, twenty-first session). Then the application's side takes
// the lock with a plain store and a load, and mpix's own threads (marked by
// mark_internal_thread: liveness, progress, idup workers) first revoke the
// bias: they clear it, make every thread of the process pass a full barrier
// (membarrier(2), private expedited), then wait until the application is
// out. Either the application's "inside" store reaches the revoker, or the
// application's next load of the bias sees it cleared (asymmetric Dekker, as
// in biased locking and RCU). The application earns the bias back after
// kRebiasAfter acquisitions in a row with no internal one between. Where
// membarrier is refused (old kernels, sandboxes) or under ThreadSanitizer
// (which does not model it), the lock is never biased.
#ifndef MPIX_PROGRESS_ENGINE_MUTEX_H
#define MPIX_PROGRESS_ENGINE_MUTEX_H

#include <atomic>
#include <cstdint>
#include <mutex>

namespace mpix::progress {

// Whether this thread is one of mpix's own (never the application's side
// of a biased lock). A function's static: an extern thread_local goes
// through a wrapper call per access (and UBSan misreads it).
inline bool &engine_internal_thread() noexcept {
  static thread_local bool internal __attribute__((tls_model("initial-exec"))) = false;
  return internal;
}
inline void mark_internal_thread() noexcept { engine_internal_thread() = true; }
// This thread on the internal side while it lives: for calls any thread may
// make whatever MPI's thread level (MPI_T has its own), which must never
// take the application's fast path beside the application.
class InternalSide {
 public:
  InternalSide() noexcept : was_(engine_internal_thread()) { engine_internal_thread() = true; }
  ~InternalSide() { engine_internal_thread() = was_; }
  InternalSide(const InternalSide &) = delete;
  InternalSide &operator=(const InternalSide &) = delete;

 private:
  bool was_;
};

class EngineMutex {
 public:
  // Application acquisitions in a row, with no internal one between, before
  // the bias comes back: a revocation costs the revoker a system call and
  // every running thread of the process an interrupt (microseconds), paid
  // at most once per this many cheap acquisitions.
  static constexpr std::uint32_t kRebiasAfter = 4096;

  struct Stats {
    std::uint64_t fast_takes = 0;   // the application's plain-store acquisitions
    std::uint64_t revocations = 0;  // bias taken away by an internal thread
    std::uint64_t rebiases = 0;     // bias earned back by the application
  };

  EngineMutex() = default;
  EngineMutex(const EngineMutex &) = delete;
  EngineMutex &operator=(const EngineMutex &) = delete;

  bool try_lock() noexcept {
    if (biased_.load(std::memory_order_relaxed) && !engine_internal_thread()) {
      app_inside_.store(true, std::memory_order_relaxed);
      // The compiler must not sink the store below the load; the hardware
      // may, which the revoker's membarrier covers.
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (biased_.load(std::memory_order_acquire)) {
        app_fast_ = true;
        ++fast_takes_;
        return true;
      }
      app_inside_.store(false, std::memory_order_release);
    }
    // Read first: a waiter's failed tries then share the line instead of
    // taking it from the holder.
    if (held_.load(std::memory_order_relaxed) || held_.exchange(true, std::memory_order_acquire)) return false;
    return !bias_allowed_.load(std::memory_order_relaxed) || took_word_biasable();
  }
  void lock() noexcept {
    if (!try_lock()) wait_and_lock();
  }
  void unlock() noexcept {
    if (app_fast_) {
      app_fast_ = false;
      app_inside_.store(false, std::memory_order_release);
      return;
    }
    if (bias_allowed_.load(std::memory_order_relaxed) && !engine_internal_thread() &&
        ++app_run_ >= kRebiasAfter) {
      app_run_ = 0;
      ++rebiases_;
      biased_.store(true, std::memory_order_relaxed);  // published by the release below
    }
    held_.store(false, std::memory_order_release);
  }

  // Called by the application's thread, not holding the lock: on at
  // MPI_Init below MPI_THREAD_MULTIPLE, off at MPI_Finalize. Returns whether
  // the bias is allowed now (false where membarrier is refused).
  bool allow_bias(bool on) noexcept;
  // Read by the application's thread (its own counts) or under the lock.
  Stats stats() const noexcept { return Stats{fast_takes_, revocations_, rebiases_}; }

 private:
  // The word is ours and the bias may be allowed: an internal thread
  // revokes it and waits out the application; the application counts
  // towards earning it back.
  bool took_word_biasable() noexcept;
  void wait_and_lock() noexcept;

  std::atomic<bool> held_{false};
  std::atomic<bool> bias_allowed_{false};
  std::atomic<bool> biased_{false};
  std::atomic<bool> app_inside_{false};
  bool app_fast_ = false;      // the holder is the application on the fast path
  std::uint32_t app_run_ = 0;  // under the word
  std::uint64_t fast_takes_ = 0;
  std::uint64_t revocations_ = 0;
  std::uint64_t rebiases_ = 0;
};

using EngineLock = std::unique_lock<EngineMutex>;

}  // namespace mpix::progress

#endif
