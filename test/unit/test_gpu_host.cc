// Host-side logic of the GPU point-to-point paths, without a GPU: chunk
// planning, the IPC mapping cache, the pinned slot pool, and memory-type
// detection against a fake CUDA driver (no driver, driver not initialised,
// device / managed / host pointers).
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "device/memtype.h"
#include "src/p2p/gpu_cache.h"
#include "src/p2p/gpu_tags.h"

using mpix::p2p::ChunkPlan;
using mpix::p2p::IpcCache;
using mpix::p2p::IpcKey;
using mpix::p2p::plan_chunks;
using mpix::p2p::SlotPool;

TEST(GpuChunkPlan, CoversEveryByteOnce) {
  for (std::size_t total : {0ul, 1ul, 4095ul, 4096ul, 4097ul, 12288ul, (256ul << 20) + 3}) {
    for (std::size_t chunk : {1ul, 4096ul, 4ul << 20}) {
      if (chunk == 1 && total > 65536) continue;  // millions of checks, nothing new
      const ChunkPlan p = plan_chunks(total, chunk);
      std::size_t sum = 0;
      for (std::size_t i = 0; i < p.count(); ++i) {
        EXPECT_EQ(p.offset(i), sum);
        EXPECT_GT(p.length(i), 0u);
        EXPECT_LE(p.length(i), chunk);
        sum += p.length(i);
      }
      EXPECT_EQ(sum, total) << total << "/" << chunk;
      EXPECT_EQ(p.length(p.count()), 0u);
    }
  }
}

TEST(GpuChunkPlan, ZeroChunkIsOneByte) {
  const ChunkPlan p = plan_chunks(3, 0);
  EXPECT_EQ(p.count(), 3u);
}

namespace {

// The driver as seen on an H100 (driver 580): a handle opened twice maps
// once; a new allocation overlapping one whose mapping is still open is
// refused (cudaErrorAlreadyMapped, 208); closing a mapping waits for every
// kernel of the process, a deadlock while a kernel waits for the message
// being received (kernel_waiting).
struct FakeIpc {
  static constexpr int kAlreadyMapped = 208;
  struct Mapping {
    IpcKey key;
    int refs = 0;
  };
  std::map<void *, Mapping> open;  // mapping -> what it maps
  int next = 1;
  int fail_next = 0;
  int refused = 0;
  bool kernel_waiting = false;
  IpcCache cache(std::size_t capacity) {
    return IpcCache(
        capacity,
        [this](const IpcKey &k, void **p) {
          if (fail_next) return fail_next;
          for (auto &m : open) {
            if (m.second.key.bytes() == k.bytes()) {
              ++m.second.refs;
              *p = m.first;
              return 0;
            }
          }
          for (auto &m : open) {
            if (m.second.key.overlaps(k)) {
              ++refused;
              return kAlreadyMapped;
            }
          }
          *p = reinterpret_cast<void *>(static_cast<std::uintptr_t>(0x1000 * next++));
          open[*p] = Mapping{k, 1};
          return 0;
        },
        [this](void *p) {
          ASSERT_FALSE(kernel_waiting) << "closed a mapping while a kernel waits: deadlock";
          ASSERT_EQ(open.count(p), 1u) << "closed a mapping that is not open";
          if (--open[p].refs == 0) open.erase(p);
        });
  }
};

IpcKey key(int pid, std::uint64_t base, unsigned char h, std::uint64_t size = 0x100) {
  IpcKey k;
  k.host = 42;
  k.pid = pid;
  k.base = base;
  k.size = size;
  std::memset(k.handle, h, sizeof k.handle);
  return k;
}

}  // namespace

TEST(GpuIpcCache, MapsOncePerAllocation) {
  FakeIpc f;
  {
    IpcCache c = f.cache(8);
    void *a = nullptr, *b = nullptr;
    ASSERT_EQ(c.acquire(key(1, 0x100, 7), &a), 0);
    c.release(key(1, 0x100, 7));
    ASSERT_EQ(c.acquire(key(1, 0x100, 7), &b), 0);
    c.release(key(1, 0x100, 7));
    EXPECT_EQ(a, b);
    EXPECT_EQ(c.hits(), 1u);
    EXPECT_EQ(c.misses(), 1u);
    EXPECT_EQ(f.open.size(), 1u);
  }
  EXPECT_TRUE(f.open.empty()) << "destruction closes every mapping";
}

