// The device send/recv queue protocol (include/mpix_device/ proto.h,
// proxy.h and calls.h) compiled as plain C++: mailboxes in host memory,
// std::threads as the GPU
// threads of two or three "ranks". Layout, chunking, per-key numbering and
// hash-table matching (FIFO per (source, tag), tags apart, receives of a
// key completing in any order), back-pressure of the message table, the
// payload rings and the key tables, streaming of
// messages longer than the ring, truncation, argument checks, counter
// wrap-around, the proxy descriptors, pulled messages, and randomised
// multi-threaded runs with checksummed payloads.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "mpix_device/calls.h"

namespace {

struct Shape {
  uint32_t channels = 2, slots = 16, slot_bytes = 256, buckets = 64, keys = 64;
  bool near = true;        // the ranks share a "GPU"
  bool far_cells = false;  // tiny messages in cells to other "GPUs" too (else there in entries)
  uint32_t lane_tags = 0;  // tags below it have lanes
  uint32_t mid_slots = 0, mid_max = 0;  // medium rings (0: none)
};

// A fake node of `size` ranks sharing one address space.
struct World {
  std::vector<std::unique_ptr<char[]>> mem;
  std::vector<char *> bases;
  std::vector<MPIX_Device_comm> h;
  World(int size, const Shape &s) {
    MPIX_Device_comm t{};
    t.size = size;
    t.channels = s.channels;
    t.slots = s.slots;
    t.slot_bytes = s.slot_bytes;
    t.buckets = s.buckets;
    t.keys = s.keys;
    t.lane_tags = s.lane_tags;
    t.mid_slots = s.mid_slots;
    t.mid_max = s.mid_max;
    t.gpu_peers = s.near ? (uint64_t{1} << size) - 1 : 0;
    t.cell_peers = s.near || s.far_cells ? (uint64_t{1} << size) - 1 : 0;
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
  // Occupied ways of src's table at dst (0 when everything was received).
  uint32_t ways_in_use(int src, int dst) const {
    uint32_t n = 0;
    const uint32_t *c = mpixd_claims(&h[src], h[src].local, dst);
    for (uint32_t b = 0; b < h[src].buckets; ++b) n += uint32_t(__builtin_popcount(c[b]));
    return n;
  }
  // Lane cells of (src -> dst, tag) whose message was not received: cell c
  // is open for the next message of its residue once all before it were.
  uint32_t lane_cells_in_use(int src, int dst, int tag) const {
    if (uint32_t(tag) >= h[src].lane_tags) return 0;
    const uint32_t next = *mpixd_counter(&h[src], true, dst, tag);
    const uint32_t *turns = mpixd_lane_turns(&h[src], h[src].local, dst, tag);
    uint32_t n = 0;
    for (uint32_t c = 0; c < MPIXD_LANE; ++c) n += turns[c] != ((next + ((c - next) & (MPIXD_LANE - 1))) & ~(MPIXD_LANE - 1));
    return n;
  }
};

unsigned char pat(size_t i, unsigned seed) { return static_cast<unsigned char>(((i + 1) * 2654435761u + seed * 40503u) >> 9); }

std::vector<unsigned char> payload(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = pat(i, seed);
  return v;
}

int wait(const MPIX_Device_comm &h, MPIX_Device_request *r) {
  int rc;
  while ((rc = mpixd_test(&h, r)) == MPIX_DEVICE_PENDING) std::this_thread::yield();
  return rc;
}

int send_blocking(const MPIX_Device_comm &h, const void *buf, size_t n, int peer, int tag) {
  MPIX_Device_request r{};
  int rc;
  while ((rc = mpixd_isend(&h, buf, n, peer, tag, &r)) == MPIX_DEVICE_AGAIN) std::this_thread::yield();
  return rc == MPIX_DEVICE_SUCCESS ? wait(h, &r) : rc;
}

int recv_blocking(const MPIX_Device_comm &h, void *buf, size_t cap, int peer, int tag, size_t *got) {
  MPIX_Device_request r{};
  int rc;
  while ((rc = mpixd_irecv(&h, buf, cap, peer, tag, &r)) == MPIX_DEVICE_AGAIN) std::this_thread::yield();
  if (rc != MPIX_DEVICE_SUCCESS) return rc;
  rc = wait(h, &r);
  *got = r.msg_bytes;
  return rc;
}

TEST(DevProto, EntryAndLayout) {
  EXPECT_EQ(sizeof(mpixd_ment), 64u);
  EXPECT_EQ(sizeof(mpixd_keyslot), 16u);
  EXPECT_EQ(sizeof(mpixd_schan), 256u);
  EXPECT_EQ(sizeof(mpixd_rchan), 128u);
  Shape s;
  s.channels = 8;
  s.slots = 16;
  s.slot_bytes = 512;
  s.buckets = 32;
  s.keys = 128;
  World w(3, s);
  const MPIX_Device_comm &h = w.h[0];
  // Regions in order, each big enough for all ranks, lines 64-byte aligned.
  EXPECT_EQ(h.off_mkeys % 256, 0u);
  EXPECT_LE(h.off_mkeys + 3ull * 32 * MPIXD_WAYS * 16, h.off_ments);
  EXPECT_LE(h.off_ments + 3ull * 32 * MPIXD_WAYS * 64, h.off_claims);
  EXPECT_LE(h.off_claims + 3ull * 32 * 4, h.off_skeys);
  EXPECT_LE(h.off_skeys + 128ull * 16, h.off_rkeys);
  EXPECT_LE(h.off_rkeys + 128ull * 16, h.off_sdirect);
  EXPECT_LE(h.off_sdirect + 3ull * MPIXD_DIRECT_TAGS * 4, h.off_rdirect);
  EXPECT_LE(h.off_rdirect + 3ull * MPIXD_DIRECT_TAGS * 4, h.off_seqs);
  EXPECT_LE(h.off_seqs + 3ull * 8 * 16 * 4, h.off_staging);
  EXPECT_LE(h.off_staging + 3ull * 8 * 16 * 512, h.off_rchan);
  EXPECT_LE(h.off_rchan + 3ull * 8 * h.rchan_bytes, h.off_schan);
  EXPECT_LE(sizeof(mpixd_rchan) + 4 * h.slots, h.rchan_bytes);
  EXPECT_EQ(reinterpret_cast<char *>(mpixd_mkeys(&h, h.local, 1)) - reinterpret_cast<char *>(mpixd_mkeys(&h, h.local, 0)),
            32 * MPIXD_WAYS * 16);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mpixd_mkeys(&h, h.local, 2)) % 128, 0u);  // a bucket's cells: one line
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mpixd_ments(&h, h.local, 1)) % 16, 0u);
  // Match keys are never an empty way, and tell tag and number apart.
  EXPECT_NE(mpixd_mkey(0, 0), 0u);
  EXPECT_NE(mpixd_mkey(1, 0), mpixd_mkey(0, 1));
  EXPECT_NE(mpixd_mkey(0x7fffffff, 0xffffffffu), mpixd_mkey(0x7ffffffe, 0xffffffffu));
  // The size field is free in every key: a tiny size or the entry mark.
  EXPECT_EQ(mpixd_mkey(0x7fffffff, 0xffffffffu) & MPIXD_KEY_SIZE, 0u);
  EXPECT_LT(MPIXD_TINY, MPIXD_KEY_ENTRY);
  EXPECT_NE(mpixd_key(0, 0), 0u);
  EXPECT_NE(mpixd_key(1, 0), mpixd_key(0, 1));
}

