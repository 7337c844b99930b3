// MPI's progress rule with device buffers: rank 1 posts MPI_Irecv into GPU
// memory and blocks in MPI_Barrier (a call mpix does not intercept) while
// rank 0 sends from GPU memory with MPI_Send (rendezvous sizes: CUDA IPC or
// staged, whichever the environment picks) and MPI_Ssend (eager size). The
// matched transfer needs the receiver's engine to answer ("done" after an
// IPC copy, a go-ahead per staged chunk) while its application thread sits
// in the barrier; the liveness thread must do it, or the job hangs (the
// runner's time limit fails it). Skips without a GPU.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "mpix.h"
#include "test/gpu/gpu_common.h"

namespace {

int g_errors = 0;

__global__ void fill(unsigned *p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = static_cast<unsigned>(i) * 2654435761u + seed;
}

void exchange(MPI_Comm comm, int rank, size_t n, bool sync, unsigned seed) {
  unsigned *d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, n * sizeof(unsigned) + 4));
  CHECK_CUDA(cudaMemset(d, 0, n * sizeof(unsigned) + 4));
  MPI_Request req = MPI_REQUEST_NULL;
  if (rank == 0) {
    fill<<<64, 256>>>(d, n, seed);
    CHECK_CUDA(cudaDeviceSynchronize());
    if (sync) MPI_Ssend(d, static_cast<int>(n), MPI_UNSIGNED, 1, 5, comm);
    else MPI_Send(d, static_cast<int>(n), MPI_UNSIGNED, 1, 5, comm);
  } else if (rank == 1) {
    MPI_Irecv(d, static_cast<int>(n), MPI_UNSIGNED, 0, 5, comm, &req);
  }
  // Rank 0 leaves its send only once rank 1's engine answered, which must
  // happen while rank 1 sits here.
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) {
    MPI_Status st;
    MPI_Wait(&req, &st);
    int count = -1;
    MPI_Get_count(&st, MPI_UNSIGNED, &count);
    std::vector<unsigned> h(n);
    CHECK_CUDA(cudaMemcpy(h.data(), d, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i)
      if (h[i] != static_cast<unsigned>(i) * 2654435761u + seed) ++bad;
    if (bad != 0 || count != static_cast<int>(n)) {
      ++g_errors;
      std::printf("%s of %zu ints: %zu wrong, count %d\n", sync ? "Ssend" : "Send", n, bad, count);
    }
  }
  CHECK_CUDA(cudaFree(d));
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (mpix_test::use_gpu_of_rank(rank) < 0) {
    if (rank == 0) std::printf("skipped: no GPU\n");
    MPI_Finalize();
    return 77;
  }
  MPI_Comm comm;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &comm);
  int handled = 0;
  MPIX_Comm_is_handled(comm, &handled);
  if (!handled) {
    ++g_errors;
    std::printf("the communicator is not handled by mpix\n");
  }
  if (size >= 2) {
    exchange(comm, rank, 1 << 20, false, 1);   // 4 MiB: GPU rendezvous
    exchange(comm, rank, 3 << 18, false, 2);   // 3 MiB: odd chunk counts when staged
    exchange(comm, rank, 16, true, 3);         // synchronous, eager size
    exchange(comm, rank, 1 << 16, true, 4);    // synchronous rendezvous
  }
  MPI_Comm_free(&comm);
  int total = 0;
  MPI_Allreduce(&g_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf(total == 0 ? " No Errors\n" : " Found %d errors\n", total);
  MPI_Finalize();
  return 0;
}
