#include "memtype.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

namespace mpix::device {
namespace {

DriverApi g_loaded{};
bool g_tried = false;

}  // namespace

// &g_loaded once libcuda resolved (memtype.h).
std::atomic<const DriverApi *> detail::g_api{nullptr};
using detail::g_api;

void memtype_init(bool enabled, bool host_ranges) {
  if (!enabled) {
    g_api.store(nullptr, std::memory_order_release);
    return;
  }
  if (!g_tried) {
    g_tried = true;
    // Loading the driver does not initialise it: until the application (or
    // mpix's own CUDA code) calls cuInit, every query answers "not
    // initialised" at once, which means no device memory can exist yet.
    // The handle is kept for the life of the process (the runtime holds it
    // too), so it is never dlclose'd.
    if (void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
      g_loaded.get_attribute = reinterpret_cast<decltype(g_loaded.get_attribute)>(dlsym(h, "cuPointerGetAttribute"));
      g_loaded.get_attributes =
          reinterpret_cast<decltype(g_loaded.get_attributes)>(dlsym(h, "cuPointerGetAttributes"));
    }
  }
  if (g_loaded.get_attribute != nullptr && g_loaded.get_attributes != nullptr) {
    memtype_host_ranges(host_ranges);
    g_api.store(&g_loaded, std::memory_order_release);
  }
}

namespace {

struct Range {
  std::uintptr_t lo = 0, hi = 0;
  bool has(std::uintptr_t a) const { return a - lo < hi - lo; }  // empty when lo == hi
};

// What memtype_host_ranges found; written before g_ranges_on's release.
struct HostRanges {
  static constexpr int kMaxData = 4;
  Range data[kMaxData];  // the main program's writable PT_LOAD segments
  int n_data = 0;
  // Start of the brk heap; its end is the break at each query (current_break).
  // ~0: unknown.
  std::uintptr_t heap_lo = ~std::uintptr_t{0};
  Range main_stack;  // as mapped when the ranges were taken
};
HostRanges g_ranges;
std::atomic<bool> g_ranges_on{false};

// The calling thread's stack, looked up at its first query: a thread's
// stack stays mapped while the thread runs.
struct ThreadStack {
  Range r;
  bool known = false;
};
thread_local ThreadStack t_stack __attribute__((tls_model("initial-exec")));

int main_program_segments(dl_phdr_info *info, std::size_t, void *data) {
  auto *r = static_cast<HostRanges *>(data);
  for (int i = 0; i < info->dlpi_phnum && r->n_data < HostRanges::kMaxData; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) == 0) continue;
    const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    r->data[r->n_data++] = Range{lo, lo + ph.p_memsz};
  }
  return 1;  // the first object is the main program: stop there
}

// [heap] and [stack] of /proc/self/maps (read once, at MPI_Init).
void heap_and_stack(HostRanges *r) {
  std::FILE *f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr) return;
  char line[512];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line, "%lx-%lx", &lo, &hi) != 2) continue;
    if (std::strstr(line, "[heap]") != nullptr) r->heap_lo = lo;
    if (std::strstr(line, "[stack]") != nullptr) r->main_stack = Range{lo, hi};
  }
  std::fclose(f);
}

}  // namespace
}  // namespace mpix::device

// glibc's record of the program break, which its brk/sbrk (and UCX's
// replacements of them) keep current. Read, never sbrk(0): under UCX's
// memory hooks sbrk(0) is brk(the break as last recorded), a write of the
// break that raced the heap growing in another thread and unmapped it
// (the host-driven stream tests crashed so on the GPU machine).
extern "C" void *__curbrk;