TEST(GpuIpcCache, ReusedAddressWithNewHandleNeverGetsTheStaleMapping) {
  // The sender freed and reallocated at the same base: a new handle. The
  // stale mapping must not be used for it, nor the driver asked to map it
  // while the stale one is open.
  FakeIpc f;
  IpcCache c = f.cache(8);
  void *a = nullptr, *b = nullptr, *d = nullptr;
  ASSERT_EQ(c.acquire(key(1, 0x100, 7), &a), 0);
  c.release(key(1, 0x100, 7));
  EXPECT_EQ(c.acquire(key(1, 0x100, 8), &b), IpcCache::kStale);
  EXPECT_EQ(b, nullptr);
  ASSERT_EQ(c.acquire(key(2, 0x100, 7), &d), 0);  // another process, same numbers
  EXPECT_NE(a, d);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(f.refused, 0);
}

TEST(GpuIpcCache, FreedAndReallocatedInPlaceIsStagedWithoutAFailedOpen) {
  // dev_p2p's sender on an H100: a 16449-byte buffer at +0x200 of a block,
  // sent, freed; the next buffers (16448, 16449, 70066 bytes) at +0x400.
  // The old cache opened each and the driver refused all three (six errors
  // under compute-sanitizer). Now: no open, no close (a kernel is waiting
  // for these very messages), the transfers are staged.
  FakeIpc f;
  IpcCache c = f.cache(256);
  const std::uint64_t block = 0x7f3ecca00000;
  void *p = nullptr;
  ASSERT_EQ(c.acquire(key(1, block + 0x200, 1, 16449), &p), 0);
  c.release(key(1, block + 0x200, 1, 16449));
  f.kernel_waiting = true;
  const IpcKey next[] = {key(1, block + 0x400, 2, 16448), key(1, block + 0x400, 3, 16449),
                         key(1, block + 0x400, 4, 70066)};
  for (const IpcKey &k : next) {
    void *q = nullptr;
    EXPECT_EQ(c.acquire(k, &q), IpcCache::kStale);
    EXPECT_EQ(q, nullptr);
  }
  EXPECT_EQ(f.refused, 0) << "the driver was asked to map over a stale mapping";
  EXPECT_EQ(c.stale(), 3u);
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(f.open.size(), 1u);
  f.kernel_waiting = false;
}

TEST(GpuIpcCache, NeighboursOfOneBlockBothMap) {
  // Live allocations never overlap: adjacent ones (small cudaMallocs share
  // 2 MiB blocks) are no stale mappings of each other.
  FakeIpc f;
  IpcCache c = f.cache(8);
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(c.acquire(key(1, 0x200000, 1, 0x4200), &a), 0);
  ASSERT_EQ(c.acquire(key(1, 0x204200, 2, 0x4200), &b), 0);
  EXPECT_NE(a, b);
  EXPECT_EQ(c.stale(), 0u);
  EXPECT_EQ(c.size(), 2u);
}

TEST(GpuIpcCache, OverlapCountsWithinOneExporterOnly) {
  FakeIpc f;
  IpcCache c = f.cache(8);
  void *p = nullptr;
  IpcKey other_host = key(1, 0x100, 9);
  other_host.host = 43;
  ASSERT_EQ(c.acquire(key(1, 0x100, 7, 0x1000), &p), 0);
  EXPECT_EQ(c.acquire(key(2, 0x800, 8), &p), 0);
  EXPECT_EQ(c.acquire(other_host, &p), 0);
  EXPECT_EQ(c.acquire(key(1, 0x1100, 8), &p), 0) << "ends are exclusive";
  EXPECT_EQ(c.acquire(key(1, 0xfff, 9, 1), &p), IpcCache::kStale);
  EXPECT_EQ(c.acquire(key(1, 0x0, 9, 0x101), &p), IpcCache::kStale);
}

