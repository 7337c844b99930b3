#include "request.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <memory>
#include <algorithm>
#include <vector>

#include "datatype.h"
#include "engine.h"
#include "progress/immortal.h"
#include "progress/sanitizers.h"
#include "src/comm_table.h"

namespace mpix::p2p {
namespace {

int noop_query(void *, MPI_Status *status) {
  status_empty(status);
  return MPI_SUCCESS;
}
int noop_free(void *) { return MPI_SUCCESS; }
int noop_cancel(void *, int) { return MPI_SUCCESS; }

template <class Handle>
std::uintptr_t handle_key(Handle h) {
  std::uintptr_t k = 0;
  static_assert(sizeof(Handle) <= sizeof k, "handle fits");
  std::memcpy(&k, &h, sizeof h);
  return k;
}

// Every handle mpix ever made keeps its Request for reuse, so a nonblocking
// operation allocates nothing once as many requests exist as the
// application keeps in flight; the handles (generalized requests of the MPI
// library) are never given back before MPI_Finalize anyway. Under
// AddressSanitizer a request is freed on release and made anew, so that a
// use of a released request stays a use after free it reports, not a use of
// the next request.
#ifdef MPIX_UNDER_ASAN
#define MPIX_REQUEST_POOL 0
#else
#define MPIX_REQUEST_POOL 1
#endif

// Handle -> request, looked up by every Wait/Test/Start/Cancel of any
// request: an open-addressing index (linear probing, at most half full)
// into the entries, one per handle made, so that a lookup is a hash and a
// compare or two rather than a node-based map's walk, and creating and
// releasing a request touch no map at all. Changed only under the engine
// lock, but read without it by lane waits (lanes.h): entries live in chunks
// that never move, the index is replaced whole when it grows (readers of
// the old one still find every handle it had), and an entry's handle and
// chunk are published by the release store of its index slot.
struct Table {
  struct Entry {
    MPI_Request handle = MPI_REQUEST_NULL;
    std::atomic<Request *> live{nullptr};  // while the request is in use (or in a lane cache)
    std::unique_ptr<Request> owned;
  };
  static constexpr std::uint32_t kEmpty = ~std::uint32_t{0};
  static constexpr unsigned kChunkBits = 10;
  static constexpr std::uint32_t kChunk = 1u << kChunkBits;
  static constexpr std::size_t kMaxChunks = 1u << 14;  // 16 M handles
  struct Index {
    explicit Index(std::size_t n) : mask(n - 1), slot(std::make_unique<std::atomic<std::uint32_t>[]>(n)) {
      for (std::size_t i = 0; i < n; ++i) slot[i].store(kEmpty, std::memory_order_relaxed);
    }
    std::size_t mask;
    std::unique_ptr<std::atomic<std::uint32_t>[]> slot;
  };
  std::unique_ptr<Entry[]> chunks[kMaxChunks];
  std::uint32_t count = 0;  // entries made
  std::atomic<Index *> index{nullptr};
  std::vector<std::unique_ptr<Index>> indexes;  // every index made: an old one may still be read
  std::vector<std::uint32_t> free_entries;

  Entry &entry(std::uint32_t e) const { return chunks[e >> kChunkBits][e & (kChunk - 1)]; }

  static std::size_t hash(std::uintptr_t k) { return static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ull) >> 20); }

  std::uint32_t find(MPI_Request h) const {
    const Index *ix = index.load(std::memory_order_acquire);
    if (ix == nullptr) return kEmpty;
    const std::uintptr_t k = handle_key(h);
    for (std::size_t i = hash(k) & ix->mask;; i = (i + 1) & ix->mask) {
      const std::uint32_t e = ix->slot[i].load(std::memory_order_acquire);
      if (e == kEmpty || handle_key(entry(e).handle) == k) return e;
    }
  }

  static void place(Index &ix, std::uint32_t e, MPI_Request h) {
    std::size_t i = hash(handle_key(h)) & ix.mask;
    while (ix.slot[i].load(std::memory_order_relaxed) != kEmpty) i = (i + 1) & ix.mask;
    ix.slot[i].store(e, std::memory_order_release);
  }

  // The entry of a handle just made (nullopt-like kEmpty when full).
  std::uint32_t add(MPI_Request h) {
    if (count == kMaxChunks * kChunk) return kEmpty;
    Index *ix = index.load(std::memory_order_relaxed);
    if (ix == nullptr || 2 * (std::size_t{count} + 1) > ix->mask + 1) {
      auto grown = std::make_unique<Index>(std::max<std::size_t>(64, ix == nullptr ? 0 : 2 * (ix->mask + 1)));
      for (std::uint32_t e = 0; e < count; ++e) place(*grown, e, entry(e).handle);
      ix = grown.get();
      indexes.push_back(std::move(grown));
      index.store(ix, std::memory_order_release);
    }
    const std::uint32_t e = count++;
    if (!chunks[e >> kChunkBits]) chunks[e >> kChunkBits] = std::make_unique<Entry[]>(kChunk);
    entry(e).handle = h;
    place(*ix, e, h);
    return e;
  }
};

