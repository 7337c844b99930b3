// The GPU build works end to end: libmpix reports CUDA support, a kernel
// runs on this rank's GPU and its result comes back intact. Skips visibly on
// machines without a GPU (CI).
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "mpix.h"
#include "test/gpu/gpu_common.h"

__global__ void fill(unsigned *out, unsigned n, unsigned seed) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = i * 2654435761u ^ seed;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, errors = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (mpix_test::use_gpu_of_rank(rank) < 0) {
    if (rank == 0) std::printf("skipped: no GPU\n");
    MPI_Finalize();
    return 77;
  }
  char lib[MPIX_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPIX_Get_library_version(lib, &len);
  if (std::strstr(lib, "cuda: yes") == nullptr) {
    std::fprintf(stderr, "library says \"%s\"\n", lib);
    errors++;
  }
  const unsigned n = 1u << 24, seed = 0x9e3779b9u + rank;
  unsigned *d = nullptr;
  if (cudaMalloc(&d, n * sizeof(unsigned)) != cudaSuccess) return 1;
  fill<<<264, 256>>>(d, n, seed);
  std::vector<unsigned> h(n);
  cudaError_t err = cudaMemcpy(h.data(), d, n * sizeof(unsigned), cudaMemcpyDeviceToHost);
  if (err != cudaSuccess) {
    std::fprintf(stderr, "cuda: %s\n", cudaGetErrorString(err));
    errors++;
  }
  for (unsigned i = 0; i < n && errors < 10; ++i)
    if (h[i] != (i * 2654435761u ^ seed)) errors++;
  cudaFree(d);
  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf(total == 0 ? " No Errors\n" : " Found %d errors\n", total);
  MPI_Finalize();
  return total != 0;
}
