// CHECK_CUDA for the GPU tests and benchmarks: a failed CUDA call names
// itself, its place and the rank, then ends the whole job (MPI_Abort while
// MPI runs, so the peer does not hang waiting for a dead rank).
#ifndef MPIX_TEST_GPU_CUDA_CHECK_H
#define MPIX_TEST_GPU_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

namespace mpix_test {

[[noreturn]] inline void cuda_failed(const char *file, int line, const char *call, cudaError_t e) {
  int init = 0, fin = 0, rank = -1;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "[%d] %s:%d %s: %s\n", rank, file, line, call, cudaGetErrorString(e));
  if (init && !fin) MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

}  // namespace mpix_test

#define CHECK_CUDA(x)                                                      \
  do {                                                                     \
    const cudaError_t e_ = (x);                                            \
    if (e_ != cudaSuccess) mpix_test::cuda_failed(__FILE__, __LINE__, #x, e_); \
  } while (0)

#endif
