// The device send/recv queue protocol (include/mpix_device/proto.h)
// compiled as plain C++: mailboxes in host memory, std::threads as the GPU
// threads of two or three "ranks". Layout, descriptor encoding, chunking,
// tickets and credits (back-pressure exactly at the ring size, streaming of
// messages longer than the ring), matching (posted vs unexpected, FIFO per
// (source, tag), tags apart), truncation, argument checks, and a
// randomised multi-threaded run with checksummed payloads.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "mpix_device/proto.h"

namespace {

// A fake node of `size` ranks sharing one address space.
struct World {
  std::vector<std::unique_ptr<char[]>> mem;
  std::vector<char *> bases;
  std::vector<MPIX_Device_comm> h;
  World(int size, uint32_t channels, uint32_t slots, uint32_t slot_bytes, uint32_t posted) {
    MPIX_Device_comm t{};
    t.size = size;
    t.channels = channels;
    t.slots = slots;
    t.slot_bytes = slot_bytes;
    t.posted = posted;
    t.tag_ub = 1 << 20;
    const uint64_t bytes = mpixd_layout(&t, 0);
    for (int r = 0; r < size; ++r) {
      mem.emplace_back(new char[bytes + 256]());
      bases.push_back(reinterpret_cast<char *>((reinterpret_cast<uintptr_t>(mem.back().get()) + 255) & ~uintptr_t(255)));
    }
    for (int r = 0; r < size; ++r) {
      MPIX_Device_comm x = t;
      x.rank = r;
      x.local = bases[r];
      x.bases = bases.data();
      h.push_back(x);
    }
  }
};

unsigned char pat(size_t i, unsigned seed) { return static_cast<unsigned char>(((i + 1) * 2654435761u + seed * 40503u) >> 9); }

std::vector<unsigned char> payload(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = pat(i, seed);
  return v;
}

int send_blocking(const MPIX_Device_comm &h, const void *buf, size_t n, int peer, int tag) {
  MPIX_Device_request r{};
  int rc;
  while ((rc = mpixd_isend(&h, buf, n, peer, tag, &r)) == MPIX_DEVICE_AGAIN) std::this_thread::yield();
  if (rc != MPIX_DEVICE_SUCCESS) return rc;
  while ((rc = mpixd_test(&h, &r)) == MPIX_DEVICE_PENDING) std::this_thread::yield();
  return rc;
}

int recv_blocking(const MPIX_Device_comm &h, void *buf, size_t cap, int peer, int tag, size_t *got) {
  MPIX_Device_request r{};
  int rc;
  while ((rc = mpixd_irecv(&h, buf, cap, peer, tag, &r)) == MPIX_DEVICE_AGAIN) std::this_thread::yield();
  if (rc != MPIX_DEVICE_SUCCESS) return rc;
  while ((rc = mpixd_test(&h, &r)) == MPIX_DEVICE_PENDING) std::this_thread::yield();
  *got = r.msg_bytes;
  return rc;
}

TEST(DevProto, EntryAndLayout) {
  EXPECT_EQ(sizeof(mpixd_entry), 64u);
  EXPECT_EQ(sizeof(mpixd_schan), 256u);
  World w(3, 8, 16, 512, 4);
  const MPIX_Device_comm &h = w.h[0];
  EXPECT_EQ(h.off_entries % 256, 0u);
  EXPECT_LE(h.off_entries + 3ull * 8 * 16 * 64, h.off_staging);
  EXPECT_LE(h.off_staging + 3ull * 8 * 16 * 512, h.off_rchan);
  EXPECT_LE(h.off_rchan + 3ull * 8 * h.rchan_bytes, h.off_schan);
  // The per-queue pieces do not overlap their neighbours.
  mpixd_rchan *r0 = mpixd_rchan_of(&h, 0, 0), *r1 = mpixd_rchan_of(&h, 0, 1);
  EXPECT_LE(reinterpret_cast<char *>(mpixd_posted_of(&h, r0) + h.posted), reinterpret_cast<char *>(r1));
  EXPECT_EQ(reinterpret_cast<char *>(mpixd_entries(&h, h.local, 1, 0)) - reinterpret_cast<char *>(mpixd_entries(&h, h.local, 0, 0)),
            8 * 16 * 64);
}

TEST(DevProto, ChunksCoverEveryByte) {
  World w(1, 1, 4, 256, 2);
  const MPIX_Device_comm &h = w.h[0];
  for (size_t n : {0ul, 1ul, 32ul, 33ul, 255ul, 256ul, 257ul, 1000ul, 4096ul}) {
    const uint32_t k = mpixd_nslots(&h, n);
    size_t sum = 0;
    for (uint32_t j = 0; j < k; ++j) sum += mpixd_chunk_len(&h, n, j);
    EXPECT_EQ(sum, n) << n;
    EXPECT_EQ(k, n <= MPIXD_INLINE ? 1u : (n + 255) / 256) << n;
  }
  for (int tag : {0, 1, 77, 1 << 19}) EXPECT_LT(mpixd_channel(&w.h[0], tag), h.channels);
}

TEST(DevProto, ArgumentChecks) {
  World w(2, 4, 4, 256, 2);
  MPIX_Device_request r{};
  char b[4] = {};
  EXPECT_EQ(mpixd_isend(&w.h[0], b, 4, 2, 0, &r), MPIX_DEVICE_ERR_RANK);
  EXPECT_EQ(mpixd_isend(&w.h[0], b, 4, -2, 0, &r), MPIX_DEVICE_ERR_RANK);  // MPI_ANY_SOURCE
  EXPECT_EQ(mpixd_isend(&w.h[0], b, 4, 1, -1, &r), MPIX_DEVICE_ERR_TAG);   // MPI_ANY_TAG
  EXPECT_EQ(mpixd_isend(&w.h[0], b, 4, 1, (1 << 20) + 1, &r), MPIX_DEVICE_ERR_TAG);
  EXPECT_EQ(mpixd_isend(&w.h[0], nullptr, 4, 1, 0, &r), MPIX_DEVICE_ERR_ARG);
  EXPECT_EQ(mpixd_isend(&w.h[0], b, 4, 1, 0, nullptr), MPIX_DEVICE_ERR_ARG);
  EXPECT_EQ(mpixd_irecv(&w.h[1], b, 4, 0, -1, &r), MPIX_DEVICE_ERR_TAG);
  EXPECT_EQ(mpixd_irecv(&w.h[1], b, 4, -2, 0, &r), MPIX_DEVICE_ERR_RANK);
  r.state = MPIXD_INACTIVE;
  EXPECT_EQ(mpixd_test(&w.h[1], &r), MPIX_DEVICE_ERR_REQUEST);
  MPIX_Device_comm none{};
  EXPECT_EQ(mpixd_isend(&none, b, 4, 0, 0, &r), MPIX_DEVICE_ERR_ARG);
}

// A ring of 4 takes exactly 4 single-slot messages, then says AGAIN
// (claiming nothing); each receive returns one credit.
TEST(DevProto, BackPressureAtRingSize) {
  World w(2, 1, 4, 256, 2);
  MPIX_Device_request r{};
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(mpixd_isend(&w.h[0], &i, sizeof i, 1, 9, &r), MPIX_DEVICE_SUCCESS);
    ASSERT_EQ(mpixd_test(&w.h[0], &r), MPIX_DEVICE_SUCCESS);
  }
  int v = 4;
  EXPECT_EQ(mpixd_isend(&w.h[0], &v, sizeof v, 1, 9, &r), MPIX_DEVICE_AGAIN);
  EXPECT_EQ(mpixd_schan_of(&w.h[0], w.h[0].local, 1, 0)->tail, 4u);
  // A 3-slot message does not fit either, and claims nothing.
  std::vector<unsigned char> big(600, 1);
  EXPECT_EQ(mpixd_isend(&w.h[0], big.data(), big.size(), 1, 9, &r), MPIX_DEVICE_AGAIN);
  int got = -1;
  size_t n = 0;
  ASSERT_EQ(recv_blocking(w.h[1], &got, sizeof got, 0, 9, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(got, 0);
  EXPECT_EQ(mpixd_isend(&w.h[0], &v, sizeof v, 1, 9, &r), MPIX_DEVICE_SUCCESS);
  for (int i = 1; i <= 4; ++i) {
    ASSERT_EQ(recv_blocking(w.h[1], &got, sizeof got, 0, 9, &n), MPIX_DEVICE_SUCCESS);
    EXPECT_EQ(got, i);
  }
}

// Receives match by tag (not arrival order), FIFO within a tag, posted
// before or after the message arrived.
TEST(DevProto, MatchingOrder) {
  World w(2, 2, 16, 256, 4);
  const MPIX_Device_comm &s = w.h[0], &r = w.h[1];
  int a = 0, b = 0, c = 0;
  MPIX_Device_request ra{}, rb{}, rc{};
  ASSERT_EQ(mpixd_irecv(&r, &a, 4, 0, 5, &ra), MPIX_DEVICE_SUCCESS);  // posted first
  EXPECT_EQ(mpixd_test(&r, &ra), MPIX_DEVICE_PENDING);
  for (int i = 1; i <= 3; ++i) ASSERT_EQ(send_blocking(s, &i, 4, 1, 6), MPIX_DEVICE_SUCCESS);
  for (int i = 10; i <= 11; ++i) ASSERT_EQ(send_blocking(s, &i, 4, 1, 5), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_test(&r, &ra), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(a, 10);
  ASSERT_EQ(mpixd_irecv(&r, &b, 4, 0, 6, &rb), MPIX_DEVICE_SUCCESS);  // unexpected, oldest first
  ASSERT_EQ(mpixd_irecv(&r, &c, 4, 0, 6, &rc), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_test(&r, &rc), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_test(&r, &rb), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(c, 2);
  size_t n = 0;
  ASSERT_EQ(recv_blocking(r, &a, 4, 0, 6, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(a, 3);
  ASSERT_EQ(recv_blocking(r, &a, 4, 0, 5, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(a, 11);
  // Everything consumed: every credit came back.
  for (uint32_t ch = 0; ch < 2; ++ch)
    EXPECT_EQ(mpixd_schan_of(&s, s.local, 1, ch)->credit, mpixd_schan_of(&s, s.local, 1, ch)->tail);
}

// Posted-receive table full: AGAIN, nothing lost.
TEST(DevProto, PostedTableFull) {
  World w(2, 1, 8, 256, 2);
  int x[3];
  MPIX_Device_request q[3] = {};
  EXPECT_EQ(mpixd_irecv(&w.h[1], &x[0], 4, 0, 1, &q[0]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_irecv(&w.h[1], &x[1], 4, 0, 2, &q[1]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_irecv(&w.h[1], &x[2], 4, 0, 3, &q[2]), MPIX_DEVICE_AGAIN);
  for (int t = 1; t <= 3; ++t) ASSERT_EQ(send_blocking(w.h[0], &t, 4, 1, t), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_test(&w.h[1], &q[1]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_irecv(&w.h[1], &x[2], 4, 0, 3, &q[2]), MPIX_DEVICE_SUCCESS);  // arrived: completes at once
  EXPECT_EQ(mpixd_test(&w.h[1], &q[2]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_test(&w.h[1], &q[0]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(x[0], 1);
  EXPECT_EQ(x[1], 2);
  EXPECT_EQ(x[2], 3);
}

// Messages longer than the ring stream through it; truncation keeps the
// buffer's bytes and reports the full size.
TEST(DevProto, StreamingAndTruncation) {
  World w(2, 2, 2, 256, 2);
  for (size_t n : {33ul, 256ul, 257ul, 512ul, 5000ul, 100000ul}) {
    const auto src = payload(n, unsigned(n));
    std::vector<unsigned char> dst(n + 16, 0xEE);
    size_t got = 0;
    int rc = -9;
    std::thread rx([&] { rc = recv_blocking(w.h[1], dst.data(), n, 0, 3, &got); });
    EXPECT_EQ(send_blocking(w.h[0], src.data(), n, 1, 3), MPIX_DEVICE_SUCCESS);
    rx.join();
    EXPECT_EQ(rc, MPIX_DEVICE_SUCCESS);
    EXPECT_EQ(got, n);
    EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), n)) << n;
    EXPECT_EQ(dst[n], 0xEE);
  }
  for (size_t cap : {10ul, 300ul, 1000ul}) {
    const auto src = payload(3000, 7);
    std::vector<unsigned char> dst(cap + 16, 0xEE);
    size_t got = 0;
    int rc = -9;
    std::thread rx([&] { rc = recv_blocking(w.h[1], dst.data(), cap, 0, 4, &got); });
    EXPECT_EQ(send_blocking(w.h[0], src.data(), src.size(), 1, 4), MPIX_DEVICE_SUCCESS);
    rx.join();
    EXPECT_EQ(rc, MPIX_DEVICE_ERR_TRUNCATE);
    EXPECT_EQ(got, 3000u);
    EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), cap));
    EXPECT_EQ(dst[cap], 0xEE);
  }
}

// Many sender threads on `sources` ranks, as many receiver threads on one
// more; each key (source, tag) has one sending and one receiving thread;
// random sizes and multiplicities.
struct StressShape {
  int sources, pairs, keys, msgs;
  uint32_t channels, slots, slot_bytes, posted;
  size_t max_bytes;                   // receive buffer size
  size_t (*size)(std::mt19937 &rng);  // a message's size
};

void stress(const StressShape &s) {
  World w(s.sources + 1, s.channels, s.slots, s.slot_bytes, s.posted);
  const int dst = s.sources;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int src = 0; src < s.sources; ++src) {
    for (int p = 0; p < s.pairs; ++p) {
      for (int side = 0; side < 2; ++side) {
        threads.emplace_back([&, src, p, side] {
          std::mt19937 rng(unsigned(src * 100 + p));
          std::vector<unsigned> count(static_cast<size_t>(s.keys), 0);
          std::vector<unsigned char> buf(s.max_bytes);
          for (int i = 0; i < s.msgs; ++i) {
            const int k = int(rng() % unsigned(s.keys));
            const size_t n = s.size(rng);
            const int tag = p * s.keys + k;
            const unsigned seed = unsigned(src * 1000 + tag) * 7919u + count[static_cast<size_t>(k)]++;
            if (side == 0) {
              const auto v = payload(n, seed);
              if (send_blocking(w.h[src], v.data(), n, dst, tag) != MPIX_DEVICE_SUCCESS) ++errors;
            } else {
              size_t got = 0;
              if (recv_blocking(w.h[dst], buf.data(), buf.size(), src, tag, &got) != MPIX_DEVICE_SUCCESS || got != n ||
                  (n > 0 &&
                   std::memcmp(buf.data(), payload(n, seed).data(), n) != 0))
                ++errors;
            }
          }
        });
      }
    }
  }
  for (auto &t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
}

// Two sending ranks, 6 pairs each, 3 keys per pair, sizes inline, staged
// and streamed (rings of 256-byte slots).
void stress(uint32_t channels, uint32_t slots, uint32_t posted) {
  const int scale = std::getenv("MPIX_TEST_SCALE") ? std::atoi(std::getenv("MPIX_TEST_SCALE")) : 1;
  stress({2, 6, 3, 1000 * scale, channels, slots, 256, posted, 2000,
          [](std::mt19937 &rng) -> size_t { return rng() % 4 == 0 ? rng() % 2000 : rng() % 40; }});
}

// A proxy queue of rank 0 (of 2) in plain host memory, whose host side the
// test plays by hand; bounce buffers of inline_bytes per entry (0: none).
struct HandPlayedProxy {
  std::vector<mpixd_pdesc> pq;
  std::vector<mpixd_pcomp> pc;
  std::vector<unsigned char> bounce_mem;
  uint32_t tail = 0, credit = 0;
  MPIX_Device_comm h{};
  HandPlayedProxy(uint32_t slots, uint32_t inline_bytes)
      : pq(slots), pc(slots), bounce_mem(size_t(slots) * inline_bytes + 16, 0) {
    std::memset(pq.data(), 0, sizeof(mpixd_pdesc) * slots);
    std::memset(pc.data(), 0, sizeof(mpixd_pcomp) * slots);
    h.path = MPIXD_PATH_PROXY;
    h.size = 2;
    h.rank = 0;
    h.tag_ub = 100;
    h.pq_slots = slots;
    h.pq = pq.data();
    h.pc = pc.data();
    h.pq_tail = &tail;
    h.pq_credit = &credit;
    h.pq_inline = inline_bytes;
    unsigned char *b = bounce_mem.data();
    h.pq_bounce = inline_bytes ? b + (16 - reinterpret_cast<uintptr_t>(b) % 16) % 16 : nullptr;
  }
  HandPlayedProxy(const HandPlayedProxy &) = delete;
  HandPlayedProxy &operator=(const HandPlayedProxy &) = delete;
};

// The proxy path's device side against a hand-played host: descriptor
// encoding (inline payload or address), sequence numbers, completion
// records, release and credits, AGAIN on a full queue.
TEST(DevProto, ProxyDescriptors) {
  HandPlayedProxy q(4, 0);
  auto &pq = q.pq;
  auto &pc = q.pc;
  uint32_t &tail = q.tail, &credit = q.credit;
  MPIX_Device_comm &h = q.h;
  EXPECT_EQ(sizeof(mpixd_pdesc), 64u);
  EXPECT_EQ(sizeof(mpixd_pcomp), 64u);
  const auto small = payload(20, 1);
  std::vector<unsigned char> big = payload(1000, 2), in(40, 0), in_big(1000, 0);
  MPIX_Device_request r[5] = {};
  ASSERT_EQ(mpixd_isend(&h, small.data(), small.size(), 1, 7, &r[0]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_isend(&h, big.data(), big.size(), 1, 8, &r[1]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_irecv(&h, in.data(), in.size() - 8, 1, 9, &r[2]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_irecv(&h, in_big.data(), in_big.size(), 1, 10, &r[3]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_isend(&h, small.data(), 4, 1, 7, &r[4]), MPIX_DEVICE_AGAIN);  // full
  EXPECT_EQ(tail, 4u);
  EXPECT_EQ(pq[0].seq, 1u);
  EXPECT_EQ(pq[0].op, uint32_t(MPIXD_OP_SEND));
  EXPECT_EQ(pq[0].buf, 0u);  // inline
  EXPECT_EQ(0, std::memcmp(pq[0].data, small.data(), small.size()));
  EXPECT_EQ(pq[1].buf, reinterpret_cast<uintptr_t>(big.data()));
  EXPECT_EQ(pq[1].bytes, 1000u);
  EXPECT_EQ(pq[2].op, uint32_t(MPIXD_OP_RECV));
  EXPECT_EQ(pq[2].buf, 0u);
  EXPECT_EQ(pq[2].bytes, 32u);
  EXPECT_EQ(pq[3].buf, reinterpret_cast<uintptr_t>(in_big.data()));
  EXPECT_EQ(pq[3].tag, 10);
  EXPECT_EQ(pq[3].peer, 1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(mpixd_test(&h, &r[i]), MPIX_DEVICE_PENDING);
  // The host completes them out of order; the small receive brings 12 bytes.
  const auto got = payload(12, 3);
  std::memcpy(pc[2].data, got.data(), got.size());
  pc[2].bytes = 12;
  pc[2].status = MPIX_DEVICE_SUCCESS;
  pc[2].seq = 3;
  pc[1].status = MPIX_DEVICE_SUCCESS;
  pc[1].seq = 2;
  EXPECT_EQ(mpixd_test(&h, &r[2]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(r[2].msg_bytes, 12u);
  EXPECT_EQ(0, std::memcmp(in.data(), got.data(), 12));
  EXPECT_EQ(in[12], 0);
  EXPECT_EQ(pc[2].released, 3u);
  EXPECT_EQ(mpixd_test(&h, &r[1]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_test(&h, &r[1]), MPIX_DEVICE_ERR_REQUEST);
  EXPECT_EQ(mpixd_test(&h, &r[0]), MPIX_DEVICE_PENDING);
  pc[3].status = MPIX_DEVICE_ERR_TRUNCATE;
  pc[3].bytes = 1000;
  pc[3].seq = 4;
  EXPECT_EQ(mpixd_test(&h, &r[3]), MPIX_DEVICE_ERR_TRUNCATE);
  // Credits come back only for the released prefix (the host's job): ticket
  // 0 is still out, so the queue stays full until the host returns credit.
  EXPECT_EQ(mpixd_isend(&h, small.data(), 4, 1, 7, &r[4]), MPIX_DEVICE_AGAIN);
  credit = 1;
  EXPECT_EQ(mpixd_isend(&h, small.data(), 4, 1, 7, &r[4]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(pq[0].seq, 5u);  // slot 0 reused by ticket 4
}

// Messages above the descriptor's inline bytes and up to pq_inline go
// through the entry's bounce buffer: a send's payload is copied there (the
// descriptor carries no address), a receive's message is copied out of it
// (truncated to the buffer), into buffers at any alignment; larger ones
// still go by address.
TEST(DevProto, ProxyBounceBuffers) {
  const uint32_t inl = 256;
  HandPlayedProxy q(4, inl);
  auto &pq = q.pq;
  auto &pc = q.pc;
  MPIX_Device_comm &h = q.h;
  unsigned char *bounce = h.pq_bounce;
  const auto mid = payload(200, 4), big = payload(257, 5);
  std::vector<unsigned char> in(300, 0);
  MPIX_Device_request r[4] = {};
  ASSERT_EQ(mpixd_isend(&h, mid.data() + 1, 199, 1, 7, &r[0]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_isend(&h, big.data(), big.size(), 1, 7, &r[1]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_irecv(&h, in.data() + 3, 150, 1, 8, &r[2]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_irecv(&h, in.data() + 160, 100, 1, 9, &r[3]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(pq[0].buf, 0u);
  EXPECT_EQ(0, std::memcmp(bounce, mid.data() + 1, 199));
  EXPECT_EQ(pq[1].buf, reinterpret_cast<uintptr_t>(big.data()));
  EXPECT_EQ(pq[2].buf, 0u);
  EXPECT_EQ(pq[2].bytes, 150u);
  // The host receives 140 bytes for r[2] and 120 (more than the 100-byte
  // buffer: MPI filled the bounce up to the buffer's size) for r[3].
  const auto got = payload(140, 6), got2 = payload(100, 7);
  std::memcpy(bounce + 2 * inl, got.data(), got.size());
  std::memcpy(bounce + 3 * inl, got2.data(), got2.size());
  pc[2].bytes = 140;
  pc[2].status = MPIX_DEVICE_SUCCESS;
  pc[2].seq = 3;
  pc[3].bytes = 100;
  pc[3].status = MPIX_DEVICE_ERR_TRUNCATE;
  pc[3].seq = 4;
  EXPECT_EQ(mpixd_test(&h, &r[2]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(r[2].msg_bytes, 140u);
  EXPECT_EQ(0, std::memcmp(in.data() + 3, got.data(), 140));
  EXPECT_EQ(in[2], 0);
  EXPECT_EQ(in[143], 0);
  EXPECT_EQ(mpixd_test(&h, &r[3]), MPIX_DEVICE_ERR_TRUNCATE);
  EXPECT_EQ(0, std::memcmp(in.data() + 160, got2.data(), 100));
  EXPECT_EQ(in[260], 0);
  // Every size and alignment of the copy out of a bounce buffer.
  const auto src = payload(inl, 8);
  std::memcpy(bounce, src.data(), inl);
  for (size_t n = 0; n <= inl; n += (n < 40 ? 1 : 13))
    for (size_t a = 0; a < 17; a += 3) {
      std::vector<unsigned char> out(inl + 32, 0xee);
      mpixd_copy_from_bounce(out.data() + a, bounce, n);
      EXPECT_EQ(0, std::memcmp(out.data() + a, src.data(), n)) << n << " at +" << a;
      EXPECT_EQ(out[a + n], 0xee) << n << " at +" << a;
      if (a) {
        EXPECT_EQ(out[a - 1], 0xee) << n << " at +" << a;
      }
    }
}

// A long run's 32-bit counters wrap: start every ticket, credit, arrival,
// release and posted-receive age just below 2^32 (ring entries hold the
// sequence numbers the previous round left) and stream messages, inline,
// staged and longer than the ring, across the wrap. Order and contents must
// survive, the oldest posted receive must still win across the age wrap,
// and every credit must come back.
void preset_counters(World &w, uint32_t t0) {
  for (int dst = 0; dst < int(w.h.size()); ++dst) {
    const MPIX_Device_comm &rh = w.h[dst];
    for (int src = 0; src < int(w.h.size()); ++src)
      for (uint32_t c = 0; c < rh.channels; ++c) {
        mpixd_rchan *rc = mpixd_rchan_of(&rh, src, c);
        rc->arr = rc->lo = t0;
        rc->post_order = t0;
        mpixd_entry *ring = mpixd_entries(&rh, rh.local, src, c);
        // Slot s last held the ticket p < t0 with p = s (mod slots).
        for (uint32_t k = 1; k <= rh.slots; ++k) ring[(t0 - k) & (rh.slots - 1)].seq = t0 - k + 1;
        mpixd_schan *sc = mpixd_schan_of(&w.h[src], w.h[src].local, dst, c);
        sc->tail = sc->credit = t0;
      }
  }
}

TEST(DevProto, CountersWrap) {
  World w(2, 2, 4, 256, 4);
  preset_counters(w, 0xfffffffeu);  // ages 0xfffffffe, 0xffffffff, 0, 1
  const MPIX_Device_comm &s = w.h[0], &r = w.h[1];
  // Posted receives whose ages straddle the wrap: FIFO must still hold.
  int a[4] = {-1, -1, -1, -1};
  MPIX_Device_request q[4] = {};
  for (int i = 0; i < 4; ++i) ASSERT_EQ(mpixd_irecv(&r, &a[i], 4, 0, 3, &q[i]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_rchan_of(&r, 0, mpixd_channel(&r, 3))->post_order, 2u);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(send_blocking(s, &i, 4, 1, 3), MPIX_DEVICE_SUCCESS);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(mpixd_test(&r, &q[i]), MPIX_DEVICE_SUCCESS);
    EXPECT_EQ(a[i], i) << "posted receive " << i;
  }
  // Then a mixed stream through both channels, one thread per side, so the
  // tickets of every ring run well past the wrap.
  std::thread rx([&] {
    for (int m = 0; m < 60; ++m) {
      const size_t n = m % 3 == 0 ? 1000 : (m % 3 == 1 ? 20 : 300);
      std::vector<unsigned char> in(n, 0);
      size_t got = 0;
      EXPECT_EQ(recv_blocking(r, in.data(), n, 0, 10 + m % 2, &got), MPIX_DEVICE_SUCCESS) << m;
      EXPECT_EQ(got, n) << m;
      EXPECT_EQ(in, payload(n, unsigned(m))) << m;
    }
  });
  for (int m = 0; m < 60; ++m) {
    const size_t n = m % 3 == 0 ? 1000 : (m % 3 == 1 ? 20 : 300);
    const auto out = payload(n, unsigned(m));
    ASSERT_EQ(send_blocking(s, out.data(), n, 1, 10 + m % 2), MPIX_DEVICE_SUCCESS);
  }
  rx.join();
  for (int tag : {3, 10, 11}) {
    const mpixd_schan *sc = mpixd_schan_of(&s, s.local, 1, mpixd_channel(&s, tag));
    EXPECT_LT(sc->tail, 1000u) << "tag " << tag << ": its tickets wrapped";
    EXPECT_EQ(sc->credit, sc->tail) << "tag " << tag;
  }
}

// test/gpu/dev_p2p's test_many as the one-channel GPU entry runs it (which
// stalls on the GPU, 2026-11-23): 1 channel, 8 slots of 16 KiB, 32 posted
// entries, 128 thread pairs on 4 keys each, mostly inline sizes, some
// staged. Host threads play the GPU threads, so a stall here would be the
// protocol's, not the GPU's.
TEST(DevProto, OneChannelManyThreadsLikeGpuTest) {
  stress({1, 128, 4, 10, 1, 8, 16384, 32, 200,
          [](std::mt19937 &rng) -> size_t { return rng() % 8 == 0 ? 33 + rng() % 167 : rng() % 33; }});
}

TEST(DevProto, StressTinyRings) { stress(4, 2, 2); }
TEST(DevProto, StressOneChannel) { stress(1, 8, 4); }
TEST(DevProto, StressWide) { stress(32, 16, 8); }

}  // namespace