TEST(GpuIpcCache, StaleMappingGoneTheNewAllocationMaps) {
  // Once the stale mapping is closed (evicted when idle, or at
  // MPI_Finalize), an allocation at its addresses maps again.
  FakeIpc f;
  IpcCache c = f.cache(2);
  void *p = nullptr;
  ASSERT_EQ(c.acquire(key(1, 0x100, 7), &p), 0);
  c.release(key(1, 0x100, 7));
  EXPECT_EQ(c.acquire(key(1, 0x100, 8), &p), IpcCache::kStale);
  for (unsigned char h : {20, 21}) {
    ASSERT_EQ(c.acquire(key(1, 0x10000 * h, h), &p), 0);
    c.release(key(1, 0x10000 * h, h));
  }
  EXPECT_EQ(c.evictions(), 1u);
  void *b = nullptr;
  EXPECT_EQ(c.acquire(key(1, 0x100, 8), &b), 0);
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(f.refused, 0);
}

TEST(GpuIpcCache, InUseMappingOverlapIsStaleToo) {
  // A buffer freed while its send is in flight (an erroneous program): the
  // mapping a copy uses is not closed, the new allocation is staged.
  FakeIpc f;
  IpcCache c = f.cache(0);
  void *p = nullptr;
  ASSERT_EQ(c.acquire(key(1, 0x100, 7), &p), 0);
  EXPECT_EQ(c.acquire(key(1, 0x180, 8), &p), IpcCache::kStale);
  EXPECT_EQ(f.open.size(), 1u);
  c.release(key(1, 0x100, 7));
  EXPECT_TRUE(f.open.empty());
  EXPECT_EQ(c.acquire(key(1, 0x180, 8), &p), 0);
}

TEST(GpuIpcCache, EvictsLeastRecentlyUsedButNeverInUse) {
  FakeIpc f;
  IpcCache c = f.cache(2);
  void *p = nullptr;
  ASSERT_EQ(c.acquire(key(1, 0x10000, 1), &p), 0);  // stays in use
  ASSERT_EQ(c.acquire(key(1, 0x20000, 2), &p), 0);
  c.release(key(1, 0x20000, 2));
  ASSERT_EQ(c.acquire(key(1, 0x30000, 3), &p), 0);
  c.release(key(1, 0x30000, 3));
  // Over capacity: key 2 (idle, oldest idle) went, key 1 (in use) stayed.
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.evictions(), 1u);
  ASSERT_EQ(c.acquire(key(1, 0x10000, 1), &p), 0);
  EXPECT_EQ(c.hits(), 1u);
  c.release(key(1, 0x10000, 1));
  c.release(key(1, 0x10000, 1));
  c.clear();
  EXPECT_EQ(c.size(), 0u);
  EXPECT_TRUE(f.open.empty());
}

TEST(GpuIpcCache, CapacityZeroClosesAfterEachTransfer) {
  FakeIpc f;
  IpcCache c = f.cache(0);
  void *p = nullptr;
  ASSERT_EQ(c.acquire(key(1, 1, 1), &p), 0);
  EXPECT_EQ(f.open.size(), 1u) << "open while in use";
  c.release(key(1, 1, 1));
  EXPECT_TRUE(f.open.empty());
}

