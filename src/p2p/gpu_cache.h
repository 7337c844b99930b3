// Host-side bookkeeping of the GPU data paths, free of CUDA and MPI so that
// unit tests run it on machines without a GPU: how a staged transfer is cut
// into chunks, the receiver's cache of mapped CUDA-IPC allocations, and the
// pool of pinned staging buffers.
#ifndef MPIX_SRC_P2P_GPU_CACHE_H
#define MPIX_SRC_P2P_GPU_CACHE_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mpix::p2p {

// A staged transfer of `total` bytes moves as chunks of `chunk` bytes (the
// last one shorter); both sides compute the same plan from the same numbers.
struct ChunkPlan {
  std::size_t total = 0;
  std::size_t chunk = 1;
  std::size_t count() const { return total == 0 ? 0 : (total + chunk - 1) / chunk; }
  std::size_t offset(std::size_t i) const { return i * chunk; }
  std::size_t length(std::size_t i) const {
    const std::size_t off = offset(i);
    return off >= total ? 0 : (total - off < chunk ? total - off : chunk);
  }
};

inline ChunkPlan plan_chunks(std::size_t total, std::size_t chunk) {
  return ChunkPlan{total, chunk == 0 ? 1 : chunk};
}

// Which allocation of which process: the exporter's identity, its base
// address and the IPC handle bytes. The handle is part of the key because a
// base address can be reused by a later allocation after a free; a new
// allocation always comes with a new handle, so a stale mapping is never
// used for it. (One allocation always comes with one handle: the sender
// exports it once, per CU_POINTER_ATTRIBUTE_BUFFER_ID.) `size` is not part
// of the key: with base it says which of the exporter's addresses the
// allocation occupies.
struct IpcKey {
  std::uint64_t host = 0;
  std::int32_t pid = 0;
  std::uint64_t base = 0;
  std::uint64_t size = 0;  // 0: unknown, taken as one byte
  unsigned char handle[64] = {};
  // The identity as one fixed-size value: a cache hit (once per message)
  // allocates nothing (a std::string of these 84 bytes did, twice).
  struct Bytes {
    std::array<char, sizeof(std::uint64_t) * 2 + sizeof(std::int32_t) + 64> b;
    bool operator==(const Bytes &o) const { return b == o.b; }
  };
  struct BytesHash {
    std::size_t operator()(const Bytes &k) const {
      return std::hash<std::string_view>{}(std::string_view(k.b.data(), k.b.size()));
    }
  };
  Bytes bytes() const {
    static_assert(sizeof(Bytes::b) == sizeof host + sizeof pid + sizeof base + sizeof handle, "every field once");
    Bytes k;
    char *p = k.b.data();
    std::memcpy(p, &host, sizeof host);
    std::memcpy(p + sizeof host, &pid, sizeof pid);
    std::memcpy(p + sizeof host + sizeof pid, &base, sizeof base);
    std::memcpy(p + sizeof host + sizeof pid + sizeof base, handle, sizeof handle);
    return k;
  }
  std::uint64_t end() const { return base + (size == 0 ? 1 : size); }
  // Both allocations occupy a common address of the same exporter.
  bool overlaps(const IpcKey &o) const {
    return host == o.host && pid == o.pid && base < o.end() && o.base < end();
  }
};

// The receiver's mapped peer allocations. A mapping keeps the exporter's
// memory alive (the driver frees it only when every importer has closed
// it), so the cache is bounded: least recently used mappings that no copy
// is using are closed beyond `capacity` (0: close after every transfer).
//
// A mapping outlives the exporter's cudaFree, and while it is open the
// driver may refuse to map a later allocation of that exporter at the freed
// addresses (cudaErrorAlreadyMapped, "resource already mapped": seen on an
// H100, driver 580, for 16 KiB buffers freed and reallocated over the old
// addresses). acquire() does not try: it answers kStale and the transfer is
// staged, as it was after the refused open, but with no failed call for
// compute-sanitizer to count. Closing the stale mapping first is no way
// out: cudaIpcCloseMemHandle waits for every kernel running in this
// process, and one may be waiting for this very message (a device-initiated
// receive), so the close would never return.
class IpcCache {
 public:
  using OpenFn = std::function<int(const IpcKey &, void **)>;
  using CloseFn = std::function<void(void *)>;

  // acquire()'s answer for an allocation where a stale mapping lies.
  static constexpr int kStale = -1;

  IpcCache(std::size_t capacity, OpenFn open, CloseFn close)
      : capacity_(capacity), open_(std::move(open)), close_(std::move(close)) {}
  ~IpcCache() { clear(); }
  IpcCache(const IpcCache &) = delete;
  IpcCache &operator=(const IpcCache &) = delete;

