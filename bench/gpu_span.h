// The time of a multi-GPU run, from each rank's [first, last] read on its
// own GPU's %globaltimer: the longest of the ranks' own spans. Timestamps of
// two GPUs are never subtracted: their globaltimers are not synchronised,
// and a span from one GPU's start to another's end made NVSHMEM's
// all-to-all 1430 M msg/s on one host and 6854 on another. Each rank's span
// includes the wait for the others' kernels to start (the launch skew after
// a barrier). Rank 0 of `comm` prints the cross-GPU span beside it on
// stderr, as "<what>: longest own ..., across GPUs' clocks ...", to show
// the clocks' disagreement. Collective over `comm`; the result is rank 0's.
// Header-only: bench_dev_p2p and bench_nvshmem (built alone) both use it.
#ifndef MPIX_BENCH_GPU_SPAN_H
#define MPIX_BENCH_GPU_SPAN_H

#include <mpi.h>

#include <cstdio>

inline double longest_span_ns(unsigned long long first, unsigned long long last, MPI_Comm comm, const char *what) {
  const unsigned long long own = last - first;
  unsigned long long longest = 0, earliest = 0, latest = 0;
  MPI_Reduce(&own, &longest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, comm);
  MPI_Reduce(&first, &earliest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, 0, comm);
  MPI_Reduce(&last, &latest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, comm);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0)
    std::fprintf(stderr, "%s: longest own %.1f us, across GPUs' clocks %.1f us\n", what, longest / 1e3,
                 (double)(long long)(latest - earliest) / 1e3);
  return double(longest);
}

#endif
