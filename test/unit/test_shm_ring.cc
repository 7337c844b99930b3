// The shared-memory ring (progress/shm_ring.h) between two threads, and
// between two processes over a MAP_SHARED mapping: every message arrives
// once, in order, with its bytes; a full ring refuses (never overwrites);
// what does not fit a slot is refused whole; laps wrap.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "progress/shm_ring.h"

namespace {

using mpix::progress::shm::Message;
using mpix::progress::shm::Ring;

struct Memory {
  explicit Memory(std::size_t n) : bytes(n) {
    p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  }
  ~Memory() { munmap(p, bytes); }
  void *p;
  std::size_t bytes;
};

// Message i: a header holding i, then (i * 37) % max bytes of payload.
std::size_t payload_of(std::uint64_t i, std::size_t max) { return static_cast<std::size_t>((i * 37) % (max + 1)); }
unsigned char byte_of(std::uint64_t i, std::size_t k) { return static_cast<unsigned char>(i * 7 + k); }

bool push_message(Ring &r, std::uint64_t i, std::size_t max, std::vector<unsigned char> &buf) {
  const std::size_t n = payload_of(i, max);
  buf.resize(n);
  for (std::size_t k = 0; k < n; ++k) buf[k] = byte_of(i, k);
  return r.push(static_cast<std::uint32_t>(i % 3 + 1), &i, sizeof i, buf.data(), n);
}

void check_message(const Message &m, std::uint64_t i, std::size_t max) {
  ASSERT_EQ(m.id, i % 3 + 1);
  ASSERT_EQ(m.header_bytes, sizeof i);
  std::uint64_t got = 0;
  std::memcpy(&got, m.header, sizeof got);
  ASSERT_EQ(got, i);
  ASSERT_EQ(m.bytes, payload_of(i, max));
  const auto *d = static_cast<const unsigned char *>(m.data);
  for (std::size_t k = 0; k < m.bytes; ++k) ASSERT_EQ(d[k], byte_of(i, k)) << "message " << i << " byte " << k;
}

TEST(ShmRing, RefusesWhatDoesNotFitAndWhenFull) {
  constexpr std::size_t kSlots = 4, kSlot = 128;
  Memory mem(Ring::bytes_for(kSlots, kSlot));
  Ring tx(mem.p, kSlots, kSlot), rx(mem.p, kSlots, kSlot);
  const std::size_t cap = tx.capacity();
  std::vector<unsigned char> big(cap + 1, 1);
  EXPECT_FALSE(tx.push(1, big.data(), 8, big.data(), cap - 7));  // one byte too many
  EXPECT_TRUE(tx.push(1, big.data(), 8, big.data(), cap - 8));   // exactly a slot
  for (std::size_t i = 1; i < kSlots; ++i) EXPECT_TRUE(tx.push(2, big.data(), 8, nullptr, 0));
  EXPECT_FALSE(tx.push(2, big.data(), 8, nullptr, 0));  // full: refused, nothing overwritten
  Message m{};
  ASSERT_TRUE(rx.peek(&m));
  EXPECT_EQ(m.id, 1u);
  EXPECT_EQ(m.bytes, cap - 8);
  rx.pop();
  EXPECT_TRUE(tx.push(3, big.data(), 8, nullptr, 0));  // room again
  for (std::size_t i = 0; i < kSlots; ++i) {
    ASSERT_TRUE(rx.peek(&m));
    rx.pop();
  }
  EXPECT_EQ(m.id, 3u);
  EXPECT_FALSE(rx.peek(&m));
}

// Many laps between two threads, the sender retrying when full; with slot
// counts and slot sizes that are powers of two (positions by mask and shift,
// as the transport makes its rings) and that are not (by division).
class ShmRingSizes : public testing::TestWithParam<std::pair<std::size_t, std::size_t>> {};

TEST_P(ShmRingSizes, TwoThreadsEveryMessageOnceInOrder) {
  const std::size_t kSlots = GetParam().first, kSlot = GetParam().second;
  constexpr std::uint64_t kMessages = 200000;
  Memory mem(Ring::bytes_for(kSlots, kSlot));
  Ring tx(mem.p, kSlots, kSlot), rx(mem.p, kSlots, kSlot);
  const std::size_t max = tx.capacity() - sizeof(std::uint64_t);
  std::thread sender([&] {
    std::vector<unsigned char> buf;
    for (std::uint64_t i = 0; i < kMessages; ++i)
      while (!push_message(tx, i, max, buf)) std::this_thread::yield();
  });
  Message m{};
  for (std::uint64_t i = 0; i < kMessages; ++i) {
    while (!rx.peek(&m)) std::this_thread::yield();
    check_message(m, i, max);
    if (HasFatalFailure()) break;
    rx.pop();
  }
  sender.join();
  EXPECT_FALSE(rx.peek(&m));
}

INSTANTIATE_TEST_SUITE_P(Sizes, ShmRingSizes,
                         testing::Values(std::make_pair(std::size_t{8}, std::size_t{256}),
                                         std::make_pair(std::size_t{5}, std::size_t{256}),
                                         std::make_pair(std::size_t{8}, std::size_t{192}),
                                         std::make_pair(std::size_t{7}, std::size_t{320})));

// The same between two processes, as the transport uses it.
TEST(ShmRing, TwoProcesses) {
  constexpr std::size_t kSlots = 16, kSlot = 1024;
  constexpr std::uint64_t kMessages = 100000;
  Memory mem(Ring::bytes_for(kSlots, kSlot));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Ring tx(mem.p, kSlots, kSlot);
    const std::size_t max = tx.capacity() - sizeof(std::uint64_t);
    std::vector<unsigned char> buf;
    for (std::uint64_t i = 0; i < kMessages; ++i)
      while (!push_message(tx, i, max, buf)) sched_yield();
    _exit(0);
  }
  Ring rx(mem.p, kSlots, kSlot);
  const std::size_t max = rx.capacity() - sizeof(std::uint64_t);
  Message m{};
  for (std::uint64_t i = 0; i < kMessages; ++i) {
    while (!rx.peek(&m)) sched_yield();
    check_message(m, i, max);
    if (HasFatalFailure()) break;
    rx.pop();
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// Messages of several slots whose payload words read as lap numbers (1,
// 2, 3: what an unzeroed slot inside an older message would show where a
// new message may start): each arrives once, no phantom message appears,
// and skip records at the ring's end are never handed up.
TEST(ShmRing, PayloadThatLooksLikeLapsIsNoMessage) {
  constexpr std::size_t kSlots = 16, kSlot = 64;
  Memory mem(Ring::bytes_for(kSlots, kSlot));
  Ring tx(mem.p, kSlots, kSlot), rx(mem.p, kSlots, kSlot);
  std::vector<std::uint32_t> words(tx.capacity() / 4);
  Message m{};
  for (std::uint64_t i = 0; i < 5000; ++i) {
    const std::size_t n = 1 + (i * 13) % (words.size() - 2);  // words after an 8-byte header
    for (std::size_t k = 0; k < n; ++k) words[k] = static_cast<std::uint32_t>(1 + (i + k) % 3);
    // Four messages of up to four slots, and skips: the ring's 16 slots.
    ASSERT_TRUE(tx.push(5, &i, sizeof i, words.data(), n * 4)) << i;
    if (i % 4 != 3) continue;
    for (std::uint64_t j = i - 3; j <= i; ++j) {
      ASSERT_TRUE(rx.peek(&m)) << j;
      std::uint64_t got = 0;
      std::memcpy(&got, m.header, sizeof got);
      ASSERT_EQ(got, j);
      ASSERT_EQ(m.id, 5u);
      const std::size_t want = 1 + (j * 13) % (words.size() - 2);
      ASSERT_EQ(m.bytes, want * 4);
      rx.pop();
    }
    ASSERT_FALSE(rx.peek(&m)) << "a message where none was sent, after " << i;
  }
}

// A slot whose sizes overrun it (a peer writing garbage) comes up empty
// with id 0, never as a read past the slot.
TEST(ShmRing, GarbageSizesComeUpEmpty) {
  constexpr std::size_t kSlots = 2, kSlot = 128;
  Memory mem(Ring::bytes_for(kSlots, kSlot));
  Ring tx(mem.p, kSlots, kSlot), rx(mem.p, kSlots, kSlot);
  std::uint64_t h = 5;
  ASSERT_TRUE(tx.push(7, &h, sizeof h, nullptr, 0));
  // The slot's byte counts (after the lap and id words) overwritten.
  auto *slot = static_cast<char *>(mem.p) + 128;  // after the consumed and claim lines
  const std::uint32_t huge[2] = {100, 100000};  // beyond a quarter of the ring
  std::memcpy(slot + 8, huge, sizeof huge);
  Message m{};
  ASSERT_TRUE(rx.peek(&m));
  EXPECT_EQ(m.id, 0u);
  EXPECT_EQ(m.header_bytes, 0u);
  EXPECT_EQ(m.bytes, 0u);
}

// The claim words (split transfers, src/p2p/split_copy.cc) are the same
// memory from both ends, zero in a new ring, and untouched by any traffic.
TEST(ShmRing, ClaimWordsAreSharedAndApartFromSlots) {
  constexpr std::size_t kSlots = 8, kSlot = 64;
  Memory mem(Ring::bytes_for(kSlots, kSlot));
  Ring tx(mem.p, kSlots, kSlot), rx(mem.p, kSlots, kSlot);
  ASSERT_EQ(tx.claims(), rx.claims());
  for (std::size_t k = 0; k < Ring::kClaims; ++k) EXPECT_EQ(rx.claims()[k].load(), 0u) << k;
  for (std::size_t k = 0; k < Ring::kClaims; ++k) rx.claims()[k].store(~std::uint64_t{0} - k);
  std::vector<char> payload(tx.capacity() - 8, '\xff');
  Message m{};
  for (int i = 0; i < 100; ++i) {
    std::uint64_t h = static_cast<std::uint64_t>(i);
    ASSERT_TRUE(tx.push(1, &h, sizeof h, payload.data(), payload.size())) << i;
    ASSERT_TRUE(rx.peek(&m)) << i;
    rx.pop();
  }
  for (std::size_t k = 0; k < Ring::kClaims; ++k) EXPECT_EQ(tx.claims()[k].load(), ~std::uint64_t{0} - k) << k;
}

}  // namespace
