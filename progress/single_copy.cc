#include "single_copy.h"

#include <mpi.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "immortal.h"

namespace mpix::progress {
namespace {

struct State {
  bool enabled = false;
  std::size_t min_bytes = 0;
  std::int32_t pid = 0;
  std::vector<std::uint64_t> node;  // per MPI_COMM_WORLD rank
  // Per MPI_COMM_WORLD rank of this node: its process and when it started
  // (a pid alone may be reused once the process is gone).
  std::vector<std::int32_t> pid_of;
  std::vector<std::uint64_t> start_of;
  std::uint64_t mine = 0;
  const char *why_not = "not started";
};

State &state() {
  static Immortal<State> s;
  return s.get();
}

std::atomic<std::uint64_t> g_reads{0}, g_writes{0}, g_bytes{0}, g_failures{0};

std::uint64_t fnv(std::uint64_t h, const char *s, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 1099511628211ull;
  return h;
}

// What each process tells the others at MPI_Init.
struct Card {
  std::uint64_t node;
  std::uint64_t probe;  // address of a word holding `probe_value`
  std::int32_t pid;
  std::uint32_t pad;
  std::uint64_t start;  // process_start(pid)
};
constexpr std::uint64_t kProbeValue = 0x6d7069782d636d61ull;  // "mpix-cma"
volatile std::uint64_t g_probe_word = kProbeValue;

// /proc/PID/stat's state letter and start time (clock ticks after boot);
// false if there is no such process.
bool process_stat(std::int32_t pid, char *state, std::uint64_t *start) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  std::FILE *f = std::fopen(path, "r");
  if (f == nullptr) return false;
  char line[1024] = {};
  const std::size_t n = std::fread(line, 1, sizeof line - 1, f);
  std::fclose(f);
  line[n] = '\0';
  // The command name, in parentheses, may hold spaces and parentheses: the
  // fields that follow start after the last ')'.
  const char *p = std::strrchr(line, ')');
  if (p == nullptr || p[1] != ' ') return false;
  *state = p[2];
  // Fields 3 (state) to 22 (starttime): skip 19 fields after the state.
  p += 3;
  for (int field = 0; field < 19 && p != nullptr; ++field) {
    p = std::strchr(p, ' ');
    if (p != nullptr) ++p;
  }
  *start = p != nullptr ? std::strtoull(p, nullptr, 10) : 0;
  return true;
}

}  // namespace

std::size_t g_single_copy_floor = SIZE_MAX;

std::uint64_t node_identity() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  std::uint64_t h = fnv(14695981039346656037ull, name, std::strlen(name));
  if (std::FILE *f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char id[64] = {};
    const std::size_t n = std::fread(id, 1, sizeof id, f);
    std::fclose(f);
    h = fnv(h, id, n);
  }
  return h;
}

namespace {
// Moves n bytes between local memory and address `remote` of process pid,
// either way; the kernel may move less than asked (a range that ends), so
// it loops on what is left.
int cross_copy(std::int32_t pid, std::uint64_t remote, char *local, std::size_t n, bool write, bool counted) {
  char *to = local;
  std::uint64_t from = remote;
  while (n > 0) {
    iovec l{to, n}, r{reinterpret_cast<void *>(static_cast<std::uintptr_t>(from)), n};
    const ssize_t got = write ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      g_failures.fetch_add(1, std::memory_order_relaxed);
      return errno;
    }
    if (got == 0) {  // a partial read that moved nothing: the range ends there
      g_failures.fetch_add(1, std::memory_order_relaxed);
      return EFAULT;
    }
    to += got;
    from += static_cast<std::uint64_t>(got);
    n -= static_cast<std::size_t>(got);
    g_bytes.fetch_add(static_cast<std::uint64_t>(got), std::memory_order_relaxed);
  }
  if (counted) (write ? g_writes : g_reads).fetch_add(1, std::memory_order_relaxed);
  return 0;
}
}  // namespace

int single_copy_read(std::int32_t pid, std::uint64_t remote, void *local, std::size_t n, bool counted) {
  return cross_copy(pid, remote, static_cast<char *>(local), n, false, counted);
}

