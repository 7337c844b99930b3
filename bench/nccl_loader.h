// The few NCCL entry points the GPU benchmarks use as a baseline, declared
// with nccl.h 2.x's ABI and loaded at run time, so the benchmarks build
// where NCCL is not installed and leave out its column where it is missing.
#ifndef MPIX_BENCH_NCCL_LOADER_H
#define MPIX_BENCH_NCCL_LOADER_H

#include <cuda_runtime.h>
#include <dlfcn.h>

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
};

#endif