namespace mpix::device {
namespace {

std::uintptr_t current_break() {
  return reinterpret_cast<std::uintptr_t>(__atomic_load_n(&__curbrk, __ATOMIC_RELAXED));
}

const Range &own_stack() {
  if (!t_stack.known) {
    t_stack.known = true;
    int here = 0;
    // The main thread's stack is g_ranges.main_stack (pthread_getattr_np
    // would read /proc/self/maps for it).
    if (!g_ranges.main_stack.has(reinterpret_cast<std::uintptr_t>(&here))) {
      pthread_attr_t at;
      if (pthread_getattr_np(pthread_self(), &at) == 0) {
        void *addr = nullptr;
        std::size_t size = 0;
        if (pthread_attr_getstack(&at, &addr, &size) == 0) {
          const auto lo = reinterpret_cast<std::uintptr_t>(addr);
          t_stack.r = Range{lo, lo + size};
        }
        pthread_attr_destroy(&at);
      }
    }
  }
  return t_stack.r;
}

}  // namespace

void memtype_host_ranges(bool on) {
  if (!on) {
    g_ranges_on.store(false, std::memory_order_release);
    return;
  }
  HostRanges r;
  dl_iterate_phdr(main_program_segments, &r);
  heap_and_stack(&r);
  // No [heap] line: the heap is empty so far and starts at the break,
  // asked of the kernel (brk(0) changes nothing; glibc's record may not be
  // set yet, and its sbrk is not called, as above).
  if (r.heap_lo == ~std::uintptr_t{0}) {
    if (const long b = syscall(SYS_brk, 0); b > 0) r.heap_lo = static_cast<std::uintptr_t>(b);
  }
  g_ranges = r;
  g_ranges_on.store(true, std::memory_order_release);
}

void memtype_host_ranges_describe(char *out, std::size_t n) {
  if (n == 0) return;
  out[0] = '\0';
  if (!g_ranges_on.load(std::memory_order_acquire)) {
    std::snprintf(out, n, "off");
    return;
  }
  const HostRanges &r = g_ranges;
  std::size_t at = 0;
  const auto put = [&](const char *what, std::uintptr_t lo, std::uintptr_t hi) {
    if (at < n) at += static_cast<std::size_t>(std::snprintf(out + at, n - at, "%s%s %#lx-%#lx", at ? ", " : "", what,
                                                             static_cast<unsigned long>(lo), static_cast<unsigned long>(hi)));
  };
  for (int i = 0; i < r.n_data; ++i) put("data", r.data[i].lo, r.data[i].hi);
  put("heap", r.heap_lo, current_break());
  put("main stack", r.main_stack.lo, r.main_stack.hi);
  const Range &own = own_stack();
  put("this thread's stack", own.lo, own.hi);
}

bool detail::known_host(const void *p) {
  if (!g_ranges_on.load(std::memory_order_acquire)) return false;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const HostRanges &r = g_ranges;
  if (a >= r.heap_lo && a < current_break()) return true;
  for (int i = 0; i < r.n_data; ++i)
    if (r.data[i].has(a)) return true;
  return r.main_stack.has(a) || own_stack().has(a);
}

void memtype_set_driver_for_testing(const DriverApi *api) { g_api.store(api, std::memory_order_release); }

namespace {

// Older drivers reject attributes they do not know, failing the whole
// cuPointerGetAttributes: ask the essentials one at a time. *ordinal is
// left as the caller set it when its own call fails.
bool essentials(const DriverApi *api, const void *p, unsigned long long *type, unsigned long long *managed,
                int *ordinal) {
  const auto ptr = reinterpret_cast<unsigned long long>(p);
  unsigned t = 0;
  if (api->get_attribute(&t, cu::kAttrMemoryType, ptr) != cu::kSuccess) return false;
  *type = t;
  api->get_attribute(managed, cu::kAttrIsManaged, ptr);
  api->get_attribute(ordinal, cu::kAttrDeviceOrdinal, ptr);
  return true;
}

}  // namespace

int detail::device_of_driver(const DriverApi *api, const void *p) {
  if (known_host(p)) return -1;
  // cuPointerGetAttributes answers for plain host memory too (type 0), where
  // cuPointerGetAttribute fails with CUDA_ERROR_INVALID_VALUE, an error
  // compute-sanitizer reports on every host send. Managed memory reports
  // DEVICE and is told apart by the second attribute. "Not initialised"
  // ends it at once (here and in query): no device memory exists before
  // cuInit, and the one-attribute fallback would only fail again, a second
  // call per host send and receive in a process that never touched CUDA
  // where libcuda is installed.
  unsigned long long type = 0, managed = 0, ordinal = 0;
  int attrs[] = {cu::kAttrMemoryType, cu::kAttrIsManaged, cu::kAttrDeviceOrdinal};
  void *data[] = {&type, &managed, &ordinal};
  if (const int rc = api->get_attributes(3, attrs, data, reinterpret_cast<unsigned long long>(p)); rc != cu::kSuccess) {
    int o = 0;
    if (rc == cu::kNotInitialized || !essentials(api, p, &type, &managed, &o)) return -1;
    ordinal = static_cast<unsigned long long>(static_cast<unsigned>(o));
  }
  if (static_cast<unsigned>(type) != cu::kMemoryTypeDevice || managed != 0) return -1;
  return static_cast<int>(static_cast<unsigned>(ordinal));
}

PtrInfo query(const void *p) {
  PtrInfo info;
  const DriverApi *api = g_api.load(std::memory_order_acquire);
  if (api == nullptr || p == nullptr || detail::known_host(p)) return info;
  // Every slot is 8 zeroed bytes: the driver writes 1 (bool), 4 or 8 bytes
  // depending on the attribute, and on a little-endian host the low bytes
  // are what we read back.
  unsigned long long type = 0, id = 0, managed = 0, ordinal = 0, ipc = 0, start = 0, size = 0;
  int attrs[] = {cu::kAttrMemoryType,      cu::kAttrBufferId,        cu::kAttrIsManaged, cu::kAttrDeviceOrdinal,
                 cu::kAttrIsLegacyIpcCapable, cu::kAttrRangeStartAddr, cu::kAttrRangeSize};
  void *data[] = {&type, &id, &managed, &ordinal, &ipc, &start, &size};
  const unsigned n = sizeof attrs / sizeof attrs[0];
  if (const int rc = api->get_attributes(n, attrs, data, reinterpret_cast<unsigned long long>(p)); rc != cu::kSuccess) {
    int o = -1;
    if (rc == cu::kNotInitialized || !essentials(api, p, &type, &managed, &o)) return info;
    ordinal = static_cast<unsigned long long>(static_cast<unsigned>(o));
    ipc = 0;  // unknown: the staging path is always correct
  }
  if (static_cast<unsigned>(type) != cu::kMemoryTypeDevice) return info;
  if (static_cast<unsigned>(managed) != 0) {
    info.kind = MemKind::kManaged;
    return info;
  }
  info.kind = MemKind::kDevice;
  info.device = static_cast<int>(static_cast<unsigned>(ordinal));
  info.buffer_id = id;
  info.base = static_cast<std::uintptr_t>(start);
  info.size = static_cast<std::size_t>(size);
  // The sender exports a handle once per buffer id: no id, no IPC.
  info.ipc_capable = static_cast<unsigned>(ipc) != 0 && info.base != 0 && info.size != 0 && info.buffer_id != 0;
  return info;
}

}  // namespace mpix::device
