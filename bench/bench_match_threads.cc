// Matching rate of threads side by side (issue 27): T threads on one
// communicator's matching, each owning its own tags, against one Matcher
// behind one lock (what the engine lock gives today) and the
// ShardedMatcher (match/sharded_matcher.h) with S shards. The engine alone,
// no MPI: how far matching itself scales before transports and requests.
//
// Each thread owns tags t * W .. t * W + W - 1 of one source and repeats
// windows of W: W receives posted, then W messages arriving for them
// (--order prq, the osu_bw receiver's shape), or the messages first
// (--order umq). With --cross the messages of thread t's tags are made to
// arrive by thread t + 1 (a transport thread delivering for another), so
// the two sides of every match run on different threads; thread t + 1
// sends window w once thread t posted it (the order is then whichever
// comes first, --order aside).
//
// Prints one row per (engine, threads): matches/s over all threads, wall
// clock, median of --rounds runs, engines taken in turn within a round.
//
// Usage: bench_match_threads [-t 1,2,4,8] [-s 64] [-w 64] [-n windows]
//                            [-r rounds] [--order prq|umq] [--cross]
//                            [-o out.csv]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "match/sharded_matcher.h"

namespace {

using mpix::match::Key;
using mpix::match::Matcher;
using mpix::match::Mode;
using mpix::match::ShardedMatcher;
using mpix::match::ShardLock;
using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<int> threads{1, 2, 4, 8};
  unsigned shards = 64;
  int window = 64;
  long windows = 20000;
  int rounds = 5;
  bool prq = true;
  bool cross = false;
  std::string csv;
};

// The engine under test: one matcher behind one lock, or shards.
class Engine {
 public:
  virtual ~Engine() = default;
  virtual const char* name() const = 0;
  // Returns whether the operation matched.
  virtual bool post(Key k, std::uint64_t c) = 0;
  virtual bool arrive(Key k, std::uint64_t c) = 0;
};

class OneLock final : public Engine {
 public:
  const char* name() const override { return "one-lock"; }
  bool post(Key k, std::uint64_t c) override {
    std::lock_guard<ShardLock> g(lock_);
    return m_.post(k, c).matched();
  }
  bool arrive(Key k, std::uint64_t c) override {
    std::lock_guard<ShardLock> g(lock_);
    return m_.arrive(k, c).matched();
  }

 private:
  alignas(64) ShardLock lock_;
  Matcher m_{Mode::kOrdered};
};

class Sharded final : public Engine {
 public:
  explicit Sharded(unsigned shards) : m_(Mode::kOrdered, shards), name_("sharded-" + std::to_string(m_.shards())) {}
  const char* name() const override { return name_.c_str(); }
  bool post(Key k, std::uint64_t c) override { return m_.post(k, c).matched(); }
  bool arrive(Key k, std::uint64_t c) override { return m_.arrive(k, c).matched(); }

 private:
  ShardedMatcher m_;
  std::string name_;
};

// One run: returns matches/s, or -1 if a match went missing.
double run(Engine& e, int threads, const Options& o) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  // Per thread, a line each (no false sharing between threads): its
  // matches, and (--cross: thread t posts its tags' receives, thread t+1
  // makes their messages arrive, a window behind at most) its posted
  // windows.
  struct alignas(64) PerThread {
    std::uint64_t matched = 0;
    std::atomic<long> posted{0};
  };
  std::vector<PerThread> per(threads);
  auto body = [&](int t) {
    const int base = t * o.window;
    // --cross: the neighbour whose receives this thread's arrivals feed.
    const int n = (t + threads - 1) % threads;
    const int fed = n * o.window;
    std::uint64_t m = 0;
    ready.fetch_add(1);
    while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
    for (long w = 0; w < o.windows; ++w) {
      if (!o.cross) {
        for (int phase = 0; phase < 2; ++phase) {
          const bool posting = (phase == 0) == o.prq;
          for (int i = 0; i < o.window; ++i) {
            const Key k{0, base + i};
            m += posting ? e.post(k, w) : e.arrive(k, w);
          }
        }
        continue;
      }
      for (int i = 0; i < o.window; ++i) m += e.post(Key{0, base + i}, w);
      per[t].posted.store(w + 1, std::memory_order_release);
      // The neighbour's messages for window w once it posted window w: the
      // queues stay a window deep.
      while (per[n].posted.load(std::memory_order_acquire) <= w) std::this_thread::yield();
      for (int i = 0; i < o.window; ++i) m += e.arrive(Key{0, fed + i}, w);
    }
    per[t].matched = m;
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
  while (ready.load() < threads) std::this_thread::yield();
  const auto t0 = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::uint64_t total = 0;
  for (int t = 0; t < threads; ++t) total += per[t].matched;
  if (total != static_cast<std::uint64_t>(threads) * o.windows * o.window) return -1;
  return static_cast<double>(total) / s;
}