TEST(DevProto, ChunksCoverEveryByte) {
  Shape s;
  s.slots = 4;
  World w(1, s);
  const MPIX_Device_comm &h = w.h[0];
  for (size_t n : {0ul, 1ul, 32ul, 33ul, 255ul, 256ul, 257ul, 1000ul, 4096ul}) {
    const uint32_t k = mpixd_nslots(&h, n);
    size_t sum = 0;
    for (uint32_t j = 0; j < k; ++j) sum += mpixd_chunk_len(&h, n, j);
    EXPECT_EQ(sum, k ? n : 0) << n;
    EXPECT_EQ(k, n <= MPIXD_INLINE ? 0u : (n + 255) / 256) << n;
  }
  for (int tag : {0, 1, 77, 1 << 19}) EXPECT_LT(mpixd_channel(&w.h[0], tag), h.channels);
  for (uint32_t seq : {0u, 1u, 0xffffffffu}) EXPECT_LT(mpixd_bucket(&h, 5, seq), h.buckets);
}

// The cooperative copy: lanes share the words, four in flight per lane and
// the rest (one to three words a lane) loaded together; every length on
// both sides of each words-per-lane step, with and without 16-byte
// alignment, the lanes run in reverse order (each copies a disjoint share).
TEST(DevProto, CopyEveryShareOfLanes) {
  for (unsigned lanes : {1u, 3u, 32u}) {
    std::vector<size_t> lengths;
    for (size_t per = 0; per <= 9; ++per)
      for (long d : {-17L, -16L, -1L, 0L, 1L, 15L, 16L})
        if (long(per * lanes * 16) + d >= 0) lengths.push_back(size_t(long(per * lanes * 16) + d));
    for (size_t n : lengths)
      for (size_t shift : {0ul, 8ul, 16ul}) {
        std::vector<unsigned char> src(n + 32), dst(n + 48, 0xee);
        for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + n);
        // 16-byte aligned starts (shift 0, 16) take the word path; 8 the bytes.
        auto *d = reinterpret_cast<unsigned char *>((reinterpret_cast<uintptr_t>(dst.data()) + 15) & ~uintptr_t(15));
        auto *s = reinterpret_cast<unsigned char *>((reinterpret_cast<uintptr_t>(src.data()) + 15) & ~uintptr_t(15));
        const size_t room = dst.size() - static_cast<size_t>(d - dst.data());
        ASSERT_LE(n + shift, room);
        for (unsigned lane = lanes; lane-- > 0;) mpixd_copy(d + shift, s, n, lane, lanes);
        ASSERT_EQ(std::memcmp(d + shift, s, n), 0) << "n " << n << " lanes " << lanes << " shift " << shift;
        for (unsigned char *p = dst.data(); p < d + shift; ++p) ASSERT_EQ(*p, 0xee) << "written before, n " << n;
        for (unsigned char *p = d + shift + n; p < dst.data() + dst.size(); ++p)
          ASSERT_EQ(*p, 0xee) << "written past, n " << n << " lanes " << lanes;
      }
  }
}

TEST(DevProto, ArgumentChecks) {
  World w(2, Shape{});
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
  MPIX_Device_comm no_table = w.h[0];
  no_table.buckets = 0;
  EXPECT_EQ(mpixd_isend(&no_table, b, 4, 1, 0, &r), MPIX_DEVICE_ERR_ARG);
  // Rejected calls number nothing: the next message of tag 0 is its first.
  EXPECT_EQ(*mpixd_counter(&w.h[0], true, 1, 0), 0u);
}

