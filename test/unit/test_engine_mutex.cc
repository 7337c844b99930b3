// The engine's test-and-set lock (progress/engine_mutex.h): mutual
// exclusion under contention from more threads than cores (an unguarded
// counter comes out exact and no two holders ever overlap), try_lock
// refusing while the lock is held, and a waiter that reaches the napping
// phase of its wait still getting the lock once it is let go. Under the
// TSan build the counter also proves the acquire/release ordering.
// The lock biased to the application's thread: exclusion between its
// plain-store acquisitions and mpix's threads' revocations (the critical
// section is a plain read-modify-write with a window between read and
// write, and a holder mark checked after it), a try that fails while the
// application is inside, and the bias earned back only after kRebiasAfter
// acquisitions in a row. Skipped, visibly, where membarrier is refused and
// under TSan (which would not see the asymmetric fence).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "progress/engine_mutex.h"

namespace {

using mpix::progress::EngineLock;
using mpix::progress::EngineMutex;

TEST(EngineMutex, ExcludesUnderContention) {
  EngineMutex m;
  long counter = 0;  // guarded by m only
  std::atomic<int> inside{0};
  std::atomic<bool> overlap{false};
  constexpr int kThreads = 8;
  constexpr int kRounds = 50000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        EngineLock lock(m);
        if (inside.fetch_add(1, std::memory_order_relaxed) != 0) overlap = true;
        ++counter;
        inside.fetch_sub(1, std::memory_order_relaxed);
      }
    });
  }
  for (auto &t : threads) t.join();
  EXPECT_FALSE(overlap.load());
  EXPECT_EQ(counter, static_cast<long>(kThreads) * kRounds);
}

TEST(EngineMutex, TryLockRefusesWhileHeld) {
  EngineMutex m;
  EngineLock held(m);
  bool got = true;
  std::thread([&] { got = m.try_lock(); }).join();
  EXPECT_FALSE(got);
  held.unlock();
  std::thread([&] {
    got = m.try_lock();
    if (got) m.unlock();
  }).join();
  EXPECT_TRUE(got);
  // try_to_lock as the engine's fast path uses it.
  EngineLock again(m, std::try_to_lock);
  EXPECT_TRUE(again.owns_lock());
}

TEST(EngineMutex, LongHoldReachesTheWaiterAfterItsNaps) {
  EngineMutex m;
  EngineLock held(m);
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    EngineLock lock(m);  // yields, then naps: the hold outlasts both
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load());
  held.unlock();
  waiter.join();
  EXPECT_TRUE(got.load());
}

// One application thread (this one) and mpix-like threads share a biased
// lock; a holder mark (relaxed: no fence that could hide a missing one)
// catches two holders at once.
class Biased : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!m.allow_bias(true)) GTEST_SKIP() << "skipped: lock bias unavailable (membarrier refused, or TSan)";
  }
  void TearDown() override { m.allow_bias(false); }
  // Work inside the lock: a counter bumped by a separated read and write.
  void critical(int who) {
    holder.store(who, std::memory_order_relaxed);
    const long seen = counter;
    for (int k = 0; k < 20; ++k) std::atomic_signal_fence(std::memory_order_seq_cst);
    counter = seen + 1;
    if (holder.load(std::memory_order_relaxed) != who) overlap.store(true, std::memory_order_relaxed);
  }
  // As the application would: kRebiasAfter acquisitions on the word first.
  void earn_bias() {
    for (std::uint32_t i = 0; i <= EngineMutex::kRebiasAfter; ++i) EngineLock lock(m);
  }
  EngineMutex m;
  long counter = 0;
  std::atomic<int> holder{0};
  std::atomic<bool> overlap{false};
};

TEST_F(Biased, ApplicationAndInternalThreadsExclude) {
  constexpr int kInternal = 3;
  constexpr int kInternalRounds = 400;
  constexpr long kAppRounds = 2000000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kInternal; ++t) {
    threads.emplace_back([&, t] {
      mpix::progress::mark_internal_thread();
      for (int i = 0; i < kInternalRounds; ++i) {
        {
          EngineLock lock(m);
          critical(t + 2);
        }
        // Mostly apart, so that the application earns the bias back in
        // between; sometimes back to back.
        if (i % 4 != 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  }
  for (long app = 0; app < kAppRounds; ++app) {
    EngineLock lock(m);
    critical(1);
  }
  for (auto &t : threads) t.join();
  EXPECT_FALSE(overlap.load());
  EXPECT_EQ(counter, kAppRounds + static_cast<long>(kInternal) * kInternalRounds);
  const EngineMutex::Stats s = m.stats();
  // The bias was used, taken away and earned back, many times each.
  EXPECT_GT(s.fast_takes, 0u);
  EXPECT_GT(s.revocations, 10u);
  EXPECT_GT(s.rebiases, 10u);
}

TEST_F(Biased, InternalTryFailsWhileApplicationIsInside) {
  earn_bias();
  const std::uint64_t fast0 = m.stats().fast_takes;
  EngineLock app(m);  // the fast path
  EXPECT_EQ(m.stats().fast_takes, fast0 + 1);
  bool got = true;
  std::thread([&] {
    mpix::progress::mark_internal_thread();
    got = m.try_lock();
    if (got) m.unlock();
  }).join();
  EXPECT_FALSE(got);
  EXPECT_EQ(m.stats().revocations, 1u);
  app.unlock();
  // The bias is gone: the internal thread gets the lock, and the
  // application's try then fails on the word instead of slipping in fast.
  std::atomic<bool> held{false}, release{false};
  std::thread internal([&] {
    mpix::progress::mark_internal_thread();
    EngineLock lock(m);
    held = true;
    while (!release) std::this_thread::yield();
  });
  while (!held) std::this_thread::yield();
  EXPECT_FALSE(m.try_lock());
  release = true;
  internal.join();
  EngineLock again(m);
  EXPECT_EQ(m.stats().fast_takes, fast0 + 1);  // on the word
  EXPECT_EQ(m.stats().revocations, 1u);
}

TEST_F(Biased, BiasComesBackOnlyAfterARunOfApplicationAcquisitions) {
  for (std::uint32_t i = 0; i < EngineMutex::kRebiasAfter; ++i) EngineLock lock(m);
  EXPECT_EQ(m.stats().rebiases, 1u);
  EXPECT_EQ(m.stats().fast_takes, 0u);
  { EngineLock lock(m); }
  EXPECT_EQ(m.stats().fast_takes, 1u);
  // An internal acquisition resets the run.
  std::thread([&] {
    mpix::progress::mark_internal_thread();
    EngineLock lock(m);
  }).join();
  for (std::uint32_t i = 0; i + 1 < EngineMutex::kRebiasAfter; ++i) EngineLock lock(m);
  EXPECT_EQ(m.stats().rebiases, 1u);
  { EngineLock lock(m); }
  EXPECT_EQ(m.stats().rebiases, 2u);
  EXPECT_EQ(m.stats().fast_takes, 1u);
  m.allow_bias(false);
  for (std::uint32_t i = 0; i < 2 * EngineMutex::kRebiasAfter; ++i) EngineLock lock(m);
  EXPECT_EQ(m.stats().fast_takes, 1u);
}

}  // namespace