TEST(GpuIpcCache, EntryFoundLastIsForgottenWhenClosed) {
  // acquire() tries the entry it found last before hashing: once that entry
  // is evicted or cleared, the same key must map again, never reach the
  // closed mapping.
  FakeIpc f;
  IpcCache c = f.cache(1);
  void *a = nullptr, *b = nullptr, *p = nullptr;
  ASSERT_EQ(c.acquire(key(1, 0x100, 7), &a), 0);  // stays in use
  ASSERT_EQ(c.acquire(key(1, 0x200, 8), &b), 0);
  ASSERT_EQ(c.acquire(key(1, 0x200, 8), &p), 0);  // found last: a hit
  EXPECT_EQ(p, b);
  EXPECT_EQ(c.hits(), 1u);
  c.release(key(1, 0x200, 8));
  c.release(key(1, 0x200, 8));  // idle, over capacity, the first in use: closed
  EXPECT_EQ(c.evictions(), 1u);
  EXPECT_EQ(f.open.count(b), 0u);
  ASSERT_EQ(c.acquire(key(1, 0x200, 8), &p), 0);  // maps again
  EXPECT_EQ(c.misses(), 3u);
  EXPECT_EQ(f.open.count(p), 1u);
  c.release(key(1, 0x100, 7));  // the first closed; the one found last stays open
  c.release(key(1, 0x200, 8));
  EXPECT_EQ(c.size(), 1u);
  c.clear();
  EXPECT_EQ(c.size(), 0u);
  EXPECT_TRUE(f.open.empty());
  ASSERT_EQ(c.acquire(key(1, 0x200, 8), &p), 0);  // after clear(): a miss, not the closed entry
  EXPECT_EQ(c.misses(), 4u);
  EXPECT_EQ(f.open.size(), 1u);
  c.release(key(1, 0x200, 8));
}

TEST(GpuIpcCache, OpenFailureLeavesNothing) {
  FakeIpc f;
  IpcCache c = f.cache(4);
  f.fail_next = 201;
  void *p = nullptr;
  EXPECT_EQ(c.acquire(key(1, 1, 1), &p), 201);
  EXPECT_EQ(c.size(), 0u);
  c.release(key(1, 1, 1));  // harmless
}

TEST(GpuSlotPool, AllocatesOnceAndReuses) {
  int allocs = 0, frees = 0;
  {
    SlotPool pool(
        4096, [&](std::size_t n) { ++allocs; return std::malloc(n); },
        [&](void *p) { ++frees; std::free(p); });
    void *a = pool.acquire();
    void *b = pool.acquire();
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_NE(a, b);
    pool.release(a);
    EXPECT_EQ(pool.acquire(), a);
    pool.release(a);
    pool.release(b);
    for (int i = 0; i < 100; ++i) pool.release(pool.acquire());
    EXPECT_EQ(allocs, 2);
    EXPECT_EQ(pool.allocated(), 2u);
    EXPECT_EQ(pool.idle(), 2u);
  }
  EXPECT_EQ(frees, 2);
}

TEST(GpuSlotPool, AllocationFailureIsNull) {
  SlotPool pool(64, [](std::size_t) -> void * { return nullptr; }, [](void *) {});
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.allocated(), 0u);
}

