#include "ofi_fabric.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <utility>

#include "ofi_link.h"
#include "ofi_provider.h"

namespace mpix::progress::ofi {
namespace {

Fabric *g_fabric = nullptr;

// The API version asked for: FI_MR_* mode bits and FI_CONTEXT2 (1.5), what
// the configure check requires.
constexpr std::uint32_t kApiVersion = FI_VERSION(1, 9);

// A window never smaller than a few eager messages and never larger than
// this (as the UCX transport's).
constexpr std::size_t kMaxWindow = std::size_t{4} << 20;
constexpr auto kLinger = std::chrono::milliseconds(50);

// Receive buffers: about this many bytes of them, at least kMinSlots (a
// burst of small messages from several peers lands without waiting in the
// provider's own queue) and at most kMaxSlots; each takes one frame.
constexpr std::size_t kRecvBytes = std::size_t{4} << 20;
constexpr std::size_t kMinSlots = 16, kMaxSlots = 256;
// Room in a receive buffer beyond the envelope: the eager limit, and at
// least what a GPU envelope's descriptor needs.
constexpr std::size_t kMinPayloadRoom = 1024;
// Completion entries read per fi_cq_read, and reads per round of a poll.
// A round reads the queue while it yields entries and retries the sends
// that waited for room; a poll goes on with another while either did
// something, up to kRoundsPerPoll. So a flood does not keep one poll from
// returning, yet a sender with thousands of operations in flight retires
// many per poll: shm hands out a completion per read when its queues are
// full, and a call like MPI_Waitall pays a scan of its requests per poll
// (one completion per poll made a 100000-send flood take minutes).
constexpr std::size_t kCqBatch = 16;
constexpr int kCqReadsPerRound = 8;
constexpr int kRoundsPerPoll = 32;
// Frames injected are copied into scratch_ first: no more than this.
constexpr std::size_t kMaxInject = 16384;

// A control frame that did not fit an inject.
class ControlOp final : public Op {
 public:
  explicit ControlOp(const Control &c) : control(c) {}
  void complete(int err, std::size_t) override {
    if (err != 0 && err != FI_ECANCELED) mpi_error(err, "control frame");
    delete this;  // NOLINT: self-owned while in flight
  }
  void abandon() override {}
  Control control;
  Context ctx;
  Registration reg;
};

// What each rank tells the others at MPI_Init.
struct Card {
  std::uint32_t address_bytes;
  std::uint32_t reserved;
  std::uint64_t window;     // eager bytes it accepts from each sender
  std::uint64_t max_frame;  // the largest frame its receive buffers take
};

// Rank 0's provider, as the others must open it.
struct Choice {
  char provider[64];
  char fabric[128];
  std::uint32_t addr_format;
  std::int32_t found;
};

void set_why(char *why, std::size_t why_len, const char *what, int err) {
  std::snprintf(why, why_len, "%s: %s", what, fi_strerror(err < 0 ? -err : err));
}

}  // namespace

Fabric *fabric() { return g_fabric; }

Op::Op() {
  if (g_fabric != nullptr) g_fabric->adopt(this);
}

Op::~Op() {
  if (g_fabric != nullptr) g_fabric->forget(this);
}

int mpi_error(int err, const char *what) {
  if (err < 0) err = -err;
  if (err == 0) return MPI_SUCCESS;
  if (err == FI_ETRUNC) return MPI_ERR_TRUNCATE;
  std::fprintf(stderr, "[mpix] libfabric transport: %s failed: %s\n", what, fi_strerror(err));
  return err == FI_ENOMEM ? MPI_ERR_NO_MEM : MPI_ERR_OTHER;
}

Fabric::~Fabric() {
  acks_.clear();
  // Ops nobody will finish (rendezvous sources never read, abandoned at
  // MPI_Finalize): their registrations close before the domain does.
  const std::vector<Op *> left(ops_.begin(), ops_.end());
  for (Op *op : left) delete op;  // NOLINT: self-owned, and their owner is gone
  slab_mr_.mr.reset();
  ep_.reset();
  if (g_fabric == this) g_fabric = nullptr;
}

bool Fabric::start(const TransportConfig &config, const std::string &requested, char *why, std::size_t why_len) {
  config_ = config;
  int size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  peers_.resize(static_cast<std::size_t>(size));
  // Ops made from here on are this fabric's.
  g_fabric = this;

  Info hints(fi_allocinfo());
  fi_info *list = nullptr;
  int rc = -FI_ENOMEM;
  if (hints) {
    hints->caps = FI_MSG | FI_RMA;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    // Every mode bit this code can live with; the provider keeps those it
    // needs (shm: FI_MR_VIRT_ADDR; tcp;ofi_rxm: none).
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    // The engine lock serialises every call.
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    rc = fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &list);
  }
  Info all(list);
  if (rc != 0) set_why(why, why_len, "fi_getinfo found no FI_EP_RDM provider with FI_MSG and FI_RMA", rc);

