// The host ranges' heap check under UCX's memory hooks (a process with the
// ucx transport has them). UCX replaces sbrk: its sbrk(0) sets the break
// to the value last recorded, a write. A check that called sbrk(0) raced
// another thread growing the heap and moved the break back under it (the
// GPU machine's host-driven stream tests crashed so). The check must only
// read the break: here one thread grows the heap through the hooked sbrk,
// touching every new page, while another thread keeps asking about heap
// pointers; the heap must end where the grower put it, every page mapped.
// Its own program, without AddressSanitizer (which intercepts the memory
// calls UCX patches).
#include <gtest/gtest.h>
#include <ucm/api/ucm.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "device/memtype.h"
#include "progress/sanitizers.h"

namespace {

namespace cu = mpix::device::cu;

std::atomic<long> g_driver_calls{0};

// A driver for which everything is host memory (counts its calls).
int fake_attr(void *, int, unsigned long long) {
  g_driver_calls.fetch_add(1, std::memory_order_relaxed);
  return 1;
}
int fake_attrs(unsigned, int *, void **, unsigned long long) {
  g_driver_calls.fetch_add(1, std::memory_order_relaxed);
  return cu::kSuccess;
}
const mpix::device::DriverApi kFake{fake_attr, fake_attrs};

void on_event(ucm_event_type_t, ucm_event_t *, void *) {}

}  // namespace

TEST(HostRangesUnderUcxHooks, AHeapGrowingInAnotherThreadStaysMapped) {
#ifdef MPIX_UNDER_TSAN
  GTEST_SKIP() << "skipped: under ThreadSanitizer (a thread's exit crashes in UCX's replacement of madvise, "
                  "inside TSan's rwlock interceptor)";
#endif
  // Asking for memory-map events makes UCX install its replacements of
  // mmap, munmap, brk, sbrk and the rest, as its registration cache does.
  if (const ucs_status_t st = ucm_set_event_handler(UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED, 0, on_event, nullptr); st != UCS_OK)
    GTEST_SKIP() << "skipped: UCX memory hooks unavailable (status " << st << ")";
  mpix::device::memtype_set_driver_for_testing(&kFake);
  mpix::device::memtype_host_ranges(true);

  constexpr long kPage = 4096, kPages = 20000;
  // A page of heap for the querier to ask about, grown after the ranges
  // were taken: the heap check (the one that reads the break) takes it
  // even where the heap was empty before (AddressSanitizer's malloc).
  char *const asked_about = static_cast<char *>(sbrk(kPage));
  ASSERT_NE(asked_about, reinterpret_cast<char *>(-1));
  char *const start = asked_about + kPage;
  ASSERT_EQ(static_cast<char *>(sbrk(0)), start);
  std::atomic<bool> stop{false};
  std::atomic<long> asked{0};
  std::thread querier([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      EXPECT_EQ(mpix::device::device_of(asked_about), -1);
      asked.fetch_add(1, std::memory_order_relaxed);
    }
  });
  while (asked.load(std::memory_order_relaxed) == 0) std::this_thread::yield();
  char *expected = start;
  long moved_at = -1;
  for (long i = 0; i < kPages && moved_at < 0; ++i) {
    char *p = static_cast<char *>(sbrk(kPage));
    if (p != expected) {
      moved_at = i;
      break;
    }
    p[0] = 1;  // faults if the page was unmapped again
    p[kPage - 1] = 1;
    expected = p + kPage;
  }
  stop.store(true, std::memory_order_relaxed);
  querier.join();
  ASSERT_LT(moved_at, 0) << "the break moved under the grower at page " << moved_at;
  EXPECT_EQ(static_cast<char *>(sbrk(0)), expected);
  for (char *p = start; p < expected; p += kPage) ASSERT_EQ(p[0], 1);
  EXPECT_GT(asked.load(), 0);
  EXPECT_EQ(g_driver_calls.load(), 0) << "the heap page was asked of the driver: the heap check never ran";
  mpix::device::memtype_host_ranges(false);
  mpix::device::memtype_set_driver_for_testing(nullptr);
  ucm_unset_event_handler(UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED, on_event, nullptr);
  sbrk(-(kPage * (kPages + 1)));
}