Table &table() {
  static Immortal<Table> t;
  return t.get();
}

std::atomic<int> g_live{0};

// Keeps a derived datatype alive for a pending operation.
void hold_datatype(Request *r, MPI_Datatype dtype) {
  if (r->dtype_owned) PMPI_Type_free(&r->dtype);
  r->dtype = dtype;
  r->dtype_owned = false;
  if (dtype != MPI_DATATYPE_NULL && is_derived(dtype)) {
    PMPI_Type_dup(dtype, &r->dtype);
    r->dtype_owned = true;
  }
}

}  // namespace

void CommRef::hold(P2PComm *c) {
  // Counted before the old hold goes: were it c's last, c would go with it.
  c->request_hold();
  reset();
  c_ = c;
  counted_ = true;
}

void CommRef::release() { c_->request_unhold(); }

Request::~Request() {
  if (dtype_owned) PMPI_Type_free(&dtype);
}

void init_request(Request *r, P2PComm *c, const void *sbuf, void *rbuf, int count,
                  MPI_Datatype dtype, int peer, int tag) {
  // (No communicator: MPI_Imrecv, whose message names it, sets it later.)
  if (c != nullptr) r->comm.hold(c);
  r->sbuf = sbuf;
  r->rbuf = rbuf;
  r->count = count;
  r->peer = peer;
  r->tag = tag;
  hold_datatype(r, dtype);
}

void Request::finish(int source, int tag_, int error, MPI_Count bytes) {
  st_source = source;
  st_tag = tag_;
  st_error = error;
  st_bytes = bytes;
  if (lane) {
    // Its waiter holds no engine lock and may recycle it the moment the flag
    // is set: everything else first, the flag last.
    queued = false;
    P2PComm *c = comm.get();
    const bool engine_op = lane_engine;
    if (user_freed && !inner_busy) {
      request_release(this);
    } else {
      complete = true;
    }
    if (c != nullptr && engine_op) c->op_done();
    return;
  }
  complete = true;
  queued = false;
  if (watcher != nullptr) {
    RequestWatcher *w = watcher;
    watcher = nullptr;
    w->request_done(watch_cookie);
  }
  if (comm) comm->op_done();
  // MPI_Request_free'd while active: nobody will wait for it; this was the
  // last use.
  if (user_freed && !inner_busy) request_release(this);
}

void Request::on_complete(const MPI_Status &status) {
  inner_busy = false;
  if (kind == ReqKind::kRecv) {
    // Rendezvous data landed in the user's buffer; truncation comes back as
    // the underlying status error.
    int error = status.MPI_ERROR;
    MPI_Count bytes = 0;
    PMPI_Get_elements_x(&status, MPI_BYTE, &bytes);
    if (bytes == MPI_UNDEFINED) bytes = 0;
    finish(st_source, st_tag, error, bytes);
  } else {
    finish(MPI_PROC_NULL, MPI_ANY_TAG, status.MPI_ERROR, 0);
  }
  // finish() may have destroyed this (a freed request): touch nothing here.
}

void Request::write_status(MPI_Status *status, bool with_error) const {
  if (status == MPI_STATUS_IGNORE) return;
  status_fill(status, st_source, st_tag, with_error ? st_error : -1, st_bytes, st_cancelled);
}