  MPI_Comm node = MPI_COMM_NULL;
  int node_size = 0;
  PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  PMPI_Comm_size(node, &node_size);
  PMPI_Comm_free(&node);

  std::vector<fi_info *> entries;
  std::vector<std::string> names;
  for (fi_info *i = all.get(); i != nullptr; i = i->next) {
    entries.push_back(i);
    names.emplace_back(i->fabric_attr->prov_name != nullptr ? i->fabric_attr->prov_name : "");
  }
  Choice choice{};
  if (world_rank_ == 0 && rc == 0) {
    const int pick = choose_provider(names, requested, node_size == size);
    if (pick >= 0) {
      const fi_info *i = entries[static_cast<std::size_t>(pick)];
      std::snprintf(choice.provider, sizeof choice.provider, "%s", i->fabric_attr->prov_name);
      std::snprintf(choice.fabric, sizeof choice.fabric, "%s", i->fabric_attr->name ? i->fabric_attr->name : "");
      choice.addr_format = i->addr_format;
      choice.found = 1;
    } else {
      const char *filter = std::getenv("FI_PROVIDER");
      std::snprintf(why, why_len, "no libfabric provider fits (MPIX_OFI_PROVIDER=%s, FI_PROVIDER %s%s; %s)",
                    requested.c_str(), filter != nullptr ? "=" : "not set", filter != nullptr ? filter : "",
                    node_size == size ? "one node" : "several nodes: shm alone does not reach them");
    }
  }
  PMPI_Bcast(&choice, sizeof choice, MPI_BYTE, 0, MPI_COMM_WORLD);
  choice.provider[sizeof choice.provider - 1] = '\0';
  choice.fabric[sizeof choice.fabric - 1] = '\0';

