#include "pmpi_link.h"

#include <climits>
#include <cstring>
#include <memory>

#include "progress/datatype.h"

namespace mpix::progress {
namespace {

// Eager sends whose user request completed when the copy was made but whose
// transfer is still running. Bounded: a sender that outruns its receiver
// would otherwise turn every send into a pending underlying request until
// MPI's request pool runs out (native MPI throttles it through the user's
// own request instead). Past the bound, a send's request waits for its
// transfer, as natively.
constexpr long kEagerDetachedMax = 4096;
// Blocking eager sends up to this many bytes (envelope included) go by a
// blocking PMPI_Send of the caller's bytes; larger ones from a copy (send_eager).
constexpr std::size_t kBlockingEagerMax = 1024;
long g_eager_detached = 0;  // under the engine lock
TransportCounts g_counts;    // under the engine lock
TransportStats g_stats;      // under the engine lock

// An eager send in flight that owns its copy of envelope and payload.
// Detached: nobody waits for it. Tied: `done` (the user's request) completes
// with the transfer.
struct EagerCopy final : Pending {
  explicit EagerCopy(std::size_t bytes, Pending *tied) : buffer(std::make_unique<char[]>(bytes)), done(tied) {
    if (done == nullptr) ++g_eager_detached;
  }
  ~EagerCopy() override {
    if (done == nullptr) --g_eager_detached;
  }
  EagerCopy(const EagerCopy &) = delete;
  EagerCopy &operator=(const EagerCopy &) = delete;
  void on_complete(const MPI_Status &st) override {
    if (done != nullptr) done->on_complete(st);
    delete this;  // NOLINT: self-owned until completion
  }
  std::unique_ptr<char[]> buffer;
  Pending *done;
};

// The receive of a rendezvous payload larger than the receive buffer: the
// whole message into a copy, then what fits into the user's buffer, and
// MPI_ERR_TRUNCATE, as over UCX and libfabric. The MPI library is never
// asked to truncate: Open MPI 4.1's single-copy rendezvous over shared
// memory (vader, CMA) writes the whole message past the receive buffer
// when it truncates, natively too (test/mpi/p2p/truncate).
struct TruncatingPull final : Pending {
  void on_complete(const MPI_Status &st) override {
    int err = st.MPI_ERROR;
    std::size_t got = 0;
    if (err == MPI_SUCCESS) {
      got = static_cast<std::size_t>(layout.bytes);  // what fits (the message is larger)
      err = MPI_ERR_TRUNCATE;
      if (layout.contiguous) {
        if (got > 0) std::memcpy(static_cast<char *>(buf) + layout.true_lb, temp.get(), got);
      } else if (got > 0) {
        const int elements = static_cast<int>(layout.bytes / layout.type_size);
        const int rc = unpack_bytes(temp.get(), static_cast<int>(got), buf, elements, dtype, comm);
        if (rc != MPI_SUCCESS) err = rc;
      }
    }
    MPI_Status out{};
    out.MPI_SOURCE = st.MPI_SOURCE;
    out.MPI_TAG = st.MPI_TAG;
    out.MPI_ERROR = err;
    PMPI_Status_set_elements_x(&out, MPI_BYTE, static_cast<MPI_Count>(got));
    if (done != nullptr) done->on_complete(out);
    delete this;  // NOLINT: self-owned until completion
  }
  Pending *done = nullptr;
  void *buf = nullptr;
  MPI_Datatype dtype = MPI_DATATYPE_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  Layout layout;
  std::unique_ptr<char[]> temp;
};

}  // namespace

PmpiLink::PmpiLink(const LinkParams &params, const TransportConfig &config)
    : params_(params), slot_bytes_(sizeof(WireHeader) + config.eager_limit), limit_(config.unexpected_limit) {
  PMPI_Comm_rank(params_.ctrl, &self_);
  for (int i = 0; i < config.landing_slots; ++i) {
    auto slot = std::make_unique<Landing>();
    slot->buffer = std::make_unique<char[]>(slot_bytes_);
    post(slot.get());
    slots_.push_back(std::move(slot));
  }
}

PmpiLink::~PmpiLink() {
  for (Landing *slot : posted_order_) {
    PMPI_Cancel(&slot->request);
    PMPI_Request_free(&slot->request);
  }
}

void PmpiLink::post(Landing *slot) {
  PMPI_Irecv(slot->buffer.get(), static_cast<int>(slot_bytes_), MPI_BYTE, MPI_ANY_SOURCE, 0, params_.ctrl,
             &slot->request);
  posted_order_.push_back(slot);
}

void PmpiLink::unpark() {
  for (Landing *slot : parked_) post(slot);
  parked_.clear();
}

void PmpiLink::want_more() {
  if (!parked_.empty()) unpark();
}

void PmpiLink::consumed(int, std::size_t credit) {
  held_ -= credit < held_ ? credit : held_;
  if (!parked_.empty() && held_ <= limit_ / 2) unpark();
}

int PmpiLink::poll() {
  int taken = 0;
  while (!posted_order_.empty()) {
    Landing *slot = posted_order_.front();
    int flag = 0;
    PMPI_Test(&slot->request, &flag, &slot->status);
    if (!flag) break;
    posted_order_.pop_front();
    ++taken;
    ++g_counts.arrived;
    ++g_stats.arrivals;
    int got = 0;
    PMPI_Get_count(&slot->status, MPI_BYTE, &got);
    Arrival a;
    a.source = slot->status.MPI_SOURCE;
    // Shorter than an envelope: what lies in the buffer is the previous
    // message's, not this one's.
    const WireError bad = decode_landing(slot->buffer.get(), got > 0 ? static_cast<std::size_t>(got) : 0, &a.h,
                                         &a.payload_bytes);
    if (bad != WireError::kOk) {
      report_malformed("pmpi transport", a.source, bad);
      post(slot);
      continue;
    }
    a.payload = slot->buffer.get() + sizeof a.h;
    a.credit = a.payload_bytes + kArrivalOverhead;
    held_ += a.credit;
    params_.sink->arrived(a);
    // With too much unexpected data and nobody waiting, new messages stay
    // in the MPI library's queue (and its flow control).
    if (held_ > limit_ && !params_.sink->receive_waiting()) parked_.push_back(slot);
    else post(slot);
  }
  return taken;
}

TransportCounts PmpiLink::counts() { return g_counts; }
TransportStats PmpiLink::stats() { return g_stats; }

int PmpiLink::send_eager(int dest, const WireHeader &h, const void *payload, std::size_t n, Pending *done,
                         bool *pending) {
  *pending = false;
  ++g_counts.sent;
  ++g_stats.eager_sent;
  const std::size_t total = sizeof h + n;
  // A blocking send straight from the caller's bytes only where the MPI
  // library surely sends eagerly: a larger one may go by its rendezvous and
  // wait, under the engine lock, for the peer to post a landing receive,
  // which the peer's own blocked sender may keep it from doing (two threads
  // of each rank sending 16 KB to each other hung; test/mpi/p2p/lanes).
  if (done == nullptr && dest != self_ && total <= kBlockingEagerMax) {
    if (scratch_.size() < total) scratch_.resize(total);
    std::memcpy(scratch_.data(), &h, sizeof h);
    if (n > 0) std::memcpy(scratch_.data() + sizeof h, payload, n);
    return PMPI_Send(scratch_.data(), static_cast<int>(total), MPI_BYTE, dest, 0, params_.ctrl);
  }
  // (To this process itself always from a copy: see send_rendezvous.)
  const bool tied = done != nullptr && g_eager_detached >= kEagerDetachedMax;
  auto copy = std::make_unique<EagerCopy>(total, tied ? done : nullptr);
  std::memcpy(copy->buffer.get(), &h, sizeof h);
  if (n > 0) std::memcpy(copy->buffer.get() + sizeof h, payload, n);
  MPI_Request inner = MPI_REQUEST_NULL;
  const int rc = PMPI_Isend(copy->buffer.get(), static_cast<int>(total), MPI_BYTE, dest, 0, params_.ctrl, &inner);
  if (rc != MPI_SUCCESS) return rc;
  // The inflight set owns the copy from here; it frees itself on completion.
  inflight().add(inner, copy.release());
  *pending = tied;
  return MPI_SUCCESS;
}

int PmpiLink::send_rendezvous(int dest, const WireHeader &h, const void *buf, int count, MPI_Datatype dtype,
                              SendMode mode, Pending *done, bool *pending) {
  *pending = false;
  ++g_counts.sent;
  ++g_stats.rendezvous_sent;
  int rc = MPI_SUCCESS;
  // The MPI library may hold a send to this process itself until a receive
  // matches it (MPICH does, at any size), and the landing receive that would
  // match is reposted only by a later poll of this thread: a blocking
  // envelope send to itself would then never return (17 rendezvous
  // MPI_Isends to oneself with 16 landing slots hung; the soak found it).
  if (mode == SendMode::kBuffered || dest == self_) {
    // Never blocks: the envelope goes from memory of its own.
    auto envelope = std::make_unique<EagerCopy>(sizeof h, nullptr);
    std::memcpy(envelope->buffer.get(), &h, sizeof h);
    MPI_Request req = MPI_REQUEST_NULL;
    rc = PMPI_Isend(envelope->buffer.get(), sizeof h, MPI_BYTE, dest, 0, params_.ctrl, &req);
    if (rc == MPI_SUCCESS) inflight().add(req, envelope.release());
  } else {
    rc = PMPI_Send(&h, sizeof h, MPI_BYTE, dest, 0, params_.ctrl);
  }
  if (rc != MPI_SUCCESS) return rc;
  // Synchronous sends: the data send is a PMPI_Issend, which completes
  // only once our receiver matched and posted its receive. Buffered sends:
  // the payload goes out by PMPI_Ibsend, so it uses exactly the space of the
  // application's attached buffer that a native MPI_Bsend would.
  MPI_Request inner = MPI_REQUEST_NULL;
  switch (mode) {
    case SendMode::kSync: rc = PMPI_Issend(buf, count, dtype, dest, h.data_tag, params_.data, &inner); break;
    case SendMode::kBuffered: rc = PMPI_Ibsend(buf, count, dtype, dest, h.data_tag, params_.data, &inner); break;
    default: rc = PMPI_Isend(buf, count, dtype, dest, h.data_tag, params_.data, &inner); break;
  }
  if (rc != MPI_SUCCESS) return rc;
  if (mode == SendMode::kBuffered) {
    PMPI_Request_free(&inner);  // the attached buffer owns the copy now
    return MPI_SUCCESS;
  }
  inflight().add(inner, done);
  *pending = true;
  return MPI_SUCCESS;
}

int PmpiLink::pull(const Arrival &a, void *buf, int count, MPI_Datatype dtype, Pending *done) {
  // Straight into the user's buffer and type where the message fits (the
  // envelope says its size); a larger one through a copy (TruncatingPull).
  const Layout layout = layout_of(dtype, count);
  MPI_Request inner = MPI_REQUEST_NULL;
  if (a.h.kind != kRendezvous || a.h.bytes <= static_cast<std::uint64_t>(layout.bytes)) {
    const int rc = PMPI_Irecv(buf, count, dtype, a.source, a.h.data_tag, params_.data, &inner);
    if (rc == MPI_SUCCESS) inflight().add(inner, done);
    return rc;
  }
  if (a.h.bytes > static_cast<std::uint64_t>(INT_MAX)) return MPI_ERR_COUNT;  // not from an int-counted send
  auto op = std::make_unique<TruncatingPull>();
  op->done = done;
  op->buf = buf;
  op->dtype = dtype;
  op->comm = params_.data;
  op->layout = layout;
  op->temp = std::make_unique<char[]>(a.h.bytes);
  const int rc = PMPI_Irecv(op->temp.get(), static_cast<int>(a.h.bytes), MPI_BYTE, a.source, a.h.data_tag,
                            params_.data, &inner);
  if (rc == MPI_SUCCESS) inflight().add(inner, op.release());
  return rc;
}

}  // namespace mpix::progress