std::vector<int> parse_list(const char* s) {
  std::vector<int> v;
  for (const char* p = s; *p;) {
    v.push_back(std::atoi(p));
    p = std::strchr(p, ',');
    if (!p) break;
    ++p;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-t") o.threads = parse_list(next());
    else if (a == "-s") o.shards = static_cast<unsigned>(std::atoi(next()));
    else if (a == "-w") o.window = std::atoi(next());
    else if (a == "-n") o.windows = std::atol(next());
    else if (a == "-r") o.rounds = std::atoi(next());
    else if (a == "--order") o.prq = std::strcmp(next(), "umq") != 0;
    else if (a == "--cross") o.cross = true;
    else if (a == "-o") o.csv = next();
    else {
      std::fprintf(stderr,
                   "usage: %s [-t 1,2,4,8] [-s shards] [-w window] [-n windows] [-r rounds] "
                   "[--order prq|umq] [--cross] [-o out.csv]\n",
                   argv[0]);
      return 2;
    }
  }
  if (o.window < 1 || o.windows < 1 || o.rounds < 1 || o.shards < 1 || o.shards > ShardedMatcher::kMaxShards) {
    std::fprintf(stderr, "bench_match_threads: bad option value\n");
    return 2;
  }
  std::FILE* csv = o.csv.empty() ? nullptr : std::fopen(o.csv.c_str(), "w");
  if (csv) std::fprintf(csv, "engine,threads,window,order,cross,round,matches_per_s\n");
  std::printf("# bench_match_threads: window %d, %ld windows per thread, order %s%s, %d rounds (median)\n",
              o.window, o.windows, o.prq ? "prq" : "umq", o.cross ? ", cross-thread arrivals" : "", o.rounds);
  std::printf("%-12s %7s %14s %14s %14s\n", "engine", "threads", "median M/s", "min M/s", "max M/s");
  bool failed = false;
  for (int t : o.threads) {
    if (t < 1) continue;
    std::vector<std::unique_ptr<Engine>> engines;
    std::vector<std::vector<double>> rates(2);
    for (int r = 0; r < o.rounds; ++r) {
      // Fresh engines each round, taken in turn: a drift of the machine
      // falls on both alike.
      engines.clear();
      engines.push_back(std::make_unique<OneLock>());
      engines.push_back(std::make_unique<Sharded>(o.shards));
      for (std::size_t e = 0; e < engines.size(); ++e) {
        const double rate = run(*engines[e], t, o);
        if (rate < 0) {
          std::fprintf(stderr, "%s, %d threads: matches went missing\n", engines[e]->name(), t);
          failed = true;
          continue;
        }
        rates[e].push_back(rate);
        if (csv)
          std::fprintf(csv, "%s,%d,%d,%s,%d,%d,%.0f\n", engines[e]->name(), t, o.window, o.prq ? "prq" : "umq",
                       o.cross ? 1 : 0, r, rate);
      }
    }
    for (std::size_t e = 0; e < engines.size(); ++e) {
      auto& v = rates[e];
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      std::printf("%-12s %7d %14.2f %14.2f %14.2f\n", engines[e]->name(), t, v[v.size() / 2] / 1e6, v.front() / 1e6,
                  v.back() / 1e6);
    }
  }
  if (csv) std::fclose(csv);
  return failed ? 1 : 0;
}