int single_copy_write(std::int32_t pid, std::uint64_t remote, const void *local, std::size_t n) {
  // process_vm_writev only reads the local iovec.
  return cross_copy(pid, remote, const_cast<char *>(static_cast<const char *>(local)), n, true, true);
}

void single_copy_start(bool wanted, std::size_t min_bytes, int verbose) {
  State &s = state();
  s.pid = static_cast<std::int32_t>(getpid());
  s.min_bytes = min_bytes;
  s.mine = node_identity();
  int size = 0, rank = 0;
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char state = 0;
  std::uint64_t start = 0;
  process_stat(s.pid, &state, &start);
  Card me{s.mine, reinterpret_cast<std::uintptr_t>(&g_probe_word), s.pid, 0, start};
  std::vector<Card> all(static_cast<std::size_t>(size));
  PMPI_Allgather(&me, sizeof me, MPI_BYTE, all.data(), sizeof me, MPI_BYTE, MPI_COMM_WORLD);
  s.node.resize(all.size());
  s.pid_of.assign(all.size(), 0);
  s.start_of.assign(all.size(), 0);
  for (std::size_t i = 0; i < all.size(); ++i) {
    s.node[i] = all[i].node;
    if (all[i].node == s.mine) {
      s.pid_of[i] = all[i].pid;
      s.start_of[i] = all[i].start;
    }
  }
  // Each process reads the next process of its node (round), if any.
  int ok = wanted ? 1 : 0;
  if (ok) {
    for (int k = 1; k < size; ++k) {
      const Card &peer = all[static_cast<std::size_t>((rank + k) % size)];
      if (peer.node != s.mine) continue;
      std::uint64_t word = 0;
      if (single_copy_read(peer.pid, peer.probe, &word, sizeof word) != 0 || word != kProbeValue) ok = 0;
      break;
    }
  }
  int all_ok = 0;
  PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  // The probe's counts are not traffic.
  g_reads.store(0, std::memory_order_relaxed);
  g_writes.store(0, std::memory_order_relaxed);
  g_bytes.store(0, std::memory_order_relaxed);
  g_failures.store(0, std::memory_order_relaxed);
  s.enabled = all_ok == 1;
  g_single_copy_floor = s.enabled ? min_bytes : SIZE_MAX;
  s.why_not = s.enabled ? "" : !wanted ? "MPIX_SINGLE_COPY=off" : "a process could not read a neighbour's memory (ptrace rules)";
  if (verbose > 0 && rank == 0)
    std::fprintf(stderr, "[mpix] single-copy (cross-memory attach) within a node: %s%s\n",
                 s.enabled ? "on" : "off: ", s.why_not);
}

bool single_copy_to(int world, std::size_t bytes) {
  const State &s = state();
  return s.enabled && bytes >= s.min_bytes && world >= 0 && static_cast<std::size_t>(world) < s.node.size() &&
         s.node[static_cast<std::size_t>(world)] == s.mine;
}

bool same_node(int world) {
  const State &s = state();
  return world >= 0 && static_cast<std::size_t>(world) < s.node.size() && s.node[static_cast<std::size_t>(world)] == s.mine;
}

bool process_exited(int world) {
  const State &s = state();
  // The pids are ours to look at only where reads worked: then every
  // process of the node shares our pid namespace.
  if (!s.enabled || world < 0 || static_cast<std::size_t>(world) >= s.pid_of.size()) return false;
  const std::int32_t pid = s.pid_of[static_cast<std::size_t>(world)];
  if (pid <= 0 || pid == s.pid) return false;
  char st = 0;
  std::uint64_t start = 0;
  return !process_stat(pid, &st, &start) || st == 'Z' || st == 'X' || st == 'x' ||
         start != s.start_of[static_cast<std::size_t>(world)];
}

bool single_copy_enabled() { return state().enabled; }
const char *single_copy_why_not() { return state().why_not; }
std::int32_t single_copy_pid() { return state().pid; }

SingleCopyStats single_copy_stats() {
  return SingleCopyStats{g_reads.load(std::memory_order_relaxed), g_writes.load(std::memory_order_relaxed),
                         g_bytes.load(std::memory_order_relaxed), g_failures.load(std::memory_order_relaxed)};
}

}  // namespace mpix::progress
