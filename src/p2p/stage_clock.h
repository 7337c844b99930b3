// Where a device-buffer message's host time goes, stage by stage: a
// profiling build only (configure with CPPFLAGS=-DMPIX_STAGE_CLOCK). The GPU
// machine has no perf or gdb, so the per-message path is timed from inside;
// the default build compiles every MPIX_STAGE to nothing. x86 only (the
// time stamp counter), and per thread: the thread that calls MPI_Finalize
// prints what it ran itself (a progress thread's share is not shown).
#ifndef MPIX_P2P_STAGE_CLOCK_H
#define MPIX_P2P_STAGE_CLOCK_H

#ifdef MPIX_STAGE_CLOCK
#include <x86intrin.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace mpix::p2p::stage_clock {

enum Stage {
  kProgressStep,   // one engine progress step (transports, GPU operations)
  kGpuProgress,    // polling every GPU operation in flight
  kArrived,        // an envelope handed up by the transport, matched or queued
  kDeliver,        // a matched GPU envelope turned into a receive operation
  kIpcAcquire,     // the peer allocation's mapping looked up
  kCopyPost,       // the copy handed to the resident kernel
  kPollIpc,        // one test of an IPC receive's copy
  kPollNotDone,    // (count only) tests that found the copy not done
  kComplete,       // a finished receive: release, reply, request finished
  kReply,          // the answer that frees the sender's buffer
  kSend,           // a device-buffer send (gpu_transmit)
  kStages
};
// In the order above.
inline const char *const kStageNames[kStages] = {"progress step", "gpu progress", "arrived",   "deliver",
                                                 "ipc acquire",   "copy post",    "poll ipc",  "poll not done",
                                                 "complete",      "reply",        "send"};

struct Totals {
  std::uint64_t cycles[kStages] = {};
  std::uint64_t calls[kStages] = {};
};

// Per thread: nothing is shared, so the clock itself costs no atomics.
inline Totals &totals() {
  static thread_local Totals t;
  return t;
}

class Scope {
 public:
  explicit Scope(Stage s) : s_(s), t0_(__rdtsc()) {}
  ~Scope() {
    Totals &t = totals();
    t.cycles[s_] += __rdtsc() - t0_;
    ++t.calls[s_];
  }
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;

 private:
  Stage s_;
  std::uint64_t t0_;
};

inline void count(Stage s) { ++totals().calls[s]; }

// One line per stage on stderr (calls, ns per call), at MPI_Finalize; the
// time stamp counter's rate taken against the steady clock over 20 ms.
inline void print(int rank) {
  const auto w0 = std::chrono::steady_clock::now();
  const std::uint64_t c0 = __rdtsc();
  while (std::chrono::steady_clock::now() - w0 < std::chrono::milliseconds(20)) {
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - w0).count();
  const double ns_per_cycle = ns / static_cast<double>(__rdtsc() - c0);
  const Totals &t = totals();
  for (int s = 0; s < kStages; ++s)
    std::fprintf(stderr, "[mpix stage] rank %d: %-14s calls %10llu  ns/call %8.1f  total ms %9.3f\n", rank,
                 kStageNames[s], static_cast<unsigned long long>(t.calls[s]),
                 t.calls[s] ? static_cast<double>(t.cycles[s]) * ns_per_cycle / static_cast<double>(t.calls[s]) : 0.0,
                 static_cast<double>(t.cycles[s]) * ns_per_cycle / 1e6);
  std::fflush(stderr);
}

}  // namespace mpix::p2p::stage_clock

#define MPIX_STAGE_CAT2(a, b) a##b
#define MPIX_STAGE_CAT(a, b) MPIX_STAGE_CAT2(a, b)
#define MPIX_STAGE(s) ::mpix::p2p::stage_clock::Scope MPIX_STAGE_CAT(mpix_stage_, __LINE__)(::mpix::p2p::stage_clock::s)
#define MPIX_STAGE_COUNT(s) ::mpix::p2p::stage_clock::count(::mpix::p2p::stage_clock::s)
#else
#define MPIX_STAGE(s) static_cast<void>(0)
#define MPIX_STAGE_COUNT(s) static_cast<void>(0)
#endif

#endif
