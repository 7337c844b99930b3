/*
 * mpix device point-to-point: hashing and numbering. Where a message of
 * (tag, n) goes (its ring channel and table bucket), its 64-bit match key,
 * and the per-(peer, tag) counters that give each send and receive its
 * number n within its key. Part of proto.h.
 */
#ifndef MPIX_DEVICE_KEYS_H
#define MPIX_DEVICE_KEYS_H

#include "layout.h"

MPIXD_HD uint32_t mpixd_mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

MPIXD_HD uint32_t mpixd_channel(const MPIX_Device_comm *h, int tag) {
  return mpixd_mix32((uint32_t)tag) & (h->channels - 1);
}

/* The first bucket of message (tag, seq): consecutive messages of a key
 * spread over the table. */
MPIXD_HD uint32_t mpixd_bucket(const MPIX_Device_comm *h, int tag, uint32_t seq) {
  return mpixd_mix32((uint32_t)tag * 0x9e3779b1u ^ mpixd_mix32(seq + 0x632be5abu)) & (h->buckets - 1);
}

/* The match key of message (tag, seq): never 0 (an empty way). Tags are
 * below 2^31, so they fit beside the valid bit; the number keeps its low
 * 28 bits (fewer messages than that of one key are ever in a table), which
 * leaves 4 bits for the size of a tiny message (0 .. MPIXD_TINY, its
 * payload in the cell) or MPIXD_KEY_ENTRY (the message is in the entry). */
#define MPIXD_KEY_SIZE 0xfull
#define MPIXD_KEY_ENTRY 0xfull
MPIXD_HD uint64_t mpixd_mkey(int tag, uint32_t seq) {
  return (1ull << 63) | ((uint64_t)(uint32_t)tag << 32) | ((uint64_t)(seq & 0x0fffffffu) << 4);
}

/* A key table's key of (peer, tag): never 0 (an empty slot). */
MPIXD_HD uint64_t mpixd_key(int peer, int tag) {
  return ((uint64_t)(uint32_t)(peer + 1) << 32) | (uint32_t)tag;
}

/* The counter of `key` in table t (n slots, a power of two), inserted if
 * new (linear probing; keys are never removed); NULL when the table is
 * full. Only threads of the owning rank touch a table. */
MPIXD_HD uint32_t *mpixd_key_counter(mpixd_keyslot *t, uint32_t n, uint64_t key) {
  uint32_t s = mpixd_mix32((uint32_t)key * 0x9e3779b1u ^ (uint32_t)(key >> 32)) & (n - 1);
  for (uint32_t i = 0; i < n; ++i, s = (s + 1) & (n - 1)) {
    uint64_t k = mpixd_load_relaxed64(&t[s].key);
    if (k == 0) k = mpixd_cas64(&t[s].key, 0, key);
    if (k == 0 || k == key) return &t[s].count;
  }
  return NULL;
}

/* The counter of (peer, tag) on the send (or receive) side: at a fixed
 * place for tags below MPIXD_DIRECT_TAGS (one atomic, no lookup), in the
 * key table otherwise; NULL when that is full. */
MPIXD_HD uint32_t *mpixd_counter(const MPIX_Device_comm *h, bool send, int peer, int tag) {
  if ((uint32_t)tag < MPIXD_DIRECT_TAGS)
    return (uint32_t *)(h->local + (send ? h->off_sdirect : h->off_rdirect)) + (uint64_t)peer * MPIXD_DIRECT_TAGS +
           (uint32_t)tag;
  return mpixd_key_counter(send ? mpixd_send_keys(h) : mpixd_recv_keys(h), h->keys, mpixd_key(peer, tag));
}

/* Takes the next `n` numbers of (peer, tag) in the send (or receive)
 * table: the first in *seq. */
MPIXD_HD int mpixd_take_seq(const MPIX_Device_comm *h, bool send, int peer, int tag, uint32_t n, uint32_t *seq) {
  uint32_t *c = mpixd_counter(h, send, peer, tag);
  if (c == NULL) return MPIX_DEVICE_ERR_KEYS;
  *seq = mpixd_fetch_add(c, n);
  return MPIX_DEVICE_SUCCESS;
}

#if defined(__CUDACC__)
/* mpixd_take_seq for the lanes of a warp that call it together: lanes with
 * the same (peer, tag) take consecutive numbers, in lane order, with one
 * atomic (papers/000 Algorithm 1: one atomic per group of lanes, each lane
 * takes its rank in the group). A lane alone skips the grouping (a match
 * costs more than the arithmetic around it). */
__device__ __forceinline__ int mpixd_take_seq_warp(const MPIX_Device_comm *h, bool send, int peer, int tag,
                                                    uint32_t *seq) {
  const unsigned active = __activemask();
  unsigned lower;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lower));
  if ((active & (active - 1)) == 0) return mpixd_take_seq(h, send, peer, tag, 1, seq);
  const unsigned group = __match_any_sync(active, mpixd_key(peer, tag));
  const unsigned leader = __ffs(group) - 1;
  uint32_t base = 0;
  int rc = MPIX_DEVICE_SUCCESS;
  if ((group & lower) == 0) rc = mpixd_take_seq(h, send, peer, tag, __popc(group), &base);
  rc = __shfl_sync(group, rc, leader);
  base = __shfl_sync(group, base, leader);
  *seq = base + __popc(group & lower);
  return rc;
}
#endif

/* Takes the number of one send (or receive) of (peer, tag): with `warp`,
 * in device code, together with the lanes of its warp that call at the
 * same time (mpixd_take_seq_warp: in lane order); otherwise alone. */
MPIXD_HD int mpixd_take_seq_one(const MPIX_Device_comm *h, bool send, int peer, int tag, bool warp, uint32_t *seq) {
#if defined(__CUDA_ARCH__)
  if (warp) return mpixd_take_seq_warp(h, send, peer, tag, seq);
#else
  (void)warp;
#endif
  return mpixd_take_seq(h, send, peer, tag, 1, seq);
}

#endif
