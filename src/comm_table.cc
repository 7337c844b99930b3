#include "comm_table.h"

#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "progress/immortal.h"

namespace mpix {
namespace {

struct Table {
  std::shared_mutex mutex;
  std::unordered_map<std::uintptr_t, std::shared_ptr<CommState>> map;
  int keyval = MPI_KEYVAL_INVALID;
};

Table &table() {
  static Immortal<Table> t;
  return t.get();
}

// Every call on a handled communicator looks it up, usually the one the
// thread looked up last: a per-thread entry, valid while no entry was
// added or removed since (generation), spares the lock and the hash. It
// holds no reference: a communicator stays in the table while a call on it
// runs (freeing it then is erroneous), and any removal changes the
// generation. Plain data, so the thread_local needs no guard (a type with a
// destructor gets one, reached through __tls_get_addr on every use).
std::atomic<std::uint64_t> g_generation{1};
struct LastFound {
  std::uint64_t generation;
  std::uintptr_t key;
  CommState *state;
};
thread_local LastFound t_last_found __attribute__((tls_model("initial-exec"))) = {0, 0, nullptr};

// Under the write lock, after the map changed.
void changed() { g_generation.fetch_add(1, std::memory_order_release); }

}  // namespace

std::atomic<int> CommTable::count_{0};

int CommTable::init() {
  Table &t = table();
  if (t.keyval != MPI_KEYVAL_INVALID) return MPI_SUCCESS;
  return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &CommTable::delete_attr, &t.keyval, nullptr);
}

void CommTable::finalize() {
  Table &t = table();
  {
    std::unique_lock<std::shared_mutex> lock(t.mutex);
    t.map.clear();
    count_.store(0, std::memory_order_relaxed);
    changed();
  }
  // Attributes still on live communicators now point at nothing; their
  // delete callbacks (run by PMPI_Finalize) find no entry and do nothing.
  if (t.keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&t.keyval);
}

CommState *CommTable::find_raw(MPI_Comm comm) {
  if (empty()) return nullptr;
  const std::uintptr_t key = comm_key(comm);
  const std::uint64_t generation = g_generation.load(std::memory_order_acquire);
  LastFound &last = t_last_found;
  if (last.generation == generation && last.key == key) return last.state;
  Table &t = table();
  std::shared_lock<std::shared_mutex> lock(t.mutex);
  auto it = t.map.find(key);
  last.state = it == t.map.end() ? nullptr : it->second.get();
  last.key = key;
  last.generation = generation;  // read before the lookup: a change since only forces another
  return last.state;
}

std::shared_ptr<CommState> CommTable::find(MPI_Comm comm) {
  CommState *state = find_raw(comm);
  return state == nullptr ? nullptr : state->shared_from_this();
}

int CommTable::insert(MPI_Comm comm, std::shared_ptr<CommState> state) {
  Table &t = table();
  {
    std::unique_lock<std::shared_mutex> lock(t.mutex);
    auto [it, inserted] = t.map.insert_or_assign(comm_key(comm), std::move(state));
    (void)it;
    if (inserted) count_.fetch_add(1, std::memory_order_relaxed);
    changed();
  }
  // The attribute value is unused: the callback only needs to fire.
  return PMPI_Comm_set_attr(comm, t.keyval, nullptr);
}

int CommTable::erase(MPI_Comm comm) {
  Table &t = table();
  bool erased = false;
  {
    std::unique_lock<std::shared_mutex> lock(t.mutex);
    erased = t.map.erase(comm_key(comm)) > 0;
    if (erased) count_.fetch_sub(1, std::memory_order_relaxed);
    changed();
  }
  if (!erased) return MPI_SUCCESS;
  // Deleting the attribute calls delete_attr, which then finds nothing.
  return PMPI_Comm_delete_attr(comm, t.keyval);
}

int CommTable::delete_attr(MPI_Comm comm, int, void *, void *) {
  Table &t = table();
  std::shared_ptr<CommState> dying;  // destroyed outside the lock
  {
    std::unique_lock<std::shared_mutex> lock(t.mutex);
    auto it = t.map.find(comm_key(comm));
    if (it == t.map.end()) return MPI_SUCCESS;
    dying = std::move(it->second);
    t.map.erase(it);
    count_.fetch_sub(1, std::memory_order_relaxed);
    changed();
  }
  return MPI_SUCCESS;
}

}  // namespace mpix
