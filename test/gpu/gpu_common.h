// Set-up shared by the GPU tests and benchmarks. CHECK_CUDA: a failed CUDA
// call names itself, its place and the rank, then ends the whole job
// (MPI_Abort while MPI runs, so the peer does not hang waiting for a dead
// rank).
#ifndef MPIX_TEST_GPU_GPU_COMMON_H
#define MPIX_TEST_GPU_GPU_COMMON_H

#include <cuda_runtime.h>
#include <mpi.h>

#include "mpix.h"

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

namespace mpix_test {

// Makes GPU rank % device_count current; returns it, or -1 without a GPU.
inline int use_gpu_of_rank(int rank) {
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
    (void)cudaGetLastError();
    return -1;
  }
  CHECK_CUDA(cudaSetDevice(rank % ngpu));
  return rank % ngpu;
}

// An MPIX stream on the CUDA stream cs (MPICH's info keys); MPI error code.
inline int cuda_stream_create(cudaStream_t cs, MPIX_Stream *stream) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "type", "cudaStream_t");
  MPIX_Info_set_hex(info, "value", &cs, sizeof cs);
  const int rc = MPIX_Stream_create(info, stream);
  MPI_Info_free(&info);
  return rc;
}

}  // namespace mpix_test

#endif