// ---- memory types against a fake driver ----
namespace {

namespace cu = mpix::device::cu;

// [lo, hi): device memory of GPU 1; [mlo, mhi): managed memory.
char g_device_mem[1 << 16];
char g_managed_mem[4096];
// Device memory outside the program's data: an mmap'ed region (tests of
// the host ranges, which take the program's static data for host memory).
char *g_mapped_device = nullptr;
std::size_t g_mapped_bytes = 0;
bool g_initialised = true;
bool g_attributes_unsupported = false;
int g_calls = 0;

bool in(const void *p, const char *mem, std::size_t n) {
  auto a = reinterpret_cast<std::uintptr_t>(p), lo = reinterpret_cast<std::uintptr_t>(mem);
  return a >= lo && a < lo + n;
}

int fake_attr(void *data, int attr, unsigned long long ptr) {
  ++g_calls;
  if (!g_initialised) return cu::kNotInitialized;
  const void *p = reinterpret_cast<const void *>(ptr);
  const bool dev = in(p, g_device_mem, sizeof g_device_mem) || in(p, g_mapped_device, g_mapped_bytes);
  const bool man = in(p, g_managed_mem, sizeof g_managed_mem);
  if (!dev && !man) return 1;  // CUDA_ERROR_INVALID_VALUE: plain host memory
  switch (attr) {
    case cu::kAttrMemoryType: *static_cast<unsigned *>(data) = cu::kMemoryTypeDevice; return 0;
    case cu::kAttrIsManaged: *static_cast<unsigned *>(data) = man ? 1 : 0; return 0;
    case cu::kAttrDeviceOrdinal: *static_cast<int *>(data) = 1; return 0;
    default: return 1;
  }
}

int fake_attrs(unsigned n, int *attrs, void **data, unsigned long long ptr) {
  ++g_calls;
  if (!g_initialised) return cu::kNotInitialized;
  if (g_attributes_unsupported) return 1;
  const void *p = reinterpret_cast<const void *>(ptr);
  const bool dev = in(p, g_device_mem, sizeof g_device_mem) || in(p, g_mapped_device, g_mapped_bytes);
  const bool man = in(p, g_managed_mem, sizeof g_managed_mem);
  for (unsigned i = 0; i < n; ++i) {
    if (!dev && !man) continue;  // defaults stay zero, like the real call
    switch (attrs[i]) {
      case cu::kAttrMemoryType: *static_cast<unsigned *>(data[i]) = cu::kMemoryTypeDevice; break;
      case cu::kAttrIsManaged: *static_cast<unsigned *>(data[i]) = man ? 1 : 0; break;
      case cu::kAttrDeviceOrdinal: *static_cast<int *>(data[i]) = 1; break;
      case cu::kAttrBufferId: *static_cast<unsigned long long *>(data[i]) = 77; break;
      case cu::kAttrIsLegacyIpcCapable: *static_cast<bool *>(data[i]) = true; break;
      case cu::kAttrRangeStartAddr:
        *static_cast<unsigned long long *>(data[i]) = reinterpret_cast<std::uintptr_t>(g_device_mem);
        break;
      case cu::kAttrRangeSize: *static_cast<std::size_t *>(data[i]) = sizeof g_device_mem; break;
      default: break;
    }
  }
  return 0;
}

const mpix::device::DriverApi kFake{fake_attr, fake_attrs};

class MemType : public ::testing::Test {
 protected:
  void SetUp() override {
    g_initialised = true;
    g_attributes_unsupported = false;
    g_calls = 0;
    mpix::device::memtype_set_driver_for_testing(&kFake);
  }
  void TearDown() override {
    mpix::device::memtype_set_driver_for_testing(nullptr);
    mpix::device::memtype_host_ranges(false);
  }
};

}  // namespace

TEST(MemTypeNoDriver, EverythingIsHost) {
  mpix::device::memtype_set_driver_for_testing(nullptr);
  EXPECT_FALSE(mpix::device::is_device(g_device_mem));
  EXPECT_EQ(mpix::device::query(g_device_mem).kind, mpix::device::MemKind::kHost);
  EXPECT_FALSE(mpix::device::memtype_driver_loaded());
}

TEST(MemTypeNoDriver, InitWithoutLibcudaOrDisabledIsHost) {
  // On CI there is no libcuda.so.1; with it (GPU machine) a plain host
  // buffer is still host. MPIX_GPU=off never asks.
  mpix::device::memtype_init(true);
  std::vector<char> host(64);
  EXPECT_FALSE(mpix::device::is_device(host.data()));
  EXPECT_FALSE(mpix::device::is_device(nullptr));
  mpix::device::memtype_init(false);
  EXPECT_FALSE(mpix::device::memtype_driver_loaded());
}

TEST_F(MemType, HostPointersCostOneCall) {
  std::vector<char> host(64);
  EXPECT_FALSE(mpix::device::is_device(host.data()));
  EXPECT_EQ(g_calls, 1);
  EXPECT_EQ(mpix::device::query(host.data()).kind, mpix::device::MemKind::kHost);
}

TEST_F(MemType, DriverNotInitialisedMeansHostInOneCall) {
  g_initialised = false;
  EXPECT_FALSE(mpix::device::is_device(g_device_mem));
  EXPECT_EQ(g_calls, 1);
  EXPECT_EQ(mpix::device::query(g_device_mem).kind, mpix::device::MemKind::kHost);
  EXPECT_EQ(g_calls, 2);
  EXPECT_EQ(mpix::device::device_of(g_device_mem), -1);
  EXPECT_EQ(g_calls, 3) << "no one-attribute fallback after \"not initialised\"";
}

