// The process-wide state; written by src/mpi/runtime.cc.
#include "runtime_state.h"

#include "progress/immortal.h"

namespace mpix {
namespace {

Runtime g_runtime;
std::atomic<bool> g_active{false};

}  // namespace

StreamStats &stream_stats() {
  static Immortal<StreamStats> s;
  return s.get();
}

bool runtime_active() { return g_active.load(std::memory_order_acquire); }

const Runtime &runtime() { return g_runtime; }

Runtime &runtime_mutable() { return g_runtime; }

void runtime_set_active(bool active) { g_active.store(active, std::memory_order_release); }

}  // namespace mpix