// Receives match by (source, tag), not by arrival: the n-th receive of a key
// gets its n-th message, posted before or after it arrived, and receives of
// one key may complete in any order.
void matching_order(const Shape &shape) {
  World w(2, shape);
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
  EXPECT_EQ(mpixd_test(&r, &rc), MPIX_DEVICE_SUCCESS);  // the second receive completes first
  EXPECT_EQ(mpixd_test(&r, &rb), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(c, 2);
  size_t n = 0;
  ASSERT_EQ(recv_blocking(r, &a, 4, 0, 6, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(a, 3);
  ASSERT_EQ(recv_blocking(r, &a, 4, 0, 5, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(a, 11);
  // Staged messages of a key keep their order too, mixed with inline ones.
  const auto big1 = payload(700, 1), big2 = payload(300, 2);
  std::vector<unsigned char> in1(700), in2(700), in3(700);
  ASSERT_EQ(send_blocking(s, big1.data(), big1.size(), 1, 7), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(send_blocking(s, &a, 4, 1, 7), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(send_blocking(s, big2.data(), big2.size(), 1, 7), MPIX_DEVICE_SUCCESS);
  MPIX_Device_request q[3] = {};
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(mpixd_irecv(&r, (i == 0 ? in1 : i == 1 ? in2 : in3).data(), 700, 0, 7, &q[i]), MPIX_DEVICE_SUCCESS);
  for (int i = 2; i >= 0; --i) EXPECT_EQ(wait(r, &q[i]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(q[0].msg_bytes, 700u);
  EXPECT_EQ(q[1].msg_bytes, 4u);
  EXPECT_EQ(q[2].msg_bytes, 300u);
  EXPECT_EQ(0, std::memcmp(in1.data(), big1.data(), 700));
  EXPECT_EQ(0, std::memcmp(in3.data(), big2.data(), 300));
  // Everything consumed: every way and every credit came back.
  EXPECT_EQ(w.ways_in_use(0, 1), 0u);
  for (int tag : {5, 6, 7}) EXPECT_EQ(w.lane_cells_in_use(0, 1, tag), 0u) << "tag " << tag;
  for (uint32_t ch = 0; ch < s.channels; ++ch)
    EXPECT_EQ(mpixd_schan_of(&s, s.local, 1, ch)->credit, mpixd_schan_of(&s, s.local, 1, ch)->tail);
}

Shape with_lanes(Shape q, uint32_t lane_tags) {
  q.lane_tags = lane_tags;
  return q;
}

TEST(DevProto, MatchingOrder) { matching_order(Shape{}); }
// Tags 5, 6 and 7 in lanes (tag 6 and 7 also: more messages than cells
// below), then only tag 5 (the others in the table).
TEST(DevProto, MatchingOrderLanes) {
  matching_order(with_lanes(Shape{}, 64));
  matching_order(with_lanes(Shape{}, 6));
}

// A table of one bucket holds MPIXD_WAYS messages; a further send is
// accepted but stays pending (nothing written, nothing lost) until a
// receive frees a way. Inline and staged sends alike.
TEST(DevProto, TableBackPressure) {
  Shape sh;
  sh.buckets = 1;
  World w(2, sh);
  const MPIX_Device_comm &s = w.h[0], &r = w.h[1];
  MPIX_Device_request q[MPIXD_WAYS + 2] = {};
  int v[MPIXD_WAYS + 2];
  for (unsigned i = 0; i < MPIXD_WAYS; ++i) {
    v[i] = int(i);
    ASSERT_EQ(mpixd_isend(&s, &v[i], 4, 1, 9, &q[i]), MPIX_DEVICE_SUCCESS);
    EXPECT_EQ(mpixd_test(&s, &q[i]), MPIX_DEVICE_SUCCESS);
  }
  EXPECT_EQ(w.ways_in_use(0, 1), MPIXD_WAYS);
  const auto big = payload(600, 3);
  v[MPIXD_WAYS] = 100;
  ASSERT_EQ(mpixd_isend(&s, &v[MPIXD_WAYS], 4, 1, 9, &q[MPIXD_WAYS]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_isend(&s, big.data(), big.size(), 1, 9, &q[MPIXD_WAYS + 1]), MPIX_DEVICE_SUCCESS);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(mpixd_test(&s, &q[MPIXD_WAYS]), MPIX_DEVICE_PENDING);
    EXPECT_EQ(mpixd_test(&s, &q[MPIXD_WAYS + 1]), MPIX_DEVICE_PENDING);
  }
  int got = -1;
  size_t n = 0;
  ASSERT_EQ(recv_blocking(r, &got, sizeof got, 0, 9, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(got, 0);
  EXPECT_EQ(mpixd_test(&s, &q[MPIXD_WAYS]), MPIX_DEVICE_SUCCESS);  // the freed way: to the first to ask
  EXPECT_EQ(mpixd_test(&s, &q[MPIXD_WAYS + 1]), MPIX_DEVICE_PENDING);
  for (unsigned i = 1; i < MPIXD_WAYS; ++i) {
    ASSERT_EQ(recv_blocking(r, &got, sizeof got, 0, 9, &n), MPIX_DEVICE_SUCCESS);
    EXPECT_EQ(got, int(i));
  }
  ASSERT_EQ(recv_blocking(r, &got, sizeof got, 0, 9, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(got, 100);
  std::vector<unsigned char> in(600);
  MPIX_Device_request rr{};
  ASSERT_EQ(mpixd_irecv(&r, in.data(), in.size(), 0, 9, &rr), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_test(&r, &rr), MPIX_DEVICE_PENDING);  // its message is not in the table yet
  EXPECT_EQ(wait(s, &q[MPIXD_WAYS + 1]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(wait(r, &rr), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(in, big);
  EXPECT_EQ(w.ways_in_use(0, 1), 0u);
}

// A lane key holds MPIXD_LANE messages in flight; message n waits for the
// receive of message n - MPIXD_LANE (its cell's previous one), whatever
// else was received: pending, nothing written, nothing lost.
TEST(DevProto, LaneBackPressure) {
  World w(2, with_lanes(Shape{}, 64));
  const MPIX_Device_comm &s = w.h[0], &r = w.h[1];
  const int tag = 9;
  MPIX_Device_request q[MPIXD_LANE + 2] = {};
  int v[MPIXD_LANE + 2];
  for (unsigned i = 0; i < MPIXD_LANE; ++i) {
    v[i] = int(i);
    ASSERT_EQ(mpixd_isend(&s, &v[i], 4, 1, tag, &q[i]), MPIX_DEVICE_SUCCESS);
    EXPECT_EQ(mpixd_test(&s, &q[i]), MPIX_DEVICE_SUCCESS);
  }
  EXPECT_EQ(w.ways_in_use(0, 1), 0u);  // nothing in the table
  const auto big = payload(600, 3);
  v[MPIXD_LANE] = 100;
  ASSERT_EQ(mpixd_isend(&s, &v[MPIXD_LANE], 4, 1, tag, &q[MPIXD_LANE]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_isend(&s, big.data(), big.size(), 1, tag, &q[MPIXD_LANE + 1]), MPIX_DEVICE_SUCCESS);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(mpixd_test(&s, &q[MPIXD_LANE]), MPIX_DEVICE_PENDING);
    EXPECT_EQ(mpixd_test(&s, &q[MPIXD_LANE + 1]), MPIX_DEVICE_PENDING);
  }
  // Receives 1 and 2 first (nonblocking, completing out of order): cells 1
  // and 2 open, which message 9 (cell 1) may take, message 8 (cell 0) not.
  int got[3] = {-1, -1, -1};
  MPIX_Device_request rq[3] = {};
  for (int i = 0; i < 3; ++i) ASSERT_EQ(mpixd_irecv(&r, &got[i], sizeof got[i], 0, tag, &rq[i]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_test(&r, &rq[2]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_test(&r, &rq[1]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(got[1], 1);
  EXPECT_EQ(got[2], 2);
  EXPECT_EQ(mpixd_test(&s, &q[MPIXD_LANE]), MPIX_DEVICE_PENDING);
  EXPECT_EQ(wait(s, &q[MPIXD_LANE + 1]), MPIX_DEVICE_SUCCESS);  // staged: entry in cell 1, chunks in the ring
  EXPECT_EQ(wait(r, &rq[0]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(got[0], 0);
  EXPECT_EQ(wait(s, &q[MPIXD_LANE]), MPIX_DEVICE_SUCCESS);
  int x = -1;
  size_t n = 0;
  for (unsigned i = 3; i < MPIXD_LANE; ++i) {
    ASSERT_EQ(recv_blocking(r, &x, sizeof x, 0, tag, &n), MPIX_DEVICE_SUCCESS);
    EXPECT_EQ(x, int(i));
  }
  ASSERT_EQ(recv_blocking(r, &x, sizeof x, 0, tag, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(x, 100);
  std::vector<unsigned char> in(600);
  ASSERT_EQ(recv_blocking(r, in.data(), in.size(), 0, tag, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(n, 600u);
  EXPECT_EQ(in, big);
  EXPECT_EQ(w.lane_cells_in_use(0, 1, tag), 0u);
}

// A ring of 4 slots takes messages worth 4 chunks at once; the next staged
// message waits for credits (pending, nothing claimed), inline ones pass.
TEST(DevProto, RingBackPressure) {
  Shape sh;
  sh.channels = 1;
  sh.slots = 4;
  World w(2, sh);
  const MPIX_Device_comm &s = w.h[0], &r = w.h[1];
  const auto m0 = payload(500, 0), m1 = payload(400, 1), m2 = payload(100, 2);
  MPIX_Device_request q[4] = {};
  ASSERT_EQ(mpixd_isend(&s, m0.data(), m0.size(), 1, 4, &q[0]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_isend(&s, m1.data(), m1.size(), 1, 4, &q[1]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_test(&s, &q[0]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_test(&s, &q[1]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_schan_of(&s, s.local, 1, 0)->tail, 4u);
  ASSERT_EQ(mpixd_isend(&s, m2.data(), m2.size(), 1, 4, &q[2]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_test(&s, &q[2]), MPIX_DEVICE_PENDING);
  EXPECT_EQ(mpixd_schan_of(&s, s.local, 1, 0)->tail, 4u);  // claimed nothing
  int x = 7;
  ASSERT_EQ(send_blocking(s, &x, sizeof x, 1, 5), MPIX_DEVICE_SUCCESS);
  std::vector<unsigned char> in(600);
  size_t n = 0;
  ASSERT_EQ(recv_blocking(r, in.data(), in.size(), 0, 4, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(n, 500u);
  EXPECT_EQ(0, std::memcmp(in.data(), m0.data(), 500));
  EXPECT_EQ(wait(s, &q[2]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(recv_blocking(r, in.data(), in.size(), 0, 4, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(0, std::memcmp(in.data(), m1.data(), 400));
  ASSERT_EQ(recv_blocking(r, in.data(), in.size(), 0, 4, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(0, std::memcmp(in.data(), m2.data(), 100));
  ASSERT_EQ(recv_blocking(r, &x, sizeof x, 0, 5, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(x, 7);
  EXPECT_EQ(mpixd_schan_of(&s, s.local, 1, 0)->credit, 5u);
}

// Tags below MPIXD_DIRECT_TAGS are numbered at fixed places; the key tables
// number the other (peer, tag) pairs: a table of 4 takes 4 pairs on each
// side; a fifth pair is refused (nothing numbered, nothing sent), pairs
// already in the table, and small tags, keep working.
TEST(DevProto, KeyTableFull) {
  Shape sh;
  sh.keys = 4;
  World w(3, sh);
  const MPIX_Device_comm &s = w.h[0], &r = w.h[1];
  const int big = int(MPIXD_DIRECT_TAGS) + 100;
  int v = 1;
  MPIX_Device_request q{};
  for (int tag = big; tag < big + 3; ++tag) ASSERT_EQ(send_blocking(s, &v, 4, 1, tag), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(send_blocking(s, &v, 4, 2, big), MPIX_DEVICE_SUCCESS);  // (2, big) is a pair of its own
  EXPECT_EQ(mpixd_isend(&s, &v, 4, 1, big + 3, &q), MPIX_DEVICE_ERR_KEYS);
  EXPECT_EQ(mpixd_isend(&s, &v, 4, 2, big + 1, &q), MPIX_DEVICE_ERR_KEYS);
  ASSERT_EQ(send_blocking(s, &v, 4, 1, 7), MPIX_DEVICE_SUCCESS);  // a direct tag needs no key
  EXPECT_EQ(w.ways_in_use(0, 1), 4u);
  size_t n = 0;
  for (int tag = big; tag < big + 3; ++tag) ASSERT_EQ(recv_blocking(r, &v, 4, 0, tag, &n), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(recv_blocking(r, &v, 4, 0, 7, &n), MPIX_DEVICE_SUCCESS);
  MPIX_Device_request rq{};
  ASSERT_EQ(mpixd_irecv(&r, &v, 4, 2, big + 7, &rq), MPIX_DEVICE_SUCCESS);  // the receiver's fourth pair
  EXPECT_EQ(mpixd_irecv(&r, &v, 4, 0, big + 3, &q), MPIX_DEVICE_ERR_KEYS);
  ASSERT_EQ(send_blocking(w.h[2], &v, 4, 1, big + 7), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(wait(r, &rq), MPIX_DEVICE_SUCCESS);
  v = 42;
  ASSERT_EQ(send_blocking(s, &v, 4, 1, big + 2), MPIX_DEVICE_SUCCESS);
  v = 0;
  ASSERT_EQ(recv_blocking(r, &v, 4, 0, big + 2, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(v, 42);
  ASSERT_EQ(recv_blocking(w.h[2], &v, 4, 0, big, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(w.ways_in_use(0, 1) + w.ways_in_use(0, 2) + w.ways_in_use(2, 1), 0u);
}

// Messages longer than the ring stream through it; truncation keeps the
// buffer's bytes and reports the full size.
TEST(DevProto, StreamingAndTruncation) {
  Shape sh;
  sh.slots = 2;
  World w(2, sh);
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
  // An inline message into a smaller buffer.
  const auto src = payload(30, 9);
  std::vector<unsigned char> dst(30, 0xEE);
  size_t got = 0;
  ASSERT_EQ(send_blocking(w.h[0], src.data(), 30, 1, 5), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(recv_blocking(w.h[1], dst.data() + 1, 20, 0, 5, &got), MPIX_DEVICE_ERR_TRUNCATE);
  EXPECT_EQ(got, 30u);
  EXPECT_EQ(0, std::memcmp(dst.data() + 1, src.data(), 20));
  EXPECT_EQ(dst[21], 0xEE);
  EXPECT_EQ(dst[0], 0xEE);
}

// Inline payloads at every size and alignment on both sides, in cells
// (tiny: peers on one GPU, or on others with far cells) and in entries.
void inline_every_alignment(bool near, bool far_cells) {
  Shape sh;
  sh.near = near;
  sh.far_cells = far_cells;
  World w(2, sh);
  alignas(16) unsigned char src[64], dst[64];
  for (size_t n = 0; n <= MPIXD_INLINE; ++n)
    for (size_t a = 0; a < 16; a += 3) {
      const auto v = payload(n, unsigned(n * 16 + a));
      if (n) std::memcpy(src + a, v.data(), n);
      std::memset(dst, 0xEE, sizeof dst);
      size_t got = 0;
      ASSERT_EQ(send_blocking(w.h[0], src + a, n, 1, 8), MPIX_DEVICE_SUCCESS);
      ASSERT_EQ(recv_blocking(w.h[1], dst + (15 - a), MPIXD_INLINE, 0, 8, &got), MPIX_DEVICE_SUCCESS);
      EXPECT_EQ(got, n);
      EXPECT_TRUE(n == 0 || 0 == std::memcmp(dst + (15 - a), v.data(), n)) << n << " at +" << a;
      EXPECT_EQ(dst[15 - a + n], 0xEE) << n << " at +" << a;
      if (a != 15) {
        EXPECT_EQ(dst[14 - a], 0xEE) << n << " at +" << a;
      }
    }
}

TEST(DevProto, InlineEveryAlignment) {
  inline_every_alignment(true, false);
  inline_every_alignment(false, false);
  inline_every_alignment(false, true);
}

// Medium messages (flagged lines in the medium rings): every size around
// the line (8 bytes), slot (512 payload bytes) and mid_max boundaries, at
// several alignments on both sides, in lanes and in the table, to peers on
// this "GPU" and others with cells; each goes through the medium ring (its
// tail moves, the payload ring's does not); without cells (another GPU
// whose link has no native atomics) the same sizes are staged.
Shape with_mid(Shape q, uint32_t slots, uint32_t max) {
  q.mid_slots = slots;
  q.mid_max = max;
  return q;
}

void mid_every_size(Shape sh, bool expect_mid) {
  World w(2, sh);
  const MPIX_Device_comm &s = w.h[0], &r = w.h[1];
  std::vector<unsigned char> src(sh.mid_max + 64), dst(sh.mid_max + 64);
  const std::vector<size_t> sizes = {33, 34, 39, 40, 41, 47, 48, 100, 255, 256, 257, 511, 512, 513, 519, 520,
                                     1023, 1024, 1025, 1536, size_t(sh.mid_max) - 1, sh.mid_max};
  for (int tag : {3, 700}) {
    for (size_t n : sizes)
      for (size_t a : {0ul, 1ul, 4ul, 8ul, 13ul}) {
        const auto v = payload(n, unsigned(n * 16 + a));
        std::memcpy(src.data() + a, v.data(), n);
        std::memset(dst.data(), 0xEE, dst.size());
        const uint32_t c = mpixd_channel(&s, tag);
        const uint32_t mid_tail = mpixd_mid_schan_of(&s, s.local, 1, c)->tail;
        const uint32_t staged_tail = mpixd_schan_of(&s, s.local, 1, c)->tail;
        size_t got = 0;
        ASSERT_EQ(send_blocking(s, src.data() + a, n, 1, tag), MPIX_DEVICE_SUCCESS);
        if (expect_mid) {
          EXPECT_EQ(mpixd_mid_schan_of(&s, s.local, 1, c)->tail - mid_tail, mpixd_mid_nslots(n)) << n;
          EXPECT_EQ(mpixd_schan_of(&s, s.local, 1, c)->tail, staged_tail) << n;
        } else {
          EXPECT_EQ(mpixd_mid_schan_of(&s, s.local, 1, c)->tail, mid_tail) << n;
        }
        const size_t at = (a * 7) % 16;
        ASSERT_EQ(recv_blocking(r, dst.data() + at, n + 3, 0, tag, &got), MPIX_DEVICE_SUCCESS);
        ASSERT_EQ(got, n);
        EXPECT_EQ(0, std::memcmp(dst.data() + at, v.data(), n)) << n << " at +" << a;
        EXPECT_EQ(dst[at + n], 0xEE) << n;
        if (at > 0) {
          EXPECT_EQ(dst[at - 1], 0xEE) << n;
        }
      }
  }
  EXPECT_EQ(w.ways_in_use(0, 1), 0u);
  EXPECT_EQ(w.lane_cells_in_use(0, 1, 3), 0u);
}

TEST(DevProto, MidEverySizeAndAlignment) {
  const Shape q = with_mid(with_lanes(Shape{}, 8), 16, 4096);
  mid_every_size(q, true);
  Shape far = q;
  far.near = false;
  far.far_cells = true;
  mid_every_size(far, true);
  far.far_cells = false;  // no cells to that GPU: staged
  mid_every_size(far, false);
}

// A medium ring full of messages not yet received: the next medium send
// waits, claiming nothing (its tail stays); once the receiver has emptied
// slots, the sender's credit moves past them by reading its marks.
TEST(DevProto, MidRingBackPressure) {
  World w(2, with_mid(Shape{}, 4, 2048));
  const MPIX_Device_comm &s = w.h[0], &r = w.h[1];
  const uint32_t c = mpixd_channel(&s, 9);
  const auto a = payload(1000, 1), b = payload(900, 2), d = payload(600, 3);
  ASSERT_EQ(send_blocking(s, a.data(), a.size(), 1, 9), MPIX_DEVICE_SUCCESS);  // 2 slots
  ASSERT_EQ(send_blocking(s, b.data(), b.size(), 1, 9), MPIX_DEVICE_SUCCESS);  // 2 slots: full
  EXPECT_EQ(mpixd_mid_schan_of(&s, s.local, 1, c)->tail, 4u);
  MPIX_Device_request q{};
  ASSERT_EQ(mpixd_isend(&s, d.data(), d.size(), 1, 9, &q), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_test(&s, &q), MPIX_DEVICE_PENDING);
  EXPECT_EQ(mpixd_mid_schan_of(&s, s.local, 1, c)->tail, 4u);  // claimed nothing
  std::vector<unsigned char> in(2048);
  size_t n = 0;
  ASSERT_EQ(recv_blocking(r, in.data(), in.size(), 0, 9, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(n, 1000u);
  EXPECT_EQ(0, std::memcmp(in.data(), a.data(), 1000));
  EXPECT_EQ(wait(s, &q), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_mid_schan_of(&s, s.local, 1, c)->credit, 2u);
  ASSERT_EQ(recv_blocking(r, in.data(), in.size(), 0, 9, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(0, std::memcmp(in.data(), b.data(), 900));
  ASSERT_EQ(recv_blocking(r, in.data(), in.size(), 0, 9, &n), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(n, 600u);
  EXPECT_EQ(0, std::memcmp(in.data(), d.data(), 600));
}

// A medium message into a shorter buffer: the buffer's bytes, the full
// size, MPIX_DEVICE_ERR_TRUNCATE, nothing written past it; its slots are
// emptied all the same (the ring keeps going).
TEST(DevProto, MidTruncation) {
  World w(2, with_mid(Shape{}, 4, 2048));
  const MPIX_Device_comm &s = w.h[0], &r = w.h[1];
  for (int round = 0; round < 6; ++round) {
    for (size_t cap : {0ul, 5ul, 33ul, 700ul}) {
      const auto v = payload(1500, unsigned(cap + round));
      std::vector<unsigned char> in(cap + 16, 0xEE);
      size_t n = 0;
      ASSERT_EQ(send_blocking(s, v.data(), v.size(), 1, 2), MPIX_DEVICE_SUCCESS);
      EXPECT_EQ(recv_blocking(r, cap ? in.data() : nullptr, cap, 0, 2, &n), MPIX_DEVICE_ERR_TRUNCATE);
      EXPECT_EQ(n, 1500u);
      EXPECT_TRUE(cap == 0 || 0 == std::memcmp(in.data(), v.data(), cap)) << cap;
      EXPECT_EQ(in[cap], 0xEE) << cap;
    }
  }
  const uint32_t c = mpixd_channel(&s, 2);
  EXPECT_EQ(mpixd_mid_schan_of(&s, s.local, 1, c)->tail, 6u * 4 * 3);
}

// Pulled messages (pull.h): the sender posts (export, offset, number), the
// receiver copies from the buffer its host mapped for that export and
// signals the number on the sender's done word. In order with the key's
// other messages (a ring message and a tiny one between), into buffers
// longer and shorter than the message, through the table and lane cells;
// every way and cell free again after.
void pulled_entries(Shape sh) {
  World w(2, sh);
  const MPIX_Device_comm &s = w.h[0], &r = w.h[1];
  constexpr uint32_t kExport = 5;
  const auto src = payload(70000, 3);  // the "exported allocation"
  mpixd_pull_imports(&r, 0)[kExport] = reinterpret_cast<uintptr_t>(src.data());
  uint32_t gen = 0;
  for (int tag : {2, 100}) {
    for (size_t n : {33ul, 4096ul, 5001ul, 65536ul}) {
      for (size_t cap : {n + 9, n, n - 1, 16ul, 0ul}) {
        const size_t off = (n * 7 + cap) % 1000;
        uint32_t seq = 0, slot = 0;
        ASSERT_EQ(mpixd_take_seq_one(&s, true, 1, tag, false, &seq), MPIX_DEVICE_SUCCESS);
        ASSERT_TRUE(mpixd_claim_slot(&s, 1, tag, seq, &slot));
        mpixd_post_pull(&s, s.bases[1], slot, tag, seq, uint32_t(n), kExport, off, ++gen);
        // Another message of the key behind it, which must match after.
        const auto ring = payload(700, unsigned(n + cap));
        ASSERT_EQ(send_blocking(s, ring.data(), ring.size(), 1, tag), MPIX_DEVICE_SUCCESS);
        std::vector<unsigned char> in(cap + 16, 0xEE);
        size_t got = 0;
        const int want = cap < n ? MPIX_DEVICE_ERR_TRUNCATE : MPIX_DEVICE_SUCCESS;
        EXPECT_EQ(recv_blocking(r, cap ? in.data() : nullptr, cap, 0, tag, &got), want) << n << " into " << cap;
        EXPECT_EQ(got, n);
        const size_t copied = std::min(n, cap);
        EXPECT_TRUE(copied == 0 || 0 == std::memcmp(in.data(), src.data() + off, copied)) << n << " into " << cap;
        EXPECT_EQ(in[copied], 0xEE) << n << " into " << cap;
        EXPECT_TRUE(mpixd_pull_signalled(&s, 1, gen)) << "the sender was not released: " << n << " into " << cap;
        std::vector<unsigned char> back(700);
        EXPECT_EQ(recv_blocking(r, back.data(), back.size(), 0, tag, &got), MPIX_DEVICE_SUCCESS);
        EXPECT_EQ(back, ring);
      }
    }
  }
  // Nonblocking: pending until its receiver copied it, several in flight
  // on distinct done words, received in the order sent.
  constexpr int kFlight = 5;
  MPIX_Device_request q[kFlight];
  const uint32_t gen0 = 7 << 6;
  for (int k = 0; k < kFlight; ++k) {
    uint32_t seq = 0;
    ASSERT_EQ(mpixd_take_seq_one(&s, true, 1, 3, false, &seq), MPIX_DEVICE_SUCCESS);
    mpixd_pull_send_init(&q[k], src.data() + 100 * k, 1000, 1, 3, seq, kExport, 100 * k, gen0 + uint32_t(k));
    EXPECT_EQ(mpixd_test(&s, &q[k]), MPIX_DEVICE_PENDING);
  }
  for (int k = 0; k < kFlight; ++k) {
    std::vector<unsigned char> in(1000);
    size_t got = 0;
    EXPECT_EQ(recv_blocking(r, in.data(), in.size(), 0, 3, &got), MPIX_DEVICE_SUCCESS);
    EXPECT_EQ(0, std::memcmp(in.data(), src.data() + 100 * k, 1000)) << k;
    EXPECT_EQ(mpixd_test(&s, &q[k]), MPIX_DEVICE_SUCCESS) << k;
    if (k + 1 < kFlight) {
      EXPECT_EQ(mpixd_test(&s, &q[k + 1]), MPIX_DEVICE_PENDING) << k;
    }
  }
  EXPECT_EQ(w.ways_in_use(0, 1), 0u);
  EXPECT_EQ(w.lane_cells_in_use(0, 1, 2), 0u);
  // The done words are the sender's, per receiver: rank 0's own are untouched.
  for (uint32_t g = 0; g < MPIXD_PULL_DONE; ++g) {
    EXPECT_EQ(*mpixd_pull_done(&s, s.local, 0, g), 0u);
    EXPECT_EQ(*mpixd_pull_done(&r, r.local, 0, g), 0u);
  }
}

TEST(DevProto, PulledEntries) { pulled_entries(Shape{}); }
TEST(DevProto, PulledEntriesLanes) { pulled_entries(with_lanes(Shape{}, 64)); }
TEST(DevProto, PulledEntriesOtherGpus) {
  Shape q;
  q.near = false;
  pulled_entries(q);
}

// Medium tickets past 2^32: flags and marks of positions around the wrap
// (0xffffffff's flag is not 0, the flag of lines never written).
TEST(DevProto, MidTicketsWrap) {
  World w(2, with_mid(Shape{}, 4, 2048));
  const MPIX_Device_comm &s = w.h[0], &r = w.h[1];
  for (uint32_t c = 0; c < s.channels; ++c) {
    mpixd_mid_schan_of(&s, s.local, 1, c)->tail = 0xfffffff9u;
    mpixd_mid_schan_of(&s, s.local, 1, c)->credit = 0xfffffff9u;
  }
  std::thread rx([&] {
    for (int m = 0; m < 40; ++m) {
      const size_t n = 33 + (size_t(m) * 397) % 2000;
      std::vector<unsigned char> in(n, 0);
      size_t got = 0;
      EXPECT_EQ(recv_blocking(r, in.data(), n, 0, 6, &got), MPIX_DEVICE_SUCCESS) << m;
      EXPECT_EQ(got, n);
      EXPECT_EQ(in, payload(n, unsigned(m))) << m;
    }
  });
  for (int m = 0; m < 40; ++m) {
    const size_t n = 33 + (size_t(m) * 397) % 2000;
    const auto out = payload(n, unsigned(m));
    ASSERT_EQ(send_blocking(s, out.data(), n, 1, 6), MPIX_DEVICE_SUCCESS);
  }
  rx.join();
  const mpixd_schan *sc = mpixd_mid_schan_of(&s, s.local, 1, mpixd_channel(&s, 6));
  EXPECT_LT(sc->tail, 1000u);  // wrapped
}

// Many sender threads on `sources` ranks, as many receiver threads on one
// more; each key (source, tag) has one sending and one receiving thread;
// random sizes and multiplicities.
struct StressShape {
  int sources, pairs, keys, msgs;
  Shape queues;
  size_t max_bytes;                   // receive buffer size
  size_t (*size)(std::mt19937 &rng);  // a message's size
};

void stress(const StressShape &s) {
  World w(s.sources + 1, s.queues);
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
              if (recv_blocking(w.h[dst], buf.data(), buf.size(), src, tag, &got) != MPIX_DEVICE_SUCCESS ||
                  got != n || (n > 0 && std::memcmp(buf.data(), payload(n, seed).data(), n) != 0))
                ++errors;
            }
          }
        });
      }
    }
  }
  for (auto &t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  for (int src = 0; src < s.sources; ++src) EXPECT_EQ(w.ways_in_use(src, dst), 0u);
}

// Two sending ranks, 6 pairs each, 3 keys per pair, sizes inline, staged
// and streamed (rings of 256-byte slots).
void stress(Shape q) {
  // A fractional scale shrinks the run but never to nothing: a run of no
  // messages would pass without testing anything.
  const char *env = std::getenv("MPIX_TEST_SCALE");
  const double scale = env != nullptr && std::atof(env) > 0 ? std::atof(env) : 1.0;
  const int per_pair = std::max(10, static_cast<int>(1000 * scale));
  q.slot_bytes = 256;
  stress({2, 6, 3, per_pair, q, 2000,
          [](std::mt19937 &rng) -> size_t { return rng() % 4 == 0 ? rng() % 2000 : rng() % 40; }});
}

Shape shape(uint32_t channels, uint32_t slots, uint32_t buckets) {
  Shape q;
  q.channels = channels;
  q.slots = slots;
  q.buckets = buckets;
  return q;
}

TEST(DevProto, StressTinyQueues) { stress(shape(4, 2, 1)); }
// Every tag in lanes; then tags 0 .. 7 in lanes and the rest in the
// table; on other "GPUs", tiny messages in cells and in entries.
TEST(DevProto, StressLanes) { stress(with_lanes(shape(4, 2, 1), 64)); }
TEST(DevProto, StressLanesAndTable) { stress(with_lanes(shape(4, 2, 1), 8)); }
TEST(DevProto, StressLanesOtherGpus) {
  Shape q = with_lanes(shape(4, 2, 1), 64);
  q.near = false;
  stress(q);
  q.far_cells = true;
  stress(q);
}
TEST(DevProto, StressOneChannel) { stress(shape(1, 8, 4)); }
// Medium messages among inline and staged ones (up to 1 KiB medium, a
// ring of 4 slots: back-pressure all along), in lanes and the table, on
// this "GPU" and on others with cells.
TEST(DevProto, StressMid) {
  stress(with_mid(with_lanes(shape(4, 2, 1), 8), 4, 1024));
  Shape q = with_mid(with_lanes(shape(2, 4, 2), 64), 8, 1500);
  q.near = false;
  q.far_cells = true;
  stress(q);
}
TEST(DevProto, StressWide) { stress(shape(32, 16, 256)); }
TEST(DevProto, StressTinyQueuesOtherGpus) {
  Shape q = shape(4, 2, 1);
  q.near = false;
  stress(q);
}
TEST(DevProto, StressTinyQueuesOtherGpusCells) {
  Shape q = shape(4, 2, 1);
  q.near = false;
  q.far_cells = true;
  stress(q);
}

// test/gpu/dev_p2p's test_many as its one-channel GPU entry runs it: 1
// channel, 8 slots of 16 KiB, a table of 4 buckets, 128 thread pairs on 4
// keys each, mostly inline sizes, some staged. Host threads play the GPU
// threads, so a stall here would be the protocol's, not the GPU's.
TEST(DevProto, OneChannelManyThreadsLikeGpuTest) {
  Shape q = shape(1, 8, 4);
  q.slot_bytes = 16384;
  q.keys = 1024;
  stress({1, 128, 4, 10, q, 200,
          [](std::mt19937 &rng) -> size_t { return rng() % 8 == 0 ? 33 + rng() % 167 : rng() % 33; }});
}

// KNOWN DEADLOCK, disabled until the ring protocol changes (issue 26):
// several threads sending on one (peer, tag), each a blocking send of
// messages above MPIXD_INLINE, with as many threads receiving on it one at
// a time. A sender takes ring tickets when it sends, not in its key's
// message order, so a later message of a key can fill the ring ahead of an
// earlier one whose receiver every receiving thread waits behind; nothing
// is consumed and everything stops (with or without lanes; found on two
// H200s by test/gpu/dev_reuse, issue 24). An MPI program may do this (it
// completes even with no buffering at all: the n-th send and the n-th
// receive of a key always pair up), so the protocol must not stop.
// Run it with --gtest_also_run_disabled_tests; it gives up after 60 s.
TEST(DevProto, DISABLED_SharedKeysManyThreadsRingDeadlock) {
  Shape q = with_lanes(shape(1, 4, 4), 64);  // one channel of 4 slots: room runs out at once
  q.slot_bytes = 256;
  World w(2, q);
  constexpr int kTags = 2, kThreadsPerTag = 12, kPerThread = 6;
  std::atomic<int> errors{0}, done{0};
  std::vector<std::atomic<int>> seen(kTags * kThreadsPerTag * kPerThread);
  const auto size_of = [](int id) -> size_t { return id % 3 == 0 ? 8 : id % 3 == 1 ? 100 : 700; };
  std::vector<std::thread> threads;
  for (int tag = 0; tag < kTags; ++tag)
    for (int t = 0; t < kThreadsPerTag; ++t) {
      threads.emplace_back([&, tag, t] {  // sender
        for (int i = 0; i < kPerThread; ++i) {
          const int id = (tag * kThreadsPerTag + t) * kPerThread + i;
          std::vector<unsigned char> v = payload(size_of(id), unsigned(id));
          std::memcpy(v.data(), &id, sizeof id);
          if (send_blocking(w.h[0], v.data(), v.size(), 1, tag) != MPIX_DEVICE_SUCCESS) ++errors;
        }
        ++done;
      });
      threads.emplace_back([&, tag] {  // receiver
        std::vector<unsigned char> buf(1024);
        for (int i = 0; i < kPerThread; ++i) {
          size_t got = 0;
          int id = -1;
          if (recv_blocking(w.h[1], buf.data(), buf.size(), 0, tag, &got) != MPIX_DEVICE_SUCCESS || got < sizeof id) {
            ++errors;
            continue;
          }
          std::memcpy(&id, buf.data(), sizeof id);
          std::vector<unsigned char> want = id >= 0 && id < int(seen.size()) ? payload(size_of(id), unsigned(id))
                                                                            : std::vector<unsigned char>();
          if (want.size() != got || id / (kThreadsPerTag * kPerThread) != tag ||
              std::memcmp(buf.data() + sizeof id, want.data() + sizeof id, got - sizeof id) != 0 ||
              seen[static_cast<size_t>(id)]++ != 0)
            ++errors;
        }
        ++done;
      });
    }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (done.load() < int(threads.size()) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (done.load() < int(threads.size())) {
    std::fprintf(stderr, "stalled: %d of %zu threads finished after 60 s\n", done.load(), threads.size());
    std::fflush(stderr);
    std::_Exit(1);  // the threads spin forever: no orderly way out
  }
  for (auto &t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  for (const auto &n : seen) EXPECT_EQ(n.load(), 1);
  for (int tag = 0; tag < kTags; ++tag) EXPECT_EQ(w.lane_cells_in_use(0, 1, tag), 0u);
}

// A proxy queue of rank 0 (of 2) in plain host memory, whose host side the
// test plays by hand; bounce buffers of inline_bytes per entry (0: none).
struct HandPlayedProxy {
  std::vector<mpixd_pdesc> pq;
  std::vector<mpixd_pcomp> pc;
  std::vector<uint64_t> sq;
  std::vector<uint32_t> pool;
  std::vector<unsigned char> bounce_mem;
  uint32_t tail = 0, credit = 0;
  MPIX_Device_comm h{};
  HandPlayedProxy(uint32_t slots, uint32_t inline_bytes)
      : pq(slots), pc(slots), sq(slots, 0), pool((slots + 31) / 32, 0), bounce_mem(size_t(slots) * inline_bytes + 16, 0) {
    std::memset(pq.data(), 0, sizeof(mpixd_pdesc) * slots);
    std::memset(pc.data(), 0, sizeof(mpixd_pcomp) * slots);
    h.path = MPIXD_PATH_PROXY;
    h.size = 2;
    h.rank = 0;
    h.tag_ub = 100;
    h.pq_slots = slots;
    h.pq = pq.data();
    h.pc = pc.data();
    h.pq_sq = sq.data();
    h.pq_pool = pool.data();
    h.pq_tail = &tail;
    h.pq_credit = &credit;
    h.pq_inline = inline_bytes;
    unsigned char *b = bounce_mem.data();
    h.pq_bounce = inline_bytes ? b + (16 - reinterpret_cast<uintptr_t>(b) % 16) % 16 : nullptr;
  }
  // The slot that submission t names (checking the word is t's).
  uint32_t slot_of(uint32_t t) const {
    const uint64_t e = sq[t & (h.pq_slots - 1)];
    EXPECT_EQ(uint32_t(e >> 32), t + 1) << "submission " << t;
    return uint32_t(e);
  }
  // The host completes submission t, which named `slot` (the ring's word for
  // t is overwritten by ticket t + slots, so a caller keeps the slot).
  void complete(uint32_t slot, uint32_t t, int status, uint64_t bytes) {
    mpixd_pcomp &c = pc[slot];
    c.status = status;
    c.bytes = bytes;
    c.seq = t + 1;
  }
  unsigned held() const {
    unsigned n = 0;
    for (uint32_t w : pool) n += unsigned(__builtin_popcount(w));
    return n;
  }
  HandPlayedProxy(const HandPlayedProxy &) = delete;
  HandPlayedProxy &operator=(const HandPlayedProxy &) = delete;
};

// The proxy path's device side against a hand-played host: descriptor
// encoding (inline payload or address), submissions in ticket order naming
// their slots, completion records, slots freed in any order, AGAIN when
// every slot is held; an operation that stays pending holds only its slot.
TEST(DevProto, ProxyDescriptors) {
  HandPlayedProxy q(4, 0);
  auto &pq = q.pq;
  MPIX_Device_comm &h = q.h;
  EXPECT_EQ(sizeof(mpixd_pdesc), 64u);
  EXPECT_EQ(sizeof(mpixd_pcomp), 64u);
  const auto small = payload(20, 1);
  std::vector<unsigned char> big = payload(1000, 2), in(40, 0), in_big(1000, 0);
  MPIX_Device_request r[6] = {};
  ASSERT_EQ(mpixd_isend(&h, small.data(), small.size(), 1, 7, &r[0]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_isend(&h, big.data(), big.size(), 1, 8, &r[1]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_irecv(&h, in.data(), in.size() - 8, 1, 9, &r[2]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_irecv(&h, in_big.data(), in_big.size(), 1, 10, &r[3]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_isend(&h, small.data(), 4, 1, 7, &r[4]), MPIX_DEVICE_AGAIN);  // every slot held
  EXPECT_EQ(q.tail, 4u);
  EXPECT_EQ(q.held(), 4u);
  const mpixd_pdesc &d0 = pq[q.slot_of(0)], &d1 = pq[q.slot_of(1)], &d2 = pq[q.slot_of(2)], &d3 = pq[q.slot_of(3)];
  EXPECT_EQ(d0.op, uint32_t(MPIXD_OP_SEND));
  EXPECT_EQ(d0.buf, 0u);  // inline
  EXPECT_EQ(0, std::memcmp(d0.data, small.data(), small.size()));
  EXPECT_EQ(d1.buf, reinterpret_cast<uintptr_t>(big.data()));
  EXPECT_EQ(d1.bytes, 1000u);
  EXPECT_EQ(d2.op, uint32_t(MPIXD_OP_RECV));
  EXPECT_EQ(d2.buf, 0u);
  EXPECT_EQ(d2.bytes, 32u);
  EXPECT_EQ(d3.buf, reinterpret_cast<uintptr_t>(in_big.data()));
  EXPECT_EQ(d3.tag, 10);
  EXPECT_EQ(d3.peer, 1);
  uint32_t slot[6];
  for (uint32_t t = 0; t < 4; ++t) slot[t] = q.slot_of(t);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(mpixd_test(&h, &r[i]), MPIX_DEVICE_PENDING);
  // The host completes them out of order; the small receive brings 12 bytes.
  const auto got = payload(12, 3);
  std::memcpy(q.pc[slot[2]].data, got.data(), got.size());
  q.complete(slot[2], 2, MPIX_DEVICE_SUCCESS, 12);
  q.complete(slot[1], 1, MPIX_DEVICE_SUCCESS, 0);
  EXPECT_EQ(mpixd_test(&h, &r[2]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(r[2].msg_bytes, 12u);
  EXPECT_EQ(0, std::memcmp(in.data(), got.data(), 12));
  EXPECT_EQ(in[12], 0);
  EXPECT_EQ(mpixd_test(&h, &r[1]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_test(&h, &r[1]), MPIX_DEVICE_ERR_REQUEST);
  EXPECT_EQ(mpixd_test(&h, &r[0]), MPIX_DEVICE_PENDING);
  q.complete(slot[3], 3, MPIX_DEVICE_ERR_TRUNCATE, 1000);
  EXPECT_EQ(mpixd_test(&h, &r[3]), MPIX_DEVICE_ERR_TRUNCATE);
  // Ticket 0 is still pending, yet the slots freed after it are free again
  // (they are not returned in ticket order): two new operations go in.
  EXPECT_EQ(q.held(), 1u);
  ASSERT_EQ(mpixd_isend(&h, small.data(), 4, 1, 7, &r[4]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_isend(&h, small.data(), 5, 1, 7, &r[5]), MPIX_DEVICE_SUCCESS);
  slot[4] = q.slot_of(4);
  slot[5] = q.slot_of(5);
  EXPECT_NE(slot[4], slot[0]);
  EXPECT_NE(slot[5], slot[0]);
  EXPECT_NE(slot[4], slot[5]);
  EXPECT_EQ(pq[slot[5]].bytes, 5u);
  EXPECT_EQ(pq[slot[5]].seq, 6u);
  q.complete(slot[0], 0, MPIX_DEVICE_SUCCESS, 0);
  EXPECT_EQ(mpixd_test(&h, &r[0]), MPIX_DEVICE_SUCCESS);
  q.complete(slot[4], 4, MPIX_DEVICE_SUCCESS, 0);
  q.complete(slot[5], 5, MPIX_DEVICE_SUCCESS, 0);
  EXPECT_EQ(mpixd_test(&h, &r[5]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(mpixd_test(&h, &r[4]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(q.held(), 0u);
}

// Queues of fewer slots than a bitmap word, of one word and of several:
// every slot can be held at once, each by one operation, and no more.
TEST(DevProto, ProxySlotsAllUsable) {
  for (uint32_t n : {2u, 16u, 32u, 128u}) {
    HandPlayedProxy q(n, 0);
    int v = 0;
    std::vector<MPIX_Device_request> r(n + 1);
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(mpixd_isend(&q.h, &v, 4, 1, 1, &r[i]), MPIX_DEVICE_SUCCESS) << n;
    EXPECT_EQ(mpixd_isend(&q.h, &v, 4, 1, 1, &r[n]), MPIX_DEVICE_AGAIN) << n;
    EXPECT_EQ(q.held(), n);
    std::vector<bool> seen(n, false);
    for (uint32_t t = 0; t < n; ++t) {
      const uint32_t slot = q.slot_of(t);
      ASSERT_LT(slot, n);
      EXPECT_FALSE(seen[slot]) << n;
      seen[slot] = true;
    }
  }
}

// Messages above the descriptor's inline bytes and up to pq_inline go
// through the slot's bounce buffer: a send's payload is copied there (the
// descriptor carries no address), a receive's message is copied out of it
// (truncated to the buffer), into buffers at any alignment; larger ones
// still go by address.
TEST(DevProto, ProxyBounceBuffers) {
  const uint32_t inl = 256;
  HandPlayedProxy q(4, inl);
  MPIX_Device_comm &h = q.h;
  unsigned char *bounce = h.pq_bounce;
  const auto mid = payload(200, 4), big = payload(257, 5);
  std::vector<unsigned char> in(300, 0);
  MPIX_Device_request r[4] = {};
  ASSERT_EQ(mpixd_isend(&h, mid.data() + 1, 199, 1, 7, &r[0]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_isend(&h, big.data(), big.size(), 1, 7, &r[1]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_irecv(&h, in.data() + 3, 150, 1, 8, &r[2]), MPIX_DEVICE_SUCCESS);
  ASSERT_EQ(mpixd_irecv(&h, in.data() + 160, 100, 1, 9, &r[3]), MPIX_DEVICE_SUCCESS);
  const uint32_t s0 = q.slot_of(0), s2 = q.slot_of(2), s3 = q.slot_of(3);
  EXPECT_EQ(q.pq[s0].buf, 0u);
  EXPECT_EQ(0, std::memcmp(bounce + s0 * inl, mid.data() + 1, 199));
  EXPECT_EQ(q.pq[q.slot_of(1)].buf, reinterpret_cast<uintptr_t>(big.data()));
  EXPECT_EQ(q.pq[s2].buf, 0u);
  EXPECT_EQ(q.pq[s2].bytes, 150u);
  // The host receives 140 bytes for r[2] and 120 (more than the 100-byte
  // buffer: MPI filled the bounce up to the buffer's size) for r[3].
  const auto got = payload(140, 6), got2 = payload(100, 7);
  std::memcpy(bounce + s2 * inl, got.data(), got.size());
  std::memcpy(bounce + s3 * inl, got2.data(), got2.size());
  q.complete(s2, 2, MPIX_DEVICE_SUCCESS, 140);
  q.complete(s3, 3, MPIX_DEVICE_ERR_TRUNCATE, 100);
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

// A long run's 32-bit counters wrap: start every ticket, credit, release
// and per-key number just below 2^32 (ring slots hold the sequence words the
// previous round left) and stream messages, inline, staged and longer than
// the ring, across the wrap. Order and contents must survive, and every
// credit and way must come back.
void preset_counters(World &w, uint32_t t0, std::initializer_list<int> tags) {
  for (int dst = 0; dst < int(w.h.size()); ++dst) {
    const MPIX_Device_comm &rh = w.h[dst];
    for (int src = 0; src < int(w.h.size()); ++src) {
      for (uint32_t c = 0; c < rh.channels; ++c) {
        mpixd_rchan_of(&rh, src, c)->lo = t0;
        uint32_t *seqs = mpixd_seqs(&rh, rh.local, src, c);
        // Slot s last held the ticket p < t0 with p = s (mod slots).
        for (uint32_t k = 1; k <= rh.slots; ++k) seqs[(t0 - k) & (rh.slots - 1)] = t0 - k + 1;
        mpixd_schan *sc = mpixd_schan_of(&w.h[src], w.h[src].local, dst, c);
        sc->tail = sc->credit = t0;
      }
      for (int tag : tags) {
        *mpixd_counter(&w.h[src], true, dst, tag) = t0;
        *mpixd_counter(&rh, false, src, tag) = t0;
        // Lane cell c's turn: its first message from t0 on, rounded down.
        if (mpixd_lane(&rh, tag)) {
          uint32_t *turns = mpixd_lane_turns(&w.h[src], w.h[src].local, dst, tag);
          for (uint32_t c = 0; c < MPIXD_LANE; ++c)
            turns[c] = (t0 + ((c - t0) & (MPIXD_LANE - 1))) & ~(MPIXD_LANE - 1);
        }
      }
    }
  }
}

void counters_wrap(Shape sh) {
  sh.slots = 4;
  World w(2, sh);
  const int far = int(MPIXD_DIRECT_TAGS) + 3;  // numbered in the key table
  preset_counters(w, 0xfffffffeu, {far, 10, 11});
  const MPIX_Device_comm &s = w.h[0], &r = w.h[1];
  // Receives whose numbers straddle the wrap: FIFO must still hold.
  int a[4] = {-1, -1, -1, -1};
  MPIX_Device_request q[4] = {};
  for (int i = 0; i < 4; ++i) ASSERT_EQ(mpixd_irecv(&r, &a[i], 4, 0, far, &q[i]), MPIX_DEVICE_SUCCESS);
  EXPECT_EQ(q[3].seq, 1u);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(send_blocking(s, &i, 4, 1, far), MPIX_DEVICE_SUCCESS);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(mpixd_test(&r, &q[i]), MPIX_DEVICE_SUCCESS);
    EXPECT_EQ(a[i], i) << "receive " << i;
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
  for (int tag : {far, 10, 11}) {
    const mpixd_schan *sc = mpixd_schan_of(&s, s.local, 1, mpixd_channel(&s, tag));
    EXPECT_EQ(sc->credit, sc->tail) << "tag " << tag;
    if (tag != far) {
      EXPECT_LT(sc->tail, 1000u) << "tag " << tag << ": its tickets wrapped";
    }
  }
  EXPECT_EQ(w.ways_in_use(0, 1), 0u);
  for (int tag : {10, 11}) EXPECT_EQ(w.lane_cells_in_use(0, 1, tag), 0u) << "tag " << tag;
}

TEST(DevProto, CountersWrap) { counters_wrap(Shape{}); }
// Tags 10 and 11 in lanes: their numbers, and so their cells' turns, wrap.
TEST(DevProto, CountersWrapLanes) { counters_wrap(with_lanes(Shape{}, 64)); }

}  // namespace
