// Matching-rate benchmark of the CPU matching engine (match/) against the
// linear-list reference matcher, after papers/000 ch. 4.3.2.
//
// One cycle at depth N: N messages arrive with tags 0..N-1 (so N messages
// wait in the unexpected queue), then N receives are posted, with tags in the
// best order (same order: the partner is always the oldest), the average
// order (random permutation) or the worst order (reversed: for a linear list
// the partner is always at the tail). Every receive must match. The rate is
// N / (time of the whole cycle): post+arrive pairs per second of thread CPU
// time (wall-clock rates go to the CSV too). --direction
// prq runs the mirror image (receives first, then arrivals in the chosen
// order), which exercises the posted-receive side.
//
// Engines: ordered, wildcard (ordered with wildcards; "wild1%" posts every
// 100th receive with kAnySource), unordered, unordered with match_batch
// (batches of 256), and the reference.
//
// Usage: bench_match [--csv PATH] [--max-depth N] [--ref-max-depth N]
//                    [--min-time SECONDS] [--direction umq|prq|both]
//                    [--engines ordered,wild1%,...]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "match/matcher.h"
#include "test/unit/reference_matcher.h"

namespace {

using mpix::match::ArriveResult;
using mpix::match::BatchPair;
using mpix::match::Cookie;
using mpix::match::Entry;
using mpix::match::Key;
using mpix::match::kAnySource;
using mpix::match::Matcher;
using mpix::match::MatcherBatchOutput;
using mpix::match::Mode;
using mpix::match::PostResult;
using mpix::match::QueuedReceive;
using mpix::match::test::ReferenceMatcher;
using Clock = std::chrono::steady_clock;

enum class Order { kBest, kAverage, kWorst };
const char* order_name(Order o) {
  return o == Order::kBest ? "best" : o == Order::kAverage ? "average" : "worst";
}

struct Options {
  std::string csv = "bench_match.csv";
  std::uint32_t max_depth = 1u << 20;
  std::uint32_t ref_max_depth = 1u << 14;
  double min_time = 0.3;
  bool umq = true;
  bool prq = false;
  std::string engines;  // comma-separated names; empty: all
};

// Second-phase tag sequence of a cycle.
std::vector<std::int32_t> make_order(std::uint32_t n, Order order, std::mt19937_64& rng) {
  std::vector<std::int32_t> tags(n);
  std::iota(tags.begin(), tags.end(), 0);
  if (order == Order::kWorst) std::reverse(tags.begin(), tags.end());
  if (order == Order::kAverage) std::shuffle(tags.begin(), tags.end(), rng);
  return tags;
}

constexpr std::int32_t kSource = 0;

// Runs one cycle; returns the number of matches (must be n).
struct Engine {
  virtual ~Engine() = default;
  virtual std::uint64_t cycle(const std::vector<std::int32_t>& second, bool umq) = 0;
};

class MatcherEngine : public Engine {
 public:
  MatcherEngine(Mode mode, unsigned wildcard_every) : m_(mode), wild_every_(wildcard_every) {}
  std::uint64_t cycle(const std::vector<std::int32_t>& second, bool umq) override {
    const std::uint32_t n = static_cast<std::uint32_t>(second.size());
    std::uint64_t matched = 0;
    if (umq) {
      for (std::uint32_t i = 0; i < n; ++i) m_.arrive(Key{kSource, static_cast<std::int32_t>(i)}, i);
      for (std::uint32_t j = 0; j < n; ++j) {
        matched += m_.post(receive_key(j, second[j]), j).matched();
      }
    } else {
      for (std::uint32_t i = 0; i < n; ++i) {
        m_.post(receive_key(i, static_cast<std::int32_t>(i)), i);
      }
      for (std::uint32_t j = 0; j < n; ++j) {
        matched += m_.arrive(Key{kSource, second[j]}, j).matched();
      }
    }
    return matched;
  }

