// Small device-buffer messages through the resident copy kernel
// (device/kernel_copy.h), every payload checked:
//  1. every size 0..80 (inline descriptors end at 35 bytes) and sizes
//     around 4 KiB and MPIX_GPU_KERNEL_COPY_MAX (8 KiB: above it the copy
//     engines take over), at every start offset 0..15 of the buffers, from
//     device to device, device to host and host to device;
//  2. buffer reuse: blocking sends from one device buffer that a kernel
//     refills as soon as each send returns (and the receive buffer
//     overwritten after each check), the kernel living across them;
//  3. 4096 MPI_Isend of distinct device slices before the receiver posts;
//  4. pauses longer than MPIX_GPU_KERNEL_COPY_IDLE_US between messages: the
//     kernel exits and is started again, and cudaDeviceSynchronize returns
//     (a kernel that never left would hang it; the testlist's timeout);
//  5. blocking sends facing each other before their receives;
//  6. 3000 receives posted first (device and host buffers mixed), sizes
//     across the kernel's warp and block copies, its ring's capacity and
//     MPIX_GPU_KERNEL_COPY_DEVICE_MAX, then the sends.
// Within a node, device sources go by rendezvous (the receiver's kernel
// copies from the sender's buffer) unless MPIX_GPU_NODE_EAGER_LIMIT makes
// them eager (the kernel copies to and from host memory); phases 3 and 5
// complete only through the bytes a waiting send sends after its envelope.
// The testlist checks the statistics line for kernel copies and launches.
#include <cuda_runtime.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "mpix.h"
#include "test/gpu/gpu_common.h"

namespace {

int g_rank = 0, errors = 0;

__host__ __device__ inline unsigned char pattern(int round, int size, int i) {
  return static_cast<unsigned char>(round * 131 + size * 7 + i * 13 + 1);
}

__global__ void fill(unsigned char *p, int n, int round, int size) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = pattern(round, size, i);
}

void fill_host(unsigned char *p, int n, int round, int size) {
  for (int i = 0; i < n; ++i) p[i] = pattern(round, size, i);
}

int check(const unsigned char *got, int n, int round, int size, const char *what) {
  for (int i = 0; i < n; ++i)
    if (got[i] != pattern(round, size, i)) {
      CHECK(false, "%s: size %d round %d byte %d: got %d want %d", what, size, round, i, got[i],
            pattern(round, size, i));
      return 1;
    }
  return 0;
}

std::vector<int> sizes() {
  std::vector<int> v;
  for (int n = 0; n <= 80; ++n) v.push_back(n);
  for (int n : {127, 128, 129, 1000, 4095, 4096, 4097, 8191, 8192, 8193, 12000}) v.push_back(n);
  return v;
}