Request *request_create(ReqKind kind) {
  Table &t = table();
  std::uint32_t e;
  if (!t.free_entries.empty()) {
    e = t.free_entries.back();
    t.free_entries.pop_back();
  } else {
    MPI_Request h = MPI_REQUEST_NULL;
    PMPI_Grequest_start(noop_query, noop_free, noop_cancel, nullptr, &h);
    e = t.add(h);
    if (e == Table::kEmpty) {
      std::fprintf(stderr, "mpix: more than %zu requests at once\n", Table::kMaxChunks * Table::kChunk);
      std::abort();
    }
  }
  Table::Entry &entry = t.entry(e);
  if (!entry.owned) entry.owned = std::make_unique<Request>();
  Request *raw = entry.owned.get();
  entry.live.store(raw, std::memory_order_release);
  raw->kind = kind;
  raw->handle = entry.handle;
  raw->table_entry = e;
  // Written only under the engine lock (as the table): no locked RMW.
  g_live.store(g_live.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return raw;
}

Request *request_lookup(MPI_Request handle) {
  if (handle == MPI_REQUEST_NULL || g_live.load(std::memory_order_relaxed) == 0) return nullptr;
  const Table &t = table();
  const std::uint32_t e = t.find(handle);
  return e == Table::kEmpty ? nullptr : t.entry(e).live.load(std::memory_order_acquire);
}

void request_release(Request *r) {
  Table &t = table();
  if (r->companion) {
    request_release(r->companion);
    r->companion = nullptr;
  }
  const std::uint32_t e = r->table_entry;
  if (e >= t.count || t.entry(e).live.load(std::memory_order_relaxed) != r) return;
  Table::Entry &entry = t.entry(e);
  entry.live.store(nullptr, std::memory_order_release);
  g_live.store(g_live.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  // Callers release only requests with no transfer in flight: an underlying
  // completion would otherwise call into a request made anew.
  t.free_entries.push_back(e);
  if (!MPIX_REQUEST_POOL) {
    entry.owned.reset();
    return;
  }
  r->recycle();
}

void Request::recycle() {
  // In the destructor's order: its body, then the members last to first.
  if (dtype_owned) PMPI_Type_free(&dtype);
  staged.reset();
  eager_copy.reset();
  scratch.reset();
  comm.reset();
  static_cast<RequestFields &>(*this) = RequestFields{};
}

int request_live() { return g_live.load(std::memory_order_relaxed); }

// ---- lane requests (lanes.h) ----
namespace {
// Requests no thread holds (those of threads that exited), for the next;
// the generation drops every cache's requests at MPI_Finalize, which frees
// them.
struct LanePool {
  std::mutex mu;
  std::vector<Request *> free;
  std::atomic<unsigned> generation{0};
};
LanePool &lane_pool() {
  static Immortal<LanePool> p;
  return p.get();
}
struct LaneCache {
  std::vector<Request *> free;
  unsigned generation = 0;
  ~LaneCache() {
    LanePool &p = lane_pool();
    if (free.empty() || generation != p.generation.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> g(p.mu);
    p.free.insert(p.free.end(), free.begin(), free.end());
  }
};
thread_local LaneCache t_lane_cache;
constexpr int kLaneRefill = 64;

void lane_requests_forget() {
  LanePool &p = lane_pool();
  std::lock_guard<std::mutex> g(p.mu);
  p.free.clear();
  p.generation.fetch_add(1, std::memory_order_acq_rel);
}
}  // namespace

Request *lane_request(ReqKind kind) {
  LaneCache &t = t_lane_cache;
  LanePool &p = lane_pool();
  if (t.generation != p.generation.load(std::memory_order_acquire)) {
    t.free.clear();
    t.generation = p.generation.load(std::memory_order_acquire);
  }
  if (t.free.empty()) {
    {
      std::lock_guard<std::mutex> g(p.mu);
      for (int i = 0; i < 4 * kLaneRefill && !p.free.empty(); ++i) {
        t.free.push_back(p.free.back());
        p.free.pop_back();
      }
    }
    if (t.free.empty()) {
      auto lock = engine_lock();
      for (int i = 0; i < kLaneRefill; ++i) {
        Request *r = request_create(kind);
        r->lane = true;
        t.free.push_back(r);
      }
    }
  }
  Request *r = t.free.back();
  t.free.pop_back();
  r->kind = kind;
  return r;
}

void lane_request_recycle(Request *r) {
  // Lane requests own nothing (no derived type, no copy, no hold on the
  // communicator): their fields go back to a new request's.
  const MPI_Request handle = r->handle;
  const std::uint32_t entry = r->table_entry;
  r->comm.reset();
  static_cast<RequestFields &>(*r) = RequestFields{};
  r->handle = handle;
  r->table_entry = entry;
  r->lane = true;
  t_lane_cache.free.push_back(r);
}

namespace {
std::atomic<int> g_enqueued{0};
std::atomic<bool (*)(MPI_Request)> g_is_enqueued{nullptr};
}  // namespace

void enqueued_handles_register(bool (*is_enqueued)(MPI_Request)) {
  g_is_enqueued.store(is_enqueued, std::memory_order_release);
}

void enqueued_handles_add(int delta) { g_enqueued.fetch_add(delta, std::memory_order_acq_rel); }

bool is_enqueued_handle(MPI_Request h) {
  if (g_enqueued.load(std::memory_order_acquire) == 0 || h == MPI_REQUEST_NULL) return false;
  auto *f = g_is_enqueued.load(std::memory_order_acquire);
  return f != nullptr && f(h);
}

void request_finalize() {
  Table &t = table();
  g_live.store(0, std::memory_order_relaxed);
  for (std::uint32_t e = 0; e < t.count; ++e) {
    Table::Entry &entry = t.entry(e);
    entry.live.store(nullptr, std::memory_order_relaxed);
    entry.owned.reset();
    PMPI_Grequest_complete(entry.handle);
    PMPI_Request_free(&entry.handle);
  }
  for (auto &c : t.chunks) c.reset();
  t.count = 0;
  t.index.store(nullptr, std::memory_order_release);
  t.indexes.clear();
  t.free_entries.clear();
  lane_requests_forget();
}

void status_fill(MPI_Status *st, int source, int tag, int error, MPI_Count bytes, bool cancelled) {
  if (st == MPI_STATUS_IGNORE) return;
  st->MPI_SOURCE = source;
  st->MPI_TAG = tag;
  if (error >= 0) st->MPI_ERROR = error;
  PMPI_Status_set_elements_x(st, MPI_BYTE, bytes);
  PMPI_Status_set_cancelled(st, cancelled ? 1 : 0);
}

void status_empty(MPI_Status *st) { status_fill(st, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, 0, false); }

}  // namespace mpix::p2p