 private:
  Key receive_key(std::uint32_t j, std::int32_t tag) const {
    // Wildcard receives use kAnySource with the right tag, so every receive
    // still has exactly one partner whatever the order.
    if (wild_every_ != 0 && j % wild_every_ == wild_every_ / 2) return Key{kAnySource, tag};
    return Key{kSource, tag};
  }
  Matcher m_;
  unsigned wild_every_;
};

class BatchEngine : public Engine {
 public:
  explicit BatchEngine(std::uint32_t batch) : m_(Mode::kUnordered), batch_(batch) {}
  std::uint64_t cycle(const std::vector<std::int32_t>& second, bool umq) override {
    const std::uint32_t n = static_cast<std::uint32_t>(second.size());
    std::uint64_t matched = 0;
    for (int phase = 0; phase < 2; ++phase) {
      const bool arrivals = (phase == 0) == umq;
      for (std::uint32_t start = 0; start < n; start += batch_) {
        const std::uint32_t len = std::min(batch_, n - start);
        items_.resize(len);
        for (std::uint32_t k = 0; k < len; ++k) {
          const std::int32_t tag = phase == 0 ? static_cast<std::int32_t>(start + k)
                                              : second[start + k];
          items_[k] = Entry{Key{kSource, tag}, start + k};
        }
        pairs_.resize(len);
        qa_.resize(len);
        qr_.resize(len);
        const auto c = arrivals
                           ? m_.match_batch(items_.data(), len, nullptr, 0,
                                            MatcherBatchOutput{pairs_.data(), qa_.data(), qr_.data()})
                           : m_.match_batch(nullptr, 0, items_.data(), len,
                                            MatcherBatchOutput{pairs_.data(), qa_.data(), qr_.data()});
        matched += c.pairs;
      }
    }
    return matched;
  }

 private:
  Matcher m_;
  std::uint32_t batch_;
  std::vector<Entry> items_;
  std::vector<BatchPair> pairs_;
  std::vector<std::uint32_t> qa_;
  std::vector<QueuedReceive> qr_;
};

class ReferenceEngine : public Engine {
 public:
  std::uint64_t cycle(const std::vector<std::int32_t>& second, bool umq) override {
    const std::uint32_t n = static_cast<std::uint32_t>(second.size());
    std::uint64_t matched = 0;
    if (umq) {
      for (std::uint32_t i = 0; i < n; ++i) ref_.arrive(Key{kSource, static_cast<std::int32_t>(i)}, i);
      for (std::uint32_t j = 0; j < n; ++j) {
        matched += ref_.post(Key{kSource, second[j]}, j, nullptr).has_value();
      }
    } else {
      for (std::uint32_t i = 0; i < n; ++i) {
        ref_.post(Key{kSource, static_cast<std::int32_t>(i)}, i, nullptr);
      }
      for (std::uint32_t j = 0; j < n; ++j) {
        matched += ref_.arrive(Key{kSource, second[j]}, j).has_value();
      }
    }
    return matched;
  }