TEST_F(MemType, DevicePointerIsDescribed) {
  EXPECT_TRUE(mpix::device::is_device(g_device_mem + 100));
  const mpix::device::PtrInfo i = mpix::device::query(g_device_mem + 100);
  EXPECT_EQ(i.kind, mpix::device::MemKind::kDevice);
  EXPECT_EQ(i.device, 1);
  EXPECT_EQ(i.buffer_id, 77u);
  EXPECT_EQ(i.base, reinterpret_cast<std::uintptr_t>(g_device_mem));
  EXPECT_EQ(i.size, sizeof g_device_mem);
  EXPECT_TRUE(i.ipc_capable);
}

// A receive's classification (device_of) and a send's (query) are one call
// each, whatever the memory: the device paths ask nothing twice.
TEST_F(MemType, DeviceOfNamesTheGpuInOneCall) {
  std::vector<char> host(64);
  EXPECT_EQ(mpix::device::device_of(g_device_mem + 5), 1);
  EXPECT_EQ(g_calls, 1);
  EXPECT_EQ(mpix::device::device_of(host.data()), -1);
  EXPECT_EQ(mpix::device::device_of(g_managed_mem), -1);
  EXPECT_EQ(mpix::device::device_of(nullptr), -1);
  EXPECT_EQ(g_calls, 3);
  EXPECT_EQ(mpix::device::query(host.data()).kind, mpix::device::MemKind::kHost);
  EXPECT_EQ(g_calls, 4);
  g_initialised = false;
  EXPECT_EQ(mpix::device::device_of(g_device_mem), -1);
}

TEST_F(MemType, DeviceOfOnAnOldDriverStillNamesTheGpu) {
  g_attributes_unsupported = true;
  std::vector<char> host(64);
  EXPECT_EQ(mpix::device::device_of(g_device_mem), 1);
  EXPECT_EQ(mpix::device::device_of(host.data()), -1);
  EXPECT_EQ(mpix::device::device_of(g_managed_mem), -1);
}

TEST_F(MemType, ManagedMemoryIsHostAccessible) {
  EXPECT_FALSE(mpix::device::is_device(g_managed_mem));
  EXPECT_EQ(mpix::device::query(g_managed_mem).kind, mpix::device::MemKind::kManaged);
}

TEST_F(MemType, OldDriverFallsBackWithoutIpc) {
  g_attributes_unsupported = true;
  const mpix::device::PtrInfo i = mpix::device::query(g_device_mem);
  EXPECT_EQ(i.kind, mpix::device::MemKind::kDevice);
  EXPECT_EQ(i.device, 1);
  EXPECT_FALSE(i.ipc_capable) << "unknown exportability must take the staging path";
}

// ---- host ranges: memory that is host memory for the process's life ----
namespace {
char g_static_host[256];

bool below_break(const void *p) { return reinterpret_cast<std::uintptr_t>(p) < reinterpret_cast<std::uintptr_t>(sbrk(0)); }

// Each kind of host memory the ranges cover is answered without a driver
// call, by device_of (a receive) and by query (a device-sending process's
// sends) alike.
void expect_host_without_driver(const void *p, const char *what) {
  const int before = g_calls;
  EXPECT_EQ(mpix::device::device_of(p), -1) << what;
  EXPECT_EQ(mpix::device::query(p).kind, mpix::device::MemKind::kHost) << what;
  EXPECT_EQ(g_calls, before) << what << " was asked of the driver";
}
}  // namespace

TEST_F(MemType, HostRangesAnswerStaticStackAndThreadStacksWithoutTheDriver) {
  mpix::device::memtype_host_ranges(true);
  expect_host_without_driver(g_static_host + 100, "static data");
  char on_stack[64] = {};
  expect_host_without_driver(on_stack, "the main thread's stack");
  for (int t = 0; t < 3; ++t) {
    std::thread th([] {
      char own[64] = {};
      expect_host_without_driver(own, "a thread's own stack");
      expect_host_without_driver(own + 63, "a thread's own stack, last byte");
    });
    th.join();
  }
}