// Start offsets of a message of n bytes: all 16 up to 100 bytes; past
// that aligned, odd, 8- but not 16-byte aligned (the kernel's 8-byte
// pieces), and the last.
std::vector<int> offsets(int n) {
  if (n > 100) return {0, 5, 8, 15};
  std::vector<int> v;
  for (int off = 0; off < 16; ++off) v.push_back(off);
  return v;
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (mpix_test::use_gpu_of_rank(g_rank) < 0 || size != 2) {
    if (g_rank == 0) std::printf("skipped: no GPU (or not 2 ranks)\n");
    MPI_Finalize();
    return 77;
  }
  MPI_Comm comm;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &comm);
  const int peer = 1 - g_rank;
  constexpr int kMax = 16384;
  unsigned char *dev = nullptr, *host = nullptr;
  CHECK_CUDA(cudaMalloc(&dev, kMax + 64));
  std::vector<unsigned char> h(kMax + 64), pageable(kMax + 64);
  CHECK_CUDA(cudaMallocHost(&host, kMax + 64));

  // 1. Sizes x offsets x directions: rank 0 sends, rank 1 receives.
  int round = 0;
  for (int dir = 0; dir < 3; ++dir) {  // 0: dev->dev, 1: dev->host, 2: host->dev
    for (int n : sizes())
      for (int off : offsets(n)) {
        ++round;
        if (g_rank == 0) {
          if (dir == 2) {
            fill_host(pageable.data() + off, n, round, n);
            MPI_Send(pageable.data() + off, n, MPI_BYTE, peer, 1, comm);
          } else {
            fill<<<4, 256>>>(dev + off, n, round, n);
            CHECK_CUDA(cudaDeviceSynchronize());
            MPI_Send(dev + off, n, MPI_BYTE, peer, 1, comm);
          }
        } else {
          MPI_Status st;
          if (dir == 1) {
            MPI_Recv(host + off, n, MPI_BYTE, peer, 1, comm, &st);
            errors += check(host + off, n, round, n, "device to host");
          } else {
            // Synchronised: a device buffer handed to MPI must have no GPU
            // work pending on it (as with every CUDA-aware MPI).
            CHECK_CUDA(cudaMemset(dev, 0xee, kMax + 64));
            CHECK_CUDA(cudaDeviceSynchronize());
            MPI_Recv(dev + off, n, MPI_BYTE, peer, 1, comm, &st);
            CHECK_CUDA(cudaMemcpy(h.data(), dev, kMax + 64, cudaMemcpyDeviceToHost));
            errors += check(h.data() + off, n, round, n, dir == 0 ? "device to device" : "host to device");
            // Nothing written around the message.
            for (int i = 0; i < off; ++i) CHECK(h[i] == 0xee, "byte %d before the message written (size %d)", i, n);
            CHECK(h[off + n] == 0xee, "byte after the message written (size %d, offset %d)", n, off);
          }
          int got = -1;
          MPI_Get_count(&st, MPI_BYTE, &got);
          CHECK(got == n, "count %d, want %d", got, n);
        }
      }
  }

  // 2. Reuse on return: rank 0's kernel overwrites the buffer right after
  // each send returns (same stream order as the next fill).
  for (int i = 0; i < 2000; ++i) {
    const int n = 1 + (i * 37) % 8192;
    ++round;
    if (g_rank == 0) {
      fill<<<8, 256>>>(dev, n, round, n);
      CHECK_CUDA(cudaDeviceSynchronize());
      MPI_Send(dev, n, MPI_BYTE, peer, 2, comm);
      fill<<<8, 256>>>(dev, n, round + 1000000, n);  // the next message's bytes must not leak into this one
    } else {
      MPI_Recv(dev, n, MPI_BYTE, peer, 2, comm, MPI_STATUS_IGNORE);
      CHECK_CUDA(cudaMemcpy(h.data(), dev, n, cudaMemcpyDeviceToHost));
      errors += check(h.data(), n, round, n, "reused send buffer");
    }
  }
  CHECK_CUDA(cudaDeviceSynchronize());

  // 3. Thousands in flight: 4096 slices of one device pattern, sent before
  // the receiver posts anything.
  {
    constexpr int kCount = 4096, kSlice = 24;
    unsigned char *big = nullptr;
    CHECK_CUDA(cudaMalloc(&big, kCount * kSlice));
    ++round;
    std::vector<MPI_Request> reqs(kCount);
    if (g_rank == 0) {
      fill<<<64, 256>>>(big, kCount * kSlice, round, kSlice);
      CHECK_CUDA(cudaDeviceSynchronize());
      for (int i = 0; i < kCount; ++i) MPI_Isend(big + i * kSlice, kSlice, MPI_BYTE, peer, 3, comm, &reqs[i]);
      MPI_Waitall(kCount, reqs.data(), MPI_STATUSES_IGNORE);
      MPI_Barrier(comm);
    } else {
      MPI_Barrier(comm);  // everything sent (eager) before the first receive
      for (int i = 0; i < kCount; ++i) MPI_Irecv(big + i * kSlice, kSlice, MPI_BYTE, peer, 3, comm, &reqs[i]);
      MPI_Waitall(kCount, reqs.data(), MPI_STATUSES_IGNORE);
      std::vector<unsigned char> all(kCount * kSlice);
      CHECK_CUDA(cudaMemcpy(all.data(), big, all.size(), cudaMemcpyDeviceToHost));
      errors += check(all.data(), kCount * kSlice, round, kSlice, "4096 in flight");
    }
    CHECK_CUDA(cudaFree(big));
  }

  // 4. Pauses: the kernel exits between messages and comes back.
  for (int i = 0; i < 20; ++i) {
    ++round;
    usleep(2000);
    if (g_rank == 0) {
      fill<<<1, 64>>>(dev, 8, round, 8);
      CHECK_CUDA(cudaDeviceSynchronize());
      MPI_Send(dev, 8, MPI_BYTE, peer, 4, comm);
    } else {
      MPI_Recv(dev, 8, MPI_BYTE, peer, 4, comm, MPI_STATUS_IGNORE);
      CHECK_CUDA(cudaMemcpy(h.data(), dev, 8, cudaMemcpyDeviceToHost));
      errors += check(h.data(), 8, round, 8, "after a pause");
    }
    CHECK_CUDA(cudaDeviceSynchronize());
  }

  // 5. Two blocking sends facing each other, then the receives (what many
  // programs do with small messages): within a node small device sends go
  // by rendezvous, and must complete by sending their bytes after a wait
  // (MPIX_GPU_BUFFER_AFTER_US) instead of waiting for the receive forever.
  for (int n : {1, 8, 4096, 8192})
    for (int i = 0; i < 5; ++i) {
      ++round;
      fill<<<4, 256>>>(dev, n, round + g_rank, n);
      CHECK_CUDA(cudaDeviceSynchronize());
      MPI_Send(dev, n, MPI_BYTE, peer, 5, comm);
      fill<<<4, 256>>>(dev, n, -1, n);  // reused at once
      CHECK_CUDA(cudaDeviceSynchronize());
      MPI_Recv(dev, n, MPI_BYTE, peer, 5, comm, MPI_STATUS_IGNORE);
      CHECK_CUDA(cudaMemcpy(h.data(), dev, n, cudaMemcpyDeviceToHost));
      errors += check(h.data(), n, round + peer, n, "facing sends");
    }

  // 6. Receives posted first, thousands in flight: within a node each
  // arrival's copy is posted to the kernel without waiting, and the kernel
  // takes the ones posted in a row together (a warp each up to 2 KiB, the
  // whole block above; the copy engines once its 63 slots are busy, or above
  // MPIX_GPU_KERNEL_COPY_DEVICE_MAX). Sizes across those thresholds and the
  // inline limit, odd offsets, every fifth receive into host memory on the
  // same communicator; every message a pattern of its own.
  {
    const int ksz[] = {1, 8, 35, 36, 100, 2047, 2048, 2049, 4096, 16384, 65536, 65537, 0, 24};
    constexpr int kCount = 3000, kSizes = sizeof ksz / sizeof ksz[0];
    std::vector<std::size_t> at(kCount + 1, 0);
    for (int i = 0; i < kCount; ++i) at[i + 1] = at[i] + static_cast<std::size_t>(ksz[i % kSizes]) + 1 + i % 7;
    const std::size_t total = at[kCount];
    unsigned char *dbig = nullptr;
    CHECK_CUDA(cudaMalloc(&dbig, total));
    std::vector<unsigned char> hbig(total, 0xee);
    std::vector<MPI_Request> reqs(kCount);
    const int round0 = round + 1;
    round += kCount;
    if (g_rank == 0) {
      for (int i = 0; i < kCount; ++i) fill_host(hbig.data() + at[i], ksz[i % kSizes], round0 + i, ksz[i % kSizes]);
      CHECK_CUDA(cudaMemcpy(dbig, hbig.data(), total, cudaMemcpyHostToDevice));
      MPI_Barrier(comm);  // every receive posted
      for (int i = 0; i < kCount; ++i) MPI_Isend(dbig + at[i], ksz[i % kSizes], MPI_BYTE, peer, 6, comm, &reqs[i]);
      // Reused at once: the receiver's copies must have read it all.
      MPI_Waitall(kCount, reqs.data(), MPI_STATUSES_IGNORE);
      CHECK_CUDA(cudaMemset(dbig, 0x5a, total));
      CHECK_CUDA(cudaDeviceSynchronize());
    } else {
      CHECK_CUDA(cudaMemset(dbig, 0xee, total));
      CHECK_CUDA(cudaDeviceSynchronize());
      for (int i = 0; i < kCount; ++i) {
        unsigned char *into = i % 5 == 4 ? hbig.data() + at[i] : dbig + at[i];
        MPI_Irecv(into, ksz[i % kSizes], MPI_BYTE, peer, 6, comm, &reqs[i]);
      }
      MPI_Barrier(comm);
      std::vector<MPI_Status> st(kCount);
      MPI_Waitall(kCount, reqs.data(), st.data());
      std::vector<unsigned char> got(total);
      CHECK_CUDA(cudaMemcpy(got.data(), dbig, total, cudaMemcpyDeviceToHost));
      int bad = 0;
      for (int i = 0; i < kCount && bad < 5; ++i) {
        const int n = ksz[i % kSizes];
        const unsigned char *p = i % 5 == 4 ? hbig.data() + at[i] : got.data() + at[i];
        bad += check(p, n, round0 + i, n, i % 5 == 4 ? "posted first, into host memory" : "posted first");
        // Nothing written past the message (the gap before the next one).
        for (std::size_t j = at[i] + static_cast<std::size_t>(n); j < at[i + 1]; ++j)
          if ((i % 5 == 4 ? hbig[j] : got[j]) != 0xee) {
            CHECK(false, "posted first: byte %zu after message %d (%d bytes) written", j - at[i], i, n);
            ++bad;
            break;
          }
        int count = -1;
        MPI_Get_count(&st[i], MPI_BYTE, &count);
        if (count != n) {
          CHECK(false, "posted first: message %d count %d, want %d", i, count, n);
          ++bad;
        }
      }
      errors += bad;
    }
    CHECK_CUDA(cudaFree(dbig));
  }

  int all = errors;
  MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf(all == 0 ? " No Errors\n" : " Found %d errors\n", all);
  CHECK_CUDA(cudaFree(dev));
  CHECK_CUDA(cudaFreeHost(host));
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