 private:
  ReferenceMatcher ref_;
};

struct EngineSpec {
  const char* name;
  Mode mode;
  unsigned wildcard_every;  // 0: none
  bool batch;
  bool reference;
};

const EngineSpec kEngines[] = {
    {"ordered", Mode::kOrdered, 0, false, false},
    {"wild0%", Mode::kOrderedWildcard, 0, false, false},
    {"wild1%", Mode::kOrderedWildcard, 100, false, false},
    {"unordered", Mode::kUnordered, 0, false, false},
    {"batch256", Mode::kUnordered, 0, true, false},
    {"reference", Mode::kOrdered, 0, false, true},
};

std::unique_ptr<Engine> make_engine(const EngineSpec& s) {
  if (s.reference) return std::make_unique<ReferenceEngine>();
  if (s.batch) return std::make_unique<BatchEngine>(256);
  return std::make_unique<MatcherEngine>(s.mode, s.wildcard_every);
}

// Thread CPU time: the machine this runs on is shared, and wall time then
// also counts the time other processes held the core. Wall-clock rates are
// kept in the CSV as well.
double thread_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct Measurement {
  double median_rate = 0;  // pairs per CPU second
  double best_rate = 0;
  double median_wall_rate = 0;  // pairs per wall-clock second
  std::uint64_t cycles = 0;
};

// Repeats timed blocks of whole cycles until min_time has passed (and at
// least 3 blocks ran); one untimed cycle first grows pool and table.
Measurement measure(const EngineSpec& spec, std::uint32_t depth, Order order, bool umq,
                    const Options& opt) {
  std::mt19937_64 rng(depth * 31 + static_cast<unsigned>(order));
  const std::vector<std::int32_t> second = make_order(depth, order, rng);
  std::unique_ptr<Engine> engine = make_engine(spec);
  if (engine->cycle(second, umq) != depth) {
    std::fprintf(stderr, "%s depth %u %s: not every receive matched\n", spec.name, depth,
                 order_name(order));
    std::exit(1);
  }
  const std::uint32_t cycles_per_block = std::max<std::uint32_t>(1, 65536 / depth);
  std::vector<double> rates;
  std::vector<double> wall_rates;
  Measurement m;
  const double start = thread_cpu_seconds();
  do {
    const auto w0 = Clock::now();
    const double t0 = thread_cpu_seconds();
    std::uint64_t matched = 0;
    for (std::uint32_t c = 0; c < cycles_per_block; ++c) matched += engine->cycle(second, umq);
    const double s = thread_cpu_seconds() - t0;
    const double w = std::chrono::duration<double>(Clock::now() - w0).count();
    if (matched != std::uint64_t{depth} * cycles_per_block) {
      std::fprintf(stderr, "%s: lost matches\n", spec.name);
      std::exit(1);
    }
    rates.push_back(static_cast<double>(matched) / s);
    wall_rates.push_back(static_cast<double>(matched) / w);
    m.cycles += cycles_per_block;
  } while (rates.size() < 3 || thread_cpu_seconds() - start < opt.min_time);
  std::sort(rates.begin(), rates.end());
  std::sort(wall_rates.begin(), wall_rates.end());
  m.median_rate = rates[rates.size() / 2];
  m.best_rate = rates.back();
  m.median_wall_rate = wall_rates[wall_rates.size() / 2];
  return m;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--csv")) {
      o.csv = value("--csv");
    } else if (!std::strcmp(argv[i], "--max-depth")) {
      o.max_depth = static_cast<std::uint32_t>(std::atol(value("--max-depth")));
    } else if (!std::strcmp(argv[i], "--ref-max-depth")) {
      o.ref_max_depth = static_cast<std::uint32_t>(std::atol(value("--ref-max-depth")));
    } else if (!std::strcmp(argv[i], "--min-time")) {
      o.min_time = std::atof(value("--min-time"));
    } else if (!std::strcmp(argv[i], "--engines")) {
      o.engines = value("--engines");
    } else if (!std::strcmp(argv[i], "--direction")) {
      const std::string d = value("--direction");
      o.umq = d == "umq" || d == "both";
      o.prq = d == "prq" || d == "both";
    } else {
      std::fprintf(stderr,
                   "usage: %s [--csv PATH] [--max-depth N] [--ref-max-depth N] "
                   "[--min-time S] [--direction umq|prq|both] [--engines a,b,...]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  std::FILE* csv = std::fopen(opt.csv.c_str(), "w");
  if (csv == nullptr) {
    std::perror(opt.csv.c_str());
    return 1;
  }
  std::fprintf(csv,
               "direction,engine,order,depth,median_pairs_per_cpu_s,best_pairs_per_cpu_s,"
               "median_pairs_per_wall_s,cycles\n");
  const Order orders[] = {Order::kBest, Order::kAverage, Order::kWorst};
  std::vector<std::uint32_t> depths;
  for (std::uint32_t d = 1; d <= opt.max_depth; d *= 4) depths.push_back(d);
  std::vector<EngineSpec> engines;
  for (const EngineSpec& e : kEngines) {
    const std::string list = "," + opt.engines + ",";
    if (opt.engines.empty() || list.find("," + std::string(e.name) + ",") != std::string::npos) {
      engines.push_back(e);
    }
  }

  for (const bool umq : {true, false}) {
    if ((umq && !opt.umq) || (!umq && !opt.prq)) continue;
    const char* dir = umq ? "umq" : "prq";
    std::printf("\n%s: %s first; M pairs per CPU second (median), orders best/average/worst\n", dir,
                umq ? "arrivals" : "receives");
    std::printf("%8s", "depth");
    for (const EngineSpec& e : engines) std::printf(" | %-23s", e.name);
    std::printf("\n");
    for (std::uint32_t depth : depths) {
      std::printf("%8u", depth);
      for (const EngineSpec& e : engines) {
        std::string cell;
        for (Order order : orders) {
          // The reference is O(depth) per match except in the best order.
          const bool skip = e.reference && order != Order::kBest && depth > opt.ref_max_depth;
          char buf[32];
          if (skip) {
            std::snprintf(buf, sizeof buf, "%7s", "-");
          } else {
            const Measurement m = measure(e, depth, order, umq, opt);
            std::snprintf(buf, sizeof buf, "%7.2f", m.median_rate / 1e6);
            std::fprintf(csv, "%s,%s,%s,%u,%.0f,%.0f,%.0f,%llu\n", dir, e.name,
                         order_name(order), depth, m.median_rate, m.best_rate,
                         m.median_wall_rate, static_cast<unsigned long long>(m.cycles));
          }
          cell += buf;
        }
        std::printf(" | %s", cell.c_str());
        std::fflush(stdout);
      }
      std::printf("\n");
    }
  }
  std::fclose(csv);
  std::printf("\nCSV written to %s\n", opt.csv.c_str());
  return 0;
}
