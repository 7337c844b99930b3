// Where a buffer lives, asked of the CUDA driver per call (allocations come
// and go, so no answer is cached), except for memory that is host memory
// for as long as the process lives (memtype_host_ranges below). Host-only
// C++ used by both builds: the driver is found at run time with
// dlopen("libcuda.so.1"), so a build without CUDA still recognises a device
// pointer (and rejects it cleanly) when the application itself uses CUDA.
#ifndef MPIX_DEVICE_MEMTYPE_H
#define MPIX_DEVICE_MEMTYPE_H

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace mpix::device {

enum class MemKind : std::uint8_t {
  kHost,     // ordinary, pinned or registered host memory: the CPU may read it
  kManaged,  // cudaMallocManaged: host-accessible, treated like host memory
  kDevice,   // cudaMalloc / cudaMallocAsync / cuMemCreate: only the GPU reads it
};

// What the IPC and staging paths need to know about a device pointer.
struct PtrInfo {
  MemKind kind = MemKind::kHost;
  int device = -1;               // ordinal of the GPU holding it
  std::uint64_t buffer_id = 0;   // process-wide unique id of the allocation
  std::uintptr_t base = 0;       // start of the allocation
  std::size_t size = 0;          // bytes of the allocation
  bool ipc_capable = false;      // cudaIpcGetMemHandle works on it (not pools, not VMM)
};

// The two driver entry points the query uses (CUresult-returning, raw ints
// so that no CUDA header is needed). Tests substitute fakes.
struct DriverApi {
  int (*get_attribute)(void *data, int attribute, unsigned long long ptr);
  int (*get_attributes)(unsigned n, int *attributes, void **data, unsigned long long ptr);
};

// Loads libcuda once (MPI_Init); later calls are free. MPIX_GPU=off (or
// enabled == false) makes every buffer host memory without asking.
// host_ranges: see memtype_host_ranges.
void memtype_init(bool enabled, bool host_ranges = true);

// Buffers in memory that can never become device memory are answered
// without the driver: the main program's data and bss, the brk heap (from
// its start to the current break), the main thread's stack as mapped now
// and the calling thread's own stack. The driver maps device memory only
// where nothing is mapped, and these stay mapped (the heap's end is read
// at each query), so the answer cannot go stale. A query with a CUDA
// context current costs ~93 ns on an H200 host (bench/RESULTS.md), about
// a small host message's whole cost; these checks cost a few. Memory
// mapped by mmap (large mallocs, other threads' arenas) is still asked.
// on == false: every query asks the driver (MPIX_GPU_HOST_RANGES=off).
void memtype_host_ranges(bool on);
// The ranges in use as text (MPIX_VERBOSE=2), at most n bytes with the NUL.
void memtype_host_ranges_describe(char *out, std::size_t n);

namespace detail {
// The table in use: the loaded driver's, a test's fake, or nullptr (no
// driver, or MPIX_GPU=off). Written at MPI_Init, read on every send and
// receive: inline, so that a process without the driver pays one load
// there, not a call (the sender's call into the GPU path was ~10% of an
// 8 B stream's samples on a host without libcuda).
extern std::atomic<const DriverApi *> g_api;
int device_of_driver(const DriverApi *api, const void *p);
// Whether p lies in one of memtype_host_ranges' regions (false when off).
bool known_host(const void *p);
}  // namespace detail

// True when the driver is loaded (device pointers are possible at all).
inline bool memtype_driver_loaded() { return detail::g_api.load(std::memory_order_acquire) != nullptr; }

// The GPU holding p when p is device memory the CPU cannot read, else -1
// (host, pinned or managed memory). One driver call (a VA lookup, or an
// immediate "not initialised" while the application has not touched CUDA);
// no call at all without libcuda.
inline int device_of(const void *p) {
  const DriverApi *api = detail::g_api.load(std::memory_order_acquire);
  return api == nullptr || p == nullptr ? -1 : detail::device_of_driver(api, p);
}

// Hot path: whether p is device memory the CPU cannot read.
inline bool is_device(const void *p) { return device_of(p) >= 0; }

// Full description of p, in one driver call; kind kHost for anything the
// CPU can read. A device send classifies its buffer with this alone.
PtrInfo query(const void *p);

// Tests: use `api` instead of the dlopen'ed driver (nullptr: no driver).
// Leaves the host ranges as they are (off until memtype_init or
// memtype_host_ranges turns them on).
void memtype_set_driver_for_testing(const DriverApi *api);

// Values of the CUDA driver ABI used above (cuda.h; stable since CUDA 4/11.3).
namespace cu {
constexpr int kSuccess = 0;
constexpr int kNotInitialized = 3;
constexpr int kAttrMemoryType = 2;
constexpr int kAttrBufferId = 7;
constexpr int kAttrIsManaged = 8;
constexpr int kAttrDeviceOrdinal = 9;
constexpr int kAttrIsLegacyIpcCapable = 10;
constexpr int kAttrRangeStartAddr = 11;
constexpr int kAttrRangeSize = 12;
constexpr unsigned kMemoryTypeHost = 1;
constexpr unsigned kMemoryTypeDevice = 2;
constexpr unsigned kMemoryTypeUnified = 4;
}  // namespace cu

}  // namespace mpix::device

#endif