  int ok = 0;
  if (choice.found != 0) {
    // The same provider and address format as rank 0, on the same fabric
    // (network) where this rank has it.
    fi_info *mine = nullptr;
    for (fi_info *i : entries) {
      if (std::strcmp(i->fabric_attr->prov_name, choice.provider) != 0 || i->addr_format != choice.addr_format)
        continue;
      if (mine == nullptr) mine = i;
      if (i->fabric_attr->name != nullptr && std::strcmp(i->fabric_attr->name, choice.fabric) == 0) {
        mine = i;
        break;
      }
    }
    if (mine == nullptr) std::snprintf(why, why_len, "libfabric provider %s (chosen by rank 0) is not available here",
                                       choice.provider);
    else ok = open(mine, why, why_len) ? 1 : 0;
  } else if (world_rank_ != 0 && why[0] == '\0') {
    std::snprintf(why, why_len, "rank 0 found no libfabric provider that fits");
  }
  int all_ok = 0;
  PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) {
    if (ok) std::snprintf(why, why_len, "libfabric provider %s is not usable on another rank", provider_.c_str());
    return false;
  }

  // Addresses, windows and receive-buffer sizes of every rank, once.
  char name[256];
  std::size_t name_bytes = sizeof name;
  rc = fi_getname(&ep_->fid, name, &name_bytes);
  if (rc != 0) name_bytes = 0;
  Card mine{static_cast<std::uint32_t>(name_bytes), 0, window_, slot_bytes_};
  std::vector<Card> cards(static_cast<std::size_t>(size));
  PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, cards.data(), sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
  std::vector<int> lengths, displs;
  int total = 0;
  for (const Card &c : cards) {
    lengths.push_back(static_cast<int>(c.address_bytes));
    displs.push_back(total);
    total += static_cast<int>(c.address_bytes);
  }
  std::vector<char> names_all(static_cast<std::size_t>(total));
  PMPI_Allgatherv(name, static_cast<int>(name_bytes), MPI_BYTE, names_all.data(), lengths.data(), displs.data(),
                  MPI_BYTE, MPI_COMM_WORLD);
  ok = rc == 0 ? 1 : 0;
  if (!ok) set_why(why, why_len, "fi_getname", rc);
  for (int r = 0; ok && r < size; ++r) {
    const std::size_t i = static_cast<std::size_t>(r);
    Peer &p = peers_[i];
    p.credit = static_cast<std::int64_t>(cards[i].window);
    p.max_frame = static_cast<std::size_t>(cards[i].max_frame);
    const int n = fi_av_insert(av_.get(), names_all.data() + displs[i], 1, &p.addr, 0, nullptr);
    if (n != 1 || cards[i].address_bytes == 0) {
      std::snprintf(why, why_len, "fi_av_insert of rank %d's address failed (%s)", r,
                    fi_strerror(n < 0 ? -n : FI_EINVAL));
      ok = 0;
    }
  }
  stats.endpoints = ok ? static_cast<std::uint64_t>(size) : 0;
  PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (ok && !all_ok) std::snprintf(why, why_len, "another rank could not insert the addresses");
  return all_ok != 0;
}