  // The local address of key's allocation, mapped now or earlier; the
  // mapping stays open until release(). Returns 0, kStale or the open
  // error. Never closes a mapping (see above): only release() and clear() do.
  int acquire(const IpcKey &key, void **ptr) {
    const IpcKey::Bytes k = key.bytes();
    if (Slot *s = find(k)) {
      ++hits_;
      Entry &e = s->second;
      if (std::next(e.lru) != lru_.end()) lru_.splice(lru_.end(), lru_, e.lru);
      ++e.users;
      *ptr = e.ptr;
      last_ = s;
      return 0;
    }
    ++misses_;
    // Two live allocations of one process never overlap, and key's is live
    // (its sender waits for our answer): a cached mapping of the same
    // exporter that overlaps it is of freed memory. A linear scan, on
    // misses only, each of which costs a driver call far slower than it.
    for (const auto &m : map_) {
      if (m.second.key.overlaps(key)) {
        ++stale_;
        return kStale;
      }
    }
    void *p = nullptr;
    if (int err = open_(key, &p)) return err;
    lru_.push_back(k);
    Entry e;
    e.key = key;
    e.ptr = p;
    e.users = 1;
    e.lru = std::prev(lru_.end());
    last_ = &*map_.emplace(k, e).first;
    *ptr = p;
    trim();
    return 0;
  }

  void release(const IpcKey &key) {
    Slot *s = find(key.bytes());
    if (s == nullptr) return;
    if (s->second.users > 0) --s->second.users;
    if (map_.size() > capacity_) trim();
  }

  // Closes every mapping no copy uses (all of them at MPI_Finalize).
  void clear() {
    for (auto it = map_.begin(); it != map_.end();) {
      if (it->second.users == 0) {
        close_(it->second.ptr);
        lru_.erase(it->second.lru);
        if (&*it == last_) last_ = nullptr;
        it = map_.erase(it);
      } else {
        ++it;
      }
    }
  }

  std::size_t size() const { return map_.size(); }
  std::size_t hits() const { return hits_; }
  std::size_t misses() const { return misses_; }
  std::size_t evictions() const { return evictions_; }
  // Misses answered kStale.
  std::size_t stale() const { return stale_; }

 private:
  struct Entry {
    IpcKey key;
    void *ptr = nullptr;
    int users = 0;
    std::list<IpcKey::Bytes>::iterator lru;
  };
  using Map = std::unordered_map<IpcKey::Bytes, Entry, IpcKey::BytesHash>;
  using Slot = Map::value_type;

  // A window of messages from one buffer names one allocation again and
  // again: the entry found last is compared before the key is hashed (an
  // acquire by hash took 0.12-0.21 us on the GPU machine's host, and each
  // message makes an acquire and a release; bench/RESULTS.md, fifteenth
  // session). An element's address survives rehashing, unlike an iterator.
  Slot *find(const IpcKey::Bytes &k) {
    if (last_ != nullptr && last_->first == k) return last_;
    const auto it = map_.find(k);
    return it == map_.end() ? nullptr : &*it;
  }

  void trim() {
    for (auto l = lru_.begin(); map_.size() > capacity_ && l != lru_.end();) {
      auto it = map_.find(*l);
      if (it->second.users == 0) {
        close_(it->second.ptr);
        ++evictions_;
        if (&*it == last_) last_ = nullptr;
        map_.erase(it);
        l = lru_.erase(l);
      } else {
        ++l;
      }
    }
  }

  std::size_t capacity_;
  OpenFn open_;
  CloseFn close_;
  Map map_;
  Slot *last_ = nullptr;          // the entry acquire() found or made last
  std::list<IpcKey::Bytes> lru_;  // front: least recently used
  std::size_t hits_ = 0, misses_ = 0, evictions_ = 0, stale_ = 0;
};

// Pinned staging buffers of one size, allocated on demand and reused for
// the life of the process (page-locking memory costs milliseconds; a message
// must never pay it). It only grows: a transfer keeps at most its pipeline
// depth of slots, so the pool is bounded by depth times the transfers in
// flight, and every transfer can always get a slot (no cycle of transfers
// waiting for each other's slots).
class SlotPool {
 public:
  using AllocFn = std::function<void *(std::size_t)>;
  using FreeFn = std::function<void(void *)>;

  // max_slots: how many it may allocate (0: no cap); beyond, acquire()
  // returns nullptr as when allocation fails.
  SlotPool(std::size_t slot_bytes, AllocFn alloc, FreeFn release, std::size_t max_slots = 0)
      : slot_bytes_(slot_bytes), max_slots_(max_slots), alloc_(std::move(alloc)), free_(std::move(release)) {}
  ~SlotPool() { clear(); }
  SlotPool(const SlotPool &) = delete;
  SlotPool &operator=(const SlotPool &) = delete;

  std::size_t slot_bytes() const { return slot_bytes_; }

  // A free slot, allocating one if none is free; nullptr if allocation fails.
  void *acquire() {
    if (!free_slots_.empty()) {
      void *p = free_slots_.back();
      free_slots_.pop_back();
      return p;
    }
    if (max_slots_ != 0 && all_.size() >= max_slots_) return nullptr;
    void *p = alloc_(slot_bytes_);
    if (p != nullptr) all_.push_back(p);
    return p;
  }
  void release(void *p) { free_slots_.push_back(p); }

  std::size_t allocated() const { return all_.size(); }
  std::size_t idle() const { return free_slots_.size(); }

  void clear() {
    for (void *p : all_) free_(p);
    all_.clear();
    free_slots_.clear();
  }

 private:
  std::size_t slot_bytes_;
  std::size_t max_slots_;
  AllocFn alloc_;
  FreeFn free_;
  std::vector<void *> all_;
  std::vector<void *> free_slots_;
};

}  // namespace mpix::p2p

#endif
