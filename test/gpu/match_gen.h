// Batches for the GPU matcher's test and benchmark (test/gpu/gpu_match.cu,
// bench/bench_gpu_match.cu). Multiplicity follows papers/000 ch. 6.3.2: the
// share of entries that carry one identical key, the rest being unique.
#ifndef MPIX_TEST_GPU_MATCH_GEN_H
#define MPIX_TEST_GPU_MATCH_GEN_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "match/batch.h"

namespace mpix::match::gen {

struct Batch {
  std::vector<BatchItem> arrivals;
  std::vector<BatchItem> receives;
};

// Cookies differ per side and index, so a swapped or stale cookie shows.
inline Cookie cookie_of(bool arrival, std::uint32_t i) {
  return (std::uint64_t{i} * 0x9e3779b97f4a7c15ULL) ^ (arrival ? 0xa11ULL : 0x5ecULL << 40);
}

inline void set_cookies(Batch &b) {
  for (std::uint32_t i = 0; i < b.arrivals.size(); ++i) b.arrivals[i].cookie = cookie_of(true, i);
  for (std::uint32_t i = 0; i < b.receives.size(); ++i) b.receives[i].cookie = cookie_of(false, i);
}

// Unique key number u as a key: spread over contexts, sources and tags.
inline BatchKey unique_key(std::uint64_t u) {
  return BatchKey{static_cast<std::uint32_t>(u % 7), static_cast<std::int32_t>((u / 7) % 4096),
                  static_cast<std::int32_t>(u / 7 / 4096)};
}

// n arrivals, a share `multiplicity` of them with one hot key and the rest
// unique; the receives are the same keys shuffled, except that a share
// 1 - overlap of them is replaced by keys no arrival has.
inline Batch multiplicity_batch(std::uint32_t n, double multiplicity, double overlap, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Batch b;
  b.arrivals.resize(n);
  const BatchKey hot{103, 17, 4242};  // context 103: unique_key uses 0..6
  const std::uint32_t n_hot = static_cast<std::uint32_t>(std::llround(multiplicity * n));
  for (std::uint32_t i = 0; i < n; ++i) b.arrivals[i].key = unique_key(std::uint64_t{i} + 1);
  // The hot entries at random positions.
  std::vector<std::uint32_t> order(n);
  for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (std::uint32_t i = 0; i < n_hot; ++i) b.arrivals[order[i]].key = hot;
  b.receives = b.arrivals;
  std::shuffle(b.receives.begin(), b.receives.end(), rng);
  std::bernoulli_distribution fresh(1.0 - overlap);
  for (std::uint32_t i = 0; i < n; ++i)
    if (fresh(rng)) b.receives[i].key = unique_key(std::uint64_t{n} + 1 + i);
  set_cookies(b);
  return b;
}

// Keys drawn independently for both sides from `keys` keys with a power-law
// skew (a few keys are very common, most are rare).
inline Batch skewed_batch(std::uint32_t n_a, std::uint32_t n_r, std::uint32_t keys, double skew,
                          std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto draw = [&] {
    const auto k = static_cast<std::uint64_t>(std::pow(u(rng), skew) * keys);
    return unique_key(std::min<std::uint64_t>(k, keys - 1));
  };
  Batch b;
  b.arrivals.resize(n_a);
  b.receives.resize(n_r);
  for (auto &x : b.arrivals) x.key = draw();
  for (auto &x : b.receives) x.key = draw();
  set_cookies(b);
  return b;
}

// Tiny key space with negative values (keys compare by equality only): long
// runs of equal keys on both sides, where FIFO order matters most.
inline Batch tiny_keys_batch(std::uint32_t n_a, std::uint32_t n_r, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> v(-1, 1);
  Batch b;
  b.arrivals.resize(n_a);
  b.receives.resize(n_r);
  for (auto &x : b.arrivals) x.key = BatchKey{static_cast<std::uint32_t>(v(rng) + 1), v(rng), v(rng)};
  for (auto &x : b.receives) x.key = BatchKey{static_cast<std::uint32_t>(v(rng) + 1), v(rng), v(rng)};
  set_cookies(b);
  return b;
}

}  // namespace mpix::match::gen

#endif
