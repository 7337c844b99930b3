#include "request.h"

#include <cstring>
#include <memory>
#include <new>
#include <unordered_map>
#include <vector>

#include "datatype.h"
#include "engine.h"
#include "progress/immortal.h"
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

// Released requests kept for reuse (map node and Request together), so a
// nonblocking operation allocates nothing once the pool is warm; bounded so
// that a burst of requests does not pin its memory. None under
// AddressSanitizer: a use of a released request stays a use after free it
// reports, not a use of the next request.
#if defined(__SANITIZE_ADDRESS__)
#define MPIX_REQUEST_POOL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MPIX_REQUEST_POOL 0
#endif
#endif
#ifndef MPIX_REQUEST_POOL
#define MPIX_REQUEST_POOL 1
#endif
constexpr std::size_t kSpareRequests = MPIX_REQUEST_POOL ? 1024 : 0;

struct Table {
  using Live = std::unordered_map<std::uintptr_t, std::unique_ptr<Request>>;
  Live live;
  std::vector<Live::node_type> spare;
  std::vector<MPI_Request> free_handles;
  std::vector<MPI_Request> all_handles;
};

Table &table() {
  static Immortal<Table> t;
  return t.get();
}

std::atomic<int> g_live{0};

MPI_Request new_handle() {
  Table &t = table();
  if (!t.free_handles.empty()) {
    MPI_Request h = t.free_handles.back();
    t.free_handles.pop_back();
    return h;
  }
  MPI_Request h = MPI_REQUEST_NULL;
  PMPI_Grequest_start(noop_query, noop_free, noop_cancel, nullptr, &h);
  t.all_handles.push_back(h);
  return h;
}

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

Request::~Request() {
  if (dtype_owned) PMPI_Type_free(&dtype);
}

void init_request(Request *r, const std::shared_ptr<P2PComm> &c, const void *sbuf, void *rbuf, int count,
                  MPI_Datatype dtype, int peer, int tag) {
  r->comm = c;
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
  const MPI_Request handle = new_handle();
  Request *raw = nullptr;
  if (!t.spare.empty()) {
    Table::Live::node_type node = std::move(t.spare.back());
    t.spare.pop_back();
    node.key() = handle_key(handle);
    raw = node.mapped().get();
    t.live.insert(std::move(node));
  } else {
    auto r = std::make_unique<Request>();
    raw = r.get();
    t.live.emplace(handle_key(handle), std::move(r));
  }
  raw->kind = kind;
  raw->handle = handle;
  g_live.fetch_add(1, std::memory_order_relaxed);
  return raw;
}

Request *request_lookup(MPI_Request handle) {
  if (handle == MPI_REQUEST_NULL || g_live.load(std::memory_order_relaxed) == 0) return nullptr;
  Table &t = table();
  auto it = t.live.find(handle_key(handle));
  return it == t.live.end() ? nullptr : it->second.get();
}

void request_release(Request *r) {
  Table &t = table();
  if (r->companion) {
    request_release(r->companion);
    r->companion = nullptr;
  }
  auto it = t.live.find(handle_key(r->handle));
  if (it == t.live.end()) return;
  Table::Live::node_type node = t.live.extract(it);
  g_live.fetch_sub(1, std::memory_order_relaxed);
  // Callers release only requests with no transfer in flight: an underlying
  // completion would otherwise call into a request made anew.
  t.free_handles.push_back(r->handle);
  if (t.spare.size() >= kSpareRequests) return;  // node and request freed here
  // As destroyed and made fresh (its references dropped now), in place.
  std::destroy_at(r);
  ::new (static_cast<void *>(r)) Request();
  t.spare.push_back(std::move(node));
}

int request_live() { return g_live.load(std::memory_order_relaxed); }

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
  t.live.clear();
  g_live.store(0, std::memory_order_relaxed);
  for (MPI_Request h : t.all_handles) {
    PMPI_Grequest_complete(h);
    PMPI_Request_free(&h);
  }
  t.all_handles.clear();
  t.free_handles.clear();
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