bool Fabric::open(fi_info *info, char *why, std::size_t why_len) {
  info_.reset(fi_dupinfo(info));
  if (!info_) {
    set_why(why, why_len, "fi_dupinfo", FI_ENOMEM);
    return false;
  }
  provider_ = info_->fabric_attr->prov_name;
  const std::uint64_t mode = info_->domain_attr->mr_mode;
  mr_local_ = (mode & FI_MR_LOCAL) != 0;
  mr_virt_addr_ = (mode & FI_MR_VIRT_ADDR) != 0;
  mr_prov_key_ = (mode & FI_MR_PROV_KEY) != 0;
  mr_endpoint_ = (mode & FI_MR_ENDPOINT) != 0;
  inject_size_ = std::min(info_->tx_attr->inject_size, kMaxInject);
  max_msg_ = info_->ep_attr->max_msg_size;
  iov_limit_ = info_->tx_attr->iov_limit;

  fid_fabric *f = nullptr;
  int rc = fi_fabric(info_->fabric_attr, &f, nullptr);
  fabric_.reset(f);
  if (rc != 0) {
    set_why(why, why_len, "fi_fabric", rc);
    return false;
  }
  fid_domain *d = nullptr;
  rc = fi_domain(fabric_.get(), info_.get(), &d, nullptr);
  domain_.reset(d);
  if (rc != 0) {
    set_why(why, why_len, "fi_domain", rc);
    return false;
  }
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_DATA;
  cq_attr.wait_obj = FI_WAIT_NONE;
  fid_cq *cq = nullptr;
  rc = fi_cq_open(domain_.get(), &cq_attr, &cq, nullptr);
  cq_.reset(cq);
  if (rc != 0) {
    set_why(why, why_len, "fi_cq_open", rc);
    return false;
  }
  fi_av_attr av_attr{};
  av_attr.type = info_->domain_attr->av_type != FI_AV_UNSPEC ? info_->domain_attr->av_type : FI_AV_TABLE;
  av_attr.count = peers_.size();
  fid_av *av = nullptr;
  rc = fi_av_open(domain_.get(), &av_attr, &av, nullptr);
  av_.reset(av);
  if (rc != 0) {
    set_why(why, why_len, "fi_av_open", rc);
    return false;
  }
  fid_ep *ep = nullptr;
  rc = fi_endpoint(domain_.get(), info_.get(), &ep, nullptr);
  ep_.reset(ep);
  // shm names its shared-memory region after the process id ("PID:0:0" in
  // /dev/shm), and a process that ends without closing its endpoint (exit
  // without MPI_Finalize, MPI_Abort, a kill) leaves the region behind: a
  // later process given the same id then fails fi_enable with EBUSY (seen in
  // make check). A name of our own, unique in time, never meets a stale one.
  if (rc == 0 && provider_.rfind("shm", 0) == 0) {
    char name[64];
    const auto now = std::chrono::steady_clock::now().time_since_epoch();
    std::snprintf(name, sizeof name, "mpix-%ld-%llx", static_cast<long>(getpid()),
                  static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
    rc = fi_setname(&ep_->fid, name, std::strlen(name) + 1);
  }
  if (rc == 0) rc = fi_ep_bind(ep_.get(), &cq_->fid, FI_TRANSMIT | FI_RECV);
  if (rc == 0) rc = fi_ep_bind(ep_.get(), &av_->fid, 0);
  if (rc == 0) rc = fi_enable(ep_.get());
  if (rc != 0) {
    set_why(why, why_len, "opening the endpoint", rc);
    return false;
  }

  slot_bytes_ = sizeof(Envelope) + std::max(config_.eager_limit, kMinPayloadRoom);
  slot_bytes_ = (slot_bytes_ + 63) / 64 * 64;
  if (slot_bytes_ > max_msg_) {
    std::snprintf(why, why_len, "provider %s takes messages of at most %zu bytes, an eager frame needs %zu "
                  "(lower MPIX_EAGER_LIMIT)", provider_.c_str(), max_msg_, slot_bytes_);
    return false;
  }
  std::size_t count = std::clamp(kRecvBytes / slot_bytes_, kMinSlots, kMaxSlots);
  if (info_->rx_attr->size > 0) count = std::min<std::size_t>(count, info_->rx_attr->size);
  slab_ = std::make_unique<char[]>(count * slot_bytes_);
  if (mr_local_ && local(slab_.get(), count * slot_bytes_, FI_RECV, &slab_mr_) != MPI_SUCCESS) {
    std::snprintf(why, why_len, "registering the receive buffers failed");
    return false;
  }
  for (std::size_t i = 0; i < count; ++i) {
    auto slot = std::make_unique<RecvSlot>();
    slot->mem = slab_.get() + i * slot_bytes_;
    slots_.push_back(std::move(slot));
    if (!post_receive(slots_.back().get())) {
      std::snprintf(why, why_len, "posting receive buffers failed");
      return false;
    }
  }
  scratch_.resize(inject_size_);

  const std::size_t senders = peers_.size() > 1 ? peers_.size() - 1 : 1;
  window_ = std::min(config_.unexpected_limit / senders, kMaxWindow);
  window_ = std::max(window_, 2 * (config_.eager_limit + kArrivalOverhead));
  return true;
}

bool Fabric::post_receive(RecvSlot *slot) {
  const ssize_t r = fi_recv(ep_.get(), slot->mem, slot_bytes_, slab_mr_.desc(), FI_ADDR_UNSPEC, &slot->fi);
  if (r == 0) return true;
  if (r != -FI_EAGAIN) mpi_error(static_cast<int>(r), "posting a receive buffer");
  // Retried by poll(): one buffer fewer meanwhile, the provider queues
  // what has no buffer.
  unposted_.push_back(slot);
  return false;
}

void Fabric::start_rings() {
  rings_.start_if(config_.shm_ring, config_.shm_ring_bytes, config_.shm_ring_slot_bytes, config_.verbose);
}

ssize_t Fabric::inject(int world, const void *head, std::size_t head_bytes, const void *payload, std::size_t n) {
  if (head_bytes + n <= rings_.capacity() && rings_.send(world, 1, head, head_bytes, payload, n)) {
    ++stats.shm_ring;
    return 0;
  }
  if (!queued_.empty() || head_bytes + n > inject_size_) return -FI_EAGAIN;
  std::memcpy(scratch_.data(), head, head_bytes);
  if (n > 0) std::memcpy(scratch_.data() + head_bytes, payload, n);
  return fi_inject(ep_.get(), scratch_.data(), head_bytes + n, peer(world).addr);
}

template <class Call>
int Fabric::post(Call call, Op *op, const char *what) {
  const auto attempt = [this, call, op]() -> ssize_t {
    const ssize_t r = call();
    if (r == 0) {
      ++op->inflight;
      outstanding_.fetch_add(1, std::memory_order_relaxed);
    }
    return r;
  };
  if (queued_.empty()) {
    const ssize_t r = attempt();
    if (r == 0) return MPI_SUCCESS;
    if (r != -FI_EAGAIN) return mpi_error(static_cast<int>(r), what);
  }
  queue([this, attempt, op] {
    const ssize_t r = attempt();
    if (r == -FI_EAGAIN) return false;
    if (r != 0) complete_later(op, static_cast<int>(-r), 0);
    return true;
  });
  return MPI_SUCCESS;
}

int Fabric::send(int world, const iovec *iov, void **desc, std::size_t count, Op *op, Context *ctx) {
  ctx->op = op;
  const fi_addr_t to = peer(world).addr;
  fid_ep *ep = ep_.get();
  std::array<iovec, 2> v{};
  std::array<void *, 2> d{};
  std::copy(iov, iov + count, v.begin());
  std::copy(desc, desc + count, d.begin());
  return post(
      [ep, v, d, count, to, ctx]() -> ssize_t {
        std::array<void *, 2> descs = d;  // fi_sendv's argument is not const
        return fi_sendv(ep, v.data(), descs.data(), count, to, &ctx->fi);
      },
      op, "fi_sendv");
}

int Fabric::read(int world, void *local, std::size_t n, void *desc, std::uint64_t addr, std::uint64_t key, Op *op,
                 Context *ctx) {
  ctx->op = op;
  const fi_addr_t from = peer(world).addr;
  fid_ep *ep = ep_.get();
  return post([ep, local, n, desc, from, addr, key, ctx]() -> ssize_t {
    return fi_read(ep, local, n, desc, from, addr, key, &ctx->fi);
  }, op, "fi_read");
}

void Fabric::queue(std::function<bool()> retry) {
  queued_.push_back(std::move(retry));
  outstanding_.fetch_add(1, std::memory_order_relaxed);
}

int Fabric::retry_queued() {
  int n = 0;
  while (!queued_.empty()) {
    // Taken out first: a retry may queue behind itself (never: it reports
    // instead), and fails leave it at the front.
    if (!queued_.front()()) break;
    queued_.pop_front();
    outstanding_.fetch_sub(1, std::memory_order_relaxed);
    ++n;
  }
  return n;
}

void Fabric::send_control(int world, FrameKind kind, std::uint32_t credit, std::uint64_t cookie) {
  const Control c{kind, world_rank_, credit, 0, cookie};
  const ssize_t r = inject(world, &c, sizeof c, nullptr, 0);
  if (r == 0) return;
  if (r != -FI_EAGAIN) {
    mpi_error(static_cast<int>(r), "control frame");
    return;
  }
  auto op = std::make_unique<ControlOp>(c);
  if (mr_local_ && local(&op->control, sizeof op->control, FI_SEND, &op->reg) != MPI_SUCCESS) return;
  iovec iov{&op->control, sizeof op->control};
  void *desc = op->reg.desc();
  if (send(world, &iov, &desc, 1, op.get(), &op->ctx) == MPI_SUCCESS) op.release();  // completes from poll()
}

void Fabric::complete_later(Op *op, int err, std::size_t length) {
  completed_.push_back(Done{op, err, length});
  outstanding_.fetch_add(1, std::memory_order_relaxed);
}

int Fabric::expose(const void *buf, std::size_t n, Registration *out, std::uint64_t *addr, std::uint64_t *key) {
  fid_mr *mr = nullptr;
  // Keys are ours to choose unless the provider picks them (FI_MR_PROV_KEY):
  // unique per domain, from a counter.
  const std::uint64_t requested = mr_prov_key_ ? 0 : next_key_++;
  int rc = fi_mr_reg(domain_.get(), buf, n, FI_REMOTE_READ, 0, requested, 0, &mr, nullptr);
  out->mr.reset(mr);
  if (rc == 0 && mr_endpoint_) {
    rc = fi_mr_bind(mr, &ep_->fid, 0);
    if (rc == 0) rc = fi_mr_enable(mr);
  }
  if (rc != 0) {
    out->mr.reset();
    return mpi_error(rc, "registering a rendezvous buffer (fi_mr_reg)");
  }
  *key = fi_mr_key(mr);
  // Without FI_MR_VIRT_ADDR a peer addresses the region from its start.
  *addr = mr_virt_addr_ ? reinterpret_cast<std::uintptr_t>(buf) : 0;
  return MPI_SUCCESS;
}

int Fabric::local(const void *buf, std::size_t n, std::uint64_t access, Registration *out) {
  if (!mr_local_ || n == 0) return MPI_SUCCESS;
  fid_mr *mr = nullptr;
  const std::uint64_t requested = mr_prov_key_ ? 0 : next_key_++;
  int rc = fi_mr_reg(domain_.get(), buf, n, access, 0, requested, 0, &mr, nullptr);
  out->mr.reset(mr);
  if (rc == 0 && mr_endpoint_) {
    rc = fi_mr_bind(mr, &ep_->fid, 0);
    if (rc == 0) rc = fi_mr_enable(mr);
  }
  if (rc != 0) {
    out->mr.reset();
    return mpi_error(rc, "registering a local buffer (fi_mr_reg, FI_MR_LOCAL)");
  }
  return MPI_SUCCESS;
}

void Fabric::consumed(int world, std::size_t credit) {
  if (owe(world, credit)) send_control(world, kFrameCredit, take_owed(world), 0);
}

void Fabric::arrived(const char *data, std::size_t length) {
  std::uint32_t kind = 0;
  if (length >= sizeof kind) std::memcpy(&kind, data, sizeof kind);
  // Counted before decoding, as its sender counted it (MPI_Finalize's sums).
  if (kind == kFrameMessage || kind == kFrameRendezvous) ++stats.arrivals;
  Frame f;
  // Its sender is unknown until the frame is: rank -1 in the report.
  const WireError bad = decode_frame(data, length, static_cast<int>(peers_.size()), &f);
  if (bad != WireError::kOk) {
    report_malformed("libfabric transport", -1, bad);
    return;
  }
  switch (f.kind) {
    case kFrameMessage:
    case kFrameRendezvous: {
      if (f.e.credit != 0) peer(f.e.world).credit += f.e.credit;
      if (auto *link = find_link(f.e.link)) {
        link->receive(f);
        return;
      }
      // The communicator is gone here: sent to a freed communicator, or
      // after it was freed, with no receive for it. Its sender's buffer
      // is released all the same.
      if (config_.verbose > 0)
        std::fprintf(stderr, "[mpix] libfabric transport: rank %d dropped a message (tag %d) for a freed "
                     "communicator\n", world_rank_, f.e.h.tag);
      if (f.kind == kFrameRendezvous) send_control(f.e.world, kFrameRendezvousDone, 0, f.e.cookie);
      return;
    }
    case kFrameCredit: peer(f.c.world).credit += f.c.credit; return;
    case kFrameSyncAck:
    case kFrameRendezvousDone: {
      auto it = acks_.find(f.c.cookie);
      if (it == acks_.end()) return;
      Op *op = it->second.op;
      acks_.erase(it);
      if (f.kind == kFrameSyncAck) ++stats.sync_acks;
      op->acknowledged();
      return;
    }
    default: return;
  }
}

void Fabric::handle(void *context, int err, std::size_t length) {
  // Every context we pass is a Context (fi_context2 at its start).
  auto *ctx = reinterpret_cast<Context *>(context);
  if (ctx->op == nullptr) {
    auto *slot = static_cast<RecvSlot *>(ctx);
    if (err == 0) {
      arrived(slot->mem, length);
    } else if (err == FI_ETRUNC) {
      // Larger than any frame a peer may send us.
      report_malformed("libfabric transport", -1, WireError::kBadLength);
    } else if (err != FI_ECANCELED) {
      mpi_error(err, "receive");
    }
    if (!stopping_) post_receive(slot);
    return;
  }
  Op *op = ctx->op;
  --op->inflight;
  outstanding_.fetch_sub(1, std::memory_order_relaxed);
  op->complete(err, length);
}

int Fabric::drain_queue() {
  int n = 0;
  fi_cq_data_entry entries[kCqBatch];
  for (int reads = 0; reads < kCqReadsPerRound; ++reads) {
    const ssize_t got = fi_cq_read(cq_.get(), entries, kCqBatch);
    if (got == -FI_EAVAIL) {
      fi_cq_err_entry e{};
      if (fi_cq_readerr(cq_.get(), &e, 0) != 1) break;
      handle(e.op_context, e.err != 0 ? e.err : FI_EIO, e.len);
      ++n;
      continue;
    }
    if (got <= 0) {
      if (got != -FI_EAGAIN && got != 0) mpi_error(static_cast<int>(got), "fi_cq_read");
      break;
    }
    for (ssize_t i = 0; i < got; ++i) handle(entries[i].op_context, 0, entries[i].len);
    n += static_cast<int>(got);
  }
  return n;
}

int Fabric::poll() {
  int n = 0;
  for (int round = 0; round < kRoundsPerPoll; ++round) {
    const int read = drain_queue();
    if (!unposted_.empty()) {
      std::vector<RecvSlot *> again;
      again.swap(unposted_);
      for (RecvSlot *slot : again) post_receive(slot);
    }
    const int sent = queued_.empty() ? 0 : retry_queued();
    // Frames from the rings, handled as the provider's (arrived() keeps
    // nothing of the slot it reads).
    const int ringed = rings_.running() ? rings_.poll([this](const shm::Message &m) {
      arrived(static_cast<const char *>(m.header), m.header_bytes + m.bytes);
    }) : 0;
    n += read + sent + ringed;
    if (read == 0 && sent == 0 && ringed == 0) break;
  }
  fail_acks_of_exited();
  while (!completed_.empty()) {
    std::vector<Done> done;
    done.swap(completed_);
    for (const Done &d : done) {
      outstanding_.fetch_sub(1, std::memory_order_relaxed);
      d.op->complete(d.err, d.length);
    }
    n += static_cast<int>(done.size());
  }
  if (n > 0) activity_.store(activity_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return n;
}

bool Fabric::busy() { return busy_within(kLinger); }

TransportCounts Fabric::counts() const {
  TransportCounts c;
  c.sent = envelopes_sent;
  c.arrived = stats.arrivals;
  c.local = queued_.size() + completed_.size();
  for (Op *op : ops_)
    if (op->local()) ++c.local;
  return c;
}

void Fabric::abandon() {
  for (Op *op : ops_) op->abandon();
}

bool Fabric::progress_until(const std::function<bool()> &done, double seconds) {
  return poll_until([this] { return poll(); }, done, seconds);
}

void Fabric::fence() {
  polling_barrier([this] { return poll(); });
}

void Fabric::stop() {
  // Sends and reads in flight finish (a control frame, a rendezvous-done a
  // peer waits for); then every rank has what it needs from the others.
  const auto idle = [this] {
    if (!queued_.empty() || !completed_.empty()) return false;
    for (Op *op : ops_)
      if (op->inflight > 0) return false;
    return true;
  };
  if (!progress_until(idle, 5.0))
    std::fprintf(stderr, "[mpix] libfabric transport: rank %d: operations still in flight at MPI_Finalize\n",
                 world_rank_);
  // Peers may still read from this process or need its progress (the
  // providers here move data only when polled).
  fence();
  stopping_ = true;
}

}  // namespace mpix::progress::ofi