TEST_F(MemType, HostRangesFollowTheGrowingHeap) {
  mpix::device::memtype_host_ranges(true);
  // Grow the break past where it was when the ranges were taken (sbrk, not
  // malloc: under AddressSanitizer malloc does not use the brk heap). The
  // heap's end is read at each query, and ends there.
  const std::size_t grow = 1 << 16;
  void *old_break = sbrk(static_cast<intptr_t>(grow));
  ASSERT_NE(old_break, reinterpret_cast<void *>(-1));
  char *grown = static_cast<char *>(old_break);
  expect_host_without_driver(grown, "the first byte above the old break");
  expect_host_without_driver(grown + grow - 1, "the last byte below the new break");
  ASSERT_EQ(static_cast<void *>(grown + grow), sbrk(0));
  const int before = g_calls;
  EXPECT_EQ(mpix::device::device_of(grown + grow), -1);
  EXPECT_EQ(g_calls, before + 1) << "the break itself is past the heap: asked";
  std::unique_ptr<char, decltype(&std::free)> small(static_cast<char *>(std::malloc(64)), &std::free);
  if (below_break(small.get())) expect_host_without_driver(small.get(), "a small malloc in the brk heap");
}

// Memory outside the ranges is still asked: an mmap'ed region the driver
// reports as device memory is device memory, and so is anything asked with
// the ranges off.
TEST_F(MemType, HostRangesLeaveMappedMemoryToTheDriver) {
  mpix::device::memtype_host_ranges(true);
  const std::size_t bytes = 1 << 20;
  void *m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  g_mapped_device = static_cast<char *>(m);
  g_mapped_bytes = bytes;
  EXPECT_EQ(mpix::device::device_of(g_mapped_device + 10), 1);
  EXPECT_EQ(g_calls, 1);
  EXPECT_EQ(mpix::device::query(g_mapped_device).kind, mpix::device::MemKind::kDevice);
  EXPECT_EQ(g_calls, 2);
  g_mapped_device = nullptr;
  g_mapped_bytes = 0;
  EXPECT_EQ(mpix::device::device_of(static_cast<char *>(m) + 10), -1);  // plain host memory, asked
  EXPECT_EQ(g_calls, 3);
  munmap(m, bytes);

  mpix::device::memtype_host_ranges(false);
  char on_stack[64] = {};
  EXPECT_EQ(mpix::device::device_of(on_stack), -1);
  EXPECT_EQ(mpix::device::device_of(g_static_host), -1);
  EXPECT_EQ(g_calls, 5) << "with the ranges off every buffer is asked";
}

// Data tags stay within 0 .. MPI_TAG_UB - 1 (a kGpuReply's data tag must
// pass check_header) and take every value once per cycle, for the MPI
// minimum tag_ub and MPICH's.
TEST(GpuTags, DataTagsValidAndDistinct) {
  for (int tag_ub : {32767, 1 << 20}) {
    std::vector<char> seen(static_cast<std::size_t>(tag_ub), 0);
    int t = 0;
    for (long i = 0; i < 2L * tag_ub + 5; ++i) {
      ASSERT_GE(t, 0);
      ASSERT_LT(t, tag_ub);
      if (i < tag_ub) {  // one cycle of data tags
        EXPECT_EQ(seen[static_cast<std::size_t>(t)], 0) << "data tag " << t << " taken twice";
        seen[static_cast<std::size_t>(t)] = 1;
      }
      t = mpix::p2p::next_gpu_data_tag(t, tag_ub);
    }
  }
}

// A capped pool hands out at most its cap, then nullptr (the caller stages
// through pageable memory), and reuses what comes back.
TEST(GpuSlotPool, CapLimitsAllocation) {
  int allocs = 0;
  std::vector<std::vector<char>> storage;
  SlotPool pool(
      64,
      [&](std::size_t n) -> void * {
        ++allocs;
        storage.emplace_back(n);
        return storage.back().data();
      },
      [](void *) {}, 2);
  storage.reserve(8);
  void *a = pool.acquire(), *b = pool.acquire();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(allocs, 2);
  pool.release(a);
  EXPECT_EQ(pool.acquire(), a);
  EXPECT_EQ(allocs, 2);
}
