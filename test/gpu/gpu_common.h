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
#include <cstring>

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

// CHECK(cond, fmt, ...): a failed check names itself, its place and the
// rank, and counts in the test's own `errors` (the test defines `errors` and
// `g_rank`); the test goes on, and reports the total at the end.
#define CHECK(cond, ...)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "[rank %d] %s:%d: %s: ", g_rank, __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                  \
      std::fprintf(stderr, "\n");                                                         \
      ++errors;                                                                           \
    }                                                                                     \
  } while (0)

namespace mpix_test {

// MPI_Init for a program of two ranks with a GPU each (or both on one):
// makes GPU rank % count current and returns true; otherwise says
// "skipped: ..." on rank 0, finalizes, and returns false (exit with 77).
inline bool init_two_ranks_with_gpu(int *argc, char ***argv, int *rank, int *ngpu) {
  MPI_Init(argc, argv);
  int nprocs = 0;
  *ngpu = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  if (cudaGetDeviceCount(ngpu) != cudaSuccess || *ngpu == 0 || nprocs != 2) {
    (void)cudaGetLastError();
    if (*rank == 0) std::printf("skipped: needs 2 ranks and a GPU (ranks %d, GPUs %d)\n", nprocs, *ngpu);
    MPI_Finalize();
    return false;
  }
  CHECK_CUDA(cudaSetDevice(*rank % *ngpu));
  return true;
}

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

// The GPU programs' prologue: MPI at MPI_THREAD_MULTIPLE, this rank's GPU
// current. false (after "skipped: no GPU" and MPI_Finalize: exit 77) on a
// machine without one.
inline bool init_with_gpu(int *argc, char ***argv, int *rank, int *size) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  if (use_gpu_of_rank(*rank) >= 0) return true;
  if (*rank == 0) std::printf("skipped: no GPU\n");
  MPI_Finalize();
  return false;
}

// How many ranks of comm use this rank's GPU (by PCI bus id): they share
// its SMs, so kernels that must run at the same time are sized by it.
inline int ranks_on_my_gpu(MPI_Comm comm) {
  int dev = 0, size = 1;
  CHECK_CUDA(cudaGetDevice(&dev));
  char mine[32] = {};
  CHECK_CUDA(cudaDeviceGetPCIBusId(mine, sizeof mine, dev));
  MPI_Comm_size(comm, &size);
  char *all = static_cast<char *>(std::calloc(static_cast<size_t>(size), sizeof mine));
  MPI_Allgather(mine, sizeof mine, MPI_CHAR, all, sizeof mine, MPI_CHAR, comm);
  int n = 0;
  for (int r = 0; r < size; ++r) n += std::strncmp(all + r * sizeof mine, mine, sizeof mine) == 0;
  std::free(all);
  return n;
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

// mpix's count of pulled stream sends (MPI_T counter
// mpix_stream_sends_pulled), from the first call on; -1 where the variable
// is missing.
inline long long pulled_sends() {
  static MPI_T_pvar_session session;
  static MPI_T_pvar_handle handle = MPI_T_PVAR_HANDLE_NULL;
  static bool opened = false, ok = false;
  if (!opened) {
    opened = true;
    int provided = 0, index = -1, count = 0;
    ok = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS &&
         MPI_T_pvar_session_create(&session) == MPI_SUCCESS &&
         MPI_T_pvar_get_index("mpix_stream_sends_pulled", MPI_T_PVAR_CLASS_COUNTER, &index) == MPI_SUCCESS &&
         MPI_T_pvar_handle_alloc(session, index, nullptr, &handle, &count) == MPI_SUCCESS;
  }
  unsigned long long v = 0;
  if (!ok || MPI_T_pvar_read(session, handle, &v) != MPI_SUCCESS) return -1;
  return static_cast<long long>(v);
}

// Whether `word` is one of the comma-separated words of `list` (a
// benchmark's "only these parts" option).
inline bool listed(const char *list, const char *word) {
  const std::size_t n = std::strlen(word);
  for (const char *p = list; p != nullptr && *p != '\0';) {
    const char *comma = std::strchr(p, ',');
    const std::size_t len = comma != nullptr ? static_cast<std::size_t>(comma - p) : std::strlen(p);
    if (len == n && std::strncmp(p, word, n) == 0) return true;
    p = comma != nullptr ? comma + 1 : nullptr;
  }
  return false;
}

}  // namespace mpix_test

#endif
