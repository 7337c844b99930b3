// The few NCCL entry points the GPU benchmarks use as a baseline, declared
// with nccl.h 2.x's ABI and loaded at run time, so the benchmarks build
// where NCCL is not installed and leave out its column where it is missing.
#ifndef MPIX_BENCH_NCCL_LOADER_H
#define MPIX_BENCH_NCCL_LOADER_H

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>

#include <cstddef>

struct NcclUniqueId {
  char internal[128];
};
using NcclComm = struct NcclCommOpaque *;
constexpr int kNcclInt8 = 0;

struct Nccl {
  int (*get_unique_id)(NcclUniqueId *) = nullptr;
  int (*comm_init_rank)(NcclComm *, int, NcclUniqueId, int) = nullptr;
  int (*send)(const void *, std::size_t, int, int, NcclComm, cudaStream_t) = nullptr;
  int (*recv)(void *, std::size_t, int, int, NcclComm, cudaStream_t) = nullptr;
  int (*comm_destroy)(NcclComm) = nullptr;
  int (*group_start)() = nullptr;  // for a send and a receive that must proceed together
  int (*group_end)() = nullptr;
  bool load() {
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) h = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) return false;
    get_unique_id = reinterpret_cast<decltype(get_unique_id)>(dlsym(h, "ncclGetUniqueId"));
    comm_init_rank = reinterpret_cast<decltype(comm_init_rank)>(dlsym(h, "ncclCommInitRank"));
    send = reinterpret_cast<decltype(send)>(dlsym(h, "ncclSend"));
    recv = reinterpret_cast<decltype(recv)>(dlsym(h, "ncclRecv"));
    comm_destroy = reinterpret_cast<decltype(comm_destroy)>(dlsym(h, "ncclCommDestroy"));
    group_start = reinterpret_cast<decltype(group_start)>(dlsym(h, "ncclGroupStart"));
    group_end = reinterpret_cast<decltype(group_end)>(dlsym(h, "ncclGroupEnd"));
    return get_unique_id && comm_init_rank && send && recv && comm_destroy && group_start && group_end;
  }
  // Loads NCCL and makes a communicator of every MPI_COMM_WORLD rank
  // (collective); false, with *comm null, where some rank could not (or
  // `wanted` is false on some rank): the benchmark leaves NCCL out.
  bool world_comm(bool wanted, NcclComm *comm) {
    *comm = nullptr;
    int rank = 0, size = 0, ok = wanted && load() ? 1 : 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) return false;
    NcclUniqueId id{};
    if (rank == 0) get_unique_id(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ok = comm_init_rank(comm, size, id, rank) == 0 ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok && *comm != nullptr) comm_destroy(*comm);
    if (!ok) *comm = nullptr;
    return ok == 1;
  }
};

#endif
