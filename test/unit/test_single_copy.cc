// Cross-memory reads (progress/single_copy.h) against a child process:
// what the receiver of a single-copy message sees when the sender's memory
// is there, partly there, or the sender is gone (a clear error, never a
// hang or a crash). The child is this test's own (a parent may read its
// child's memory under every ptrace policy but Yama's 3).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <vector>

#include "progress/single_copy.h"

namespace {

using mpix::progress::single_copy_read;

// A child whose buffer of n bytes holds i * 7 + 1 at i; the parent learns
// the buffer's address (fork keeps it) and ends the child when done.
struct Child {
  pid_t pid = -1;
  unsigned char *buf = nullptr;
  std::size_t n = 0;
  // guard: the last 4 KiB page made inaccessible before the fork.
  explicit Child(std::size_t bytes, bool guard = false) : n(bytes) {
    buf = static_cast<unsigned char *>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    for (std::size_t i = 0; i < n; ++i) buf[i] = static_cast<unsigned char>(i * 7 + 1);
    if (guard) mprotect(buf + n - 4096, 4096, PROT_NONE);
    int ready[2];
    if (pipe(ready) != 0) return;
    pid = fork();
    if (pid == 0) {
      char c = 1;
      (void)!write(ready[1], &c, 1);
      for (;;) pause();
    }
    char c = 0;
    (void)!read(ready[0], &c, 1);
    close(ready[0]);
    close(ready[1]);
  }
  void end() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      pid = -1;
    }
  }
  ~Child() {
    end();
    munmap(buf, n);
  }
};

std::uint64_t addr(const void *p) { return reinterpret_cast<std::uintptr_t>(p); }

TEST(SingleCopy, ReadsAnotherProcesssMemory) {
  Child c(3 << 20);
  ASSERT_GT(c.pid, 0);
  // What the child holds from now on is not what the parent holds.
  std::memset(c.buf, 0, c.n);
  std::vector<unsigned char> got(c.n);
  const int err = single_copy_read(c.pid, addr(c.buf), got.data(), c.n);
  if (err == EPERM) GTEST_SKIP() << "this kernel's ptrace policy refuses reads of a child";
  ASSERT_EQ(err, 0);
  for (std::size_t i = 0; i < c.n; ++i)
    ASSERT_EQ(got[i], static_cast<unsigned char>(i * 7 + 1)) << i;
  // An inner range, at an odd offset and length.
  std::vector<unsigned char> part(4099);
  ASSERT_EQ(single_copy_read(c.pid, addr(c.buf + 12345), part.data(), part.size()), 0);
  for (std::size_t i = 0; i < part.size(); ++i)
    ASSERT_EQ(part[i], static_cast<unsigned char>((i + 12345) * 7 + 1));
}

TEST(SingleCopy, AGoneProcessIsAnError) {
  Child c(4096);
  ASSERT_GT(c.pid, 0);
  const pid_t pid = c.pid;
  c.end();
  unsigned char b[16];
  EXPECT_EQ(single_copy_read(pid, addr(c.buf), b, sizeof b), ESRCH);
}

TEST(SingleCopy, UnmappedMemoryIsAnError) {
  Child c(8192, true);
  ASSERT_GT(c.pid, 0);
  unsigned char b[16];
  if (single_copy_read(c.pid, addr(c.buf), b, sizeof b) == EPERM) GTEST_SKIP() << "ptrace policy";
  // Into the child's inaccessible page: the part before it is read, then
  // the rest fails (never a partial result taken for a whole one).
  std::vector<unsigned char> big(8192);
  EXPECT_EQ(single_copy_read(c.pid, addr(c.buf), big.data(), big.size()), EFAULT);
  EXPECT_EQ(single_copy_read(c.pid, 8, b, sizeof b), EFAULT);
}

}  // namespace
