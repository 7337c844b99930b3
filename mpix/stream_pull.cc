// The hosts' part of pulled sends (see stream_pull.h).
#include "stream_pull.h"

#include <cstring>

#include "device/copy.h"
#include "device/ipc.h"
#include "device/memtype.h"

namespace mpix::stream {
namespace {

constexpr int kTagOffer = 1;    // sender -> receiver: OfferMsg
constexpr int kTagConfirm = 2;  // receiver -> sender: ConfirmMsg

struct OfferMsg {
  std::uint32_t id;
  std::uint32_t pad;
  std::uint64_t base;  // the allocation's address in the sender's process
  unsigned char handle[device::kIpcHandleBytes];
};
struct ConfirmMsg {
  std::uint32_t id;
  std::uint32_t mapped;  // 0: the receiver could not map it (never pull it there)
};

}  // namespace

PullLinks::PullLinks(MPI_Comm sync, const MPIX_Device_comm &h, int device)
    : sync_(sync), h_(h), device_(device) {
  const auto n = static_cast<std::size_t>(h.size);
  imports_.assign(n, std::vector<void *>(MPIXD_PULL_EXPORTS, nullptr));
  import_bases_.resize(n);
  gens_.assign(n, 0);
  busy_.assign(n, 0);
  sent_.assign(n, 0);
  received_.assign(n, 0);
  by_id_.assign(MPIXD_PULL_EXPORTS, nullptr);
}

PullLinks::~PullLinks() {
  // Every message sent on sync is received before it goes (MPI_Comm_free
  // would otherwise leave them to a later communicator of the same
  // context): the counts tell each rank how many are still to come.
  std::vector<int> expected(sent_.size(), 0);
  PMPI_Alltoall(sent_.data(), 1, MPI_INT, expected.data(), 1, MPI_INT, sync_);
  for (std::size_t p = 0; p < expected.size(); ++p) {
    while (received_[p] < expected[p]) {
      MPI_Status st;
      PMPI_Probe(static_cast<int>(p), MPI_ANY_TAG, sync_, &st);
      take(st, false);
    }
  }
  for (Outgoing &o : outgoing_) PMPI_Wait(&o.req, MPI_STATUS_IGNORE);
  for (auto &peer : imports_)
    for (void *p : peer)
      if (p != nullptr) device::ipc_close(p);
}

void PullLinks::send(int peer, int tag, const void *data, int bytes) {
  Outgoing o{MPI_REQUEST_NULL, std::make_unique<unsigned char[]>(static_cast<std::size_t>(bytes))};
  std::memcpy(o.data.get(), data, static_cast<std::size_t>(bytes));
  if (PMPI_Isend(o.data.get(), bytes, MPI_BYTE, peer, tag, sync_, &o.req) != MPI_SUCCESS) return;
  ++sent_[peer];
  outgoing_.push_back(std::move(o));
}

void PullLinks::reap() {
  while (!outgoing_.empty()) {
    int done = 0;
    PMPI_Test(&outgoing_.front().req, &done, MPI_STATUS_IGNORE);
    if (!done) return;
    outgoing_.pop_front();
  }
}

bool PullLinks::ready(const void *buf, int peer, std::uint32_t *export_id, std::uint64_t *offset) {
  const device::PtrInfo info = device::query(buf);
  if (info.kind != device::MemKind::kDevice || !info.ipc_capable || info.buffer_id == 0) return false;
  auto it = exports_.find(info.buffer_id);
  if (it == exports_.end()) {
    if (next_export_ >= MPIXD_PULL_EXPORTS) return false;  // ids are never reused: a stale mapping stays valid
    Export e{next_export_++, info.base, info.size, std::vector<std::uint8_t>(imports_.size(), kNone)};
    it = exports_.emplace(info.buffer_id, std::move(e)).first;
    by_id_[it->second.id] = &it->second;
  }
  Export &e = it->second;
  std::uint8_t &state = e.peers[static_cast<std::size_t>(peer)];
  if (state == kMapped) {
    *export_id = e.id;
    *offset = reinterpret_cast<std::uintptr_t>(buf) - e.base;
    return true;
  }
  if (state == kNone) {
    OfferMsg m{};
    m.id = e.id;
    m.base = e.base;
    if (device::ipc_export(reinterpret_cast<void *>(e.base), m.handle) != device::Status::kOk) {
      state = kRefused;
      return false;
    }
    send(peer, kTagOffer, &m, sizeof(m));
    state = kOffered;
  }
  return false;
}

bool PullLinks::take_gen(int peer, std::uint32_t *gen) {
  static_assert(MPIXD_PULL_DONE == 64, "one bit of busy_ per done word");
  const std::uint64_t busy = busy_[peer];
  if (~busy == 0) return false;
  const auto word = static_cast<std::uint32_t>(__builtin_ctzll(~busy));
  // Never 0 (a done word's first value): the count starts at 1 and skips 0
  // when it wraps (2^26 pulled sends to one peer).
  std::uint32_t count = (gens_[peer] + 1) & ((1u << 26) - 1);
  if (count == 0) count = 1;
  gens_[peer] = count;
  busy_[peer] = busy | std::uint64_t{1} << word;
  *gen = count << 6 | word;
  return true;
}

void PullLinks::give_gen(int peer, std::uint32_t gen) {
  busy_[peer] &= ~(std::uint64_t{1} << (gen & (MPIXD_PULL_DONE - 1)));
}

void PullLinks::take(const MPI_Status &st, bool map) {
  const int peer = st.MPI_SOURCE;
  ++received_[peer];
  if (st.MPI_TAG == kTagOffer) {
    OfferMsg m{};
    PMPI_Recv(&m, sizeof(m), MPI_BYTE, peer, kTagOffer, sync_, MPI_STATUS_IGNORE);
    if (!map) return;
    ConfirmMsg c{m.id, 0};
    const std::uint32_t id = m.id & (MPIXD_PULL_EXPORTS - 1);
    void *&slot = imports_[peer][id];
    // An allocation at the address of one mapped before: the sender freed
    // that one (two live allocations never share an address), and CUDA
    // refuses the new handle while the old mapping stands (it would also
    // keep the freed memory allocated). The old export is never named
    // again (ids are not reused), so its mapping goes.
    auto old = import_bases_[peer].find(m.base);
    if (old != import_bases_[peer].end() && old->second != id) {
      void *&stale = imports_[peer][old->second];
      if (stale != nullptr) device::ipc_close(stale);
      stale = nullptr;
    }
    import_bases_[peer][m.base] = id;
    void *mapped = nullptr;
    // A failure (the allocation already mapped by another path of this
    // process, say) is answered too: the sender keeps the ring for it.
    if (slot == nullptr && device::ipc_open(m.handle, device_, &mapped) == device::Status::kOk) {
      // The address goes into this rank's mailbox before the sender can
      // name the export: the copy is complete when copy_sync returns.
      const auto addr = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(mapped));
      std::uint64_t *dst = mpixd_pull_imports(&h_, peer) + (m.id & (MPIXD_PULL_EXPORTS - 1));
      if (device::copy_sync(dst, &addr, sizeof(addr), device_) == device::Status::kOk) {
        slot = mapped;
        c.mapped = 1;
      } else {
        device::ipc_close(mapped);
      }
    }
    send(peer, kTagConfirm, &c, sizeof(c));
  } else {
    ConfirmMsg c{};
    PMPI_Recv(&c, sizeof(c), MPI_BYTE, peer, kTagConfirm, sync_, MPI_STATUS_IGNORE);
    if (!map || c.id >= MPIXD_PULL_EXPORTS || by_id_[c.id] == nullptr) return;
    by_id_[c.id]->peers[static_cast<std::size_t>(peer)] = c.mapped ? kMapped : kRefused;
  }
}

void PullLinks::poll() {
  reap();
  for (;;) {
    int flag = 0;
    MPI_Status st;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, sync_, &flag, &st);
    if (!flag) return;
    take(st, true);
  }
}

}  // namespace mpix::stream
