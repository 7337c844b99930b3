/*
 * mpix device point-to-point: lanes (see "Lanes" in proto.h): small tags'
 * cells of their own, taken in turn without a claim. Also where a message
 * goes or is looked for, a lane cell or the table (mpixd_claim_slot,
 * mpixd_find_slot). Part of proto.h.
 */
#ifndef MPIX_DEVICE_LANES_H
#define MPIX_DEVICE_LANES_H

#include "table.h"

MPIXD_HD bool mpixd_lane(const MPIX_Device_comm *h, int tag) { return (uint32_t)tag < h->lane_tags; }

/* The slot of message seq of a lane tag: its cell, by its number. */
MPIXD_HD uint32_t mpixd_lane_slot(int tag, uint32_t seq) {
  return MPIXD_SLOT_LANE | ((uint32_t)tag * MPIXD_LANE + (seq & (MPIXD_LANE - 1)));
}

/* The turn words of (dst, tag) in mailbox `base` (the sender's): cell c
 * takes message seq when word c equals seq rounded down to MPIXD_LANE. */
MPIXD_HD uint32_t *mpixd_lane_turns(const MPIX_Device_comm *h, char *base, int dst, int tag) {
  return (uint32_t *)(base + h->off_lturns) + ((uint64_t)dst * h->lane_tags + (uint32_t)tag) * MPIXD_LANE;
}

/* The MPIXD_LANE turn words at `t` (32-byte aligned), relaxed, all at
 * once: a sender loads them before it knows which one is its message's. */
MPIXD_HD void mpixd_load_turns(const uint32_t *t, bool near, uint32_t v[MPIXD_LANE]) {
#if defined(__CUDA_ARCH__)
  if (near)
    asm volatile("ld.relaxed.gpu.global.v4.u32 {%0, %1, %2, %3}, [%8];\n\t"
                 "ld.relaxed.gpu.global.v4.u32 {%4, %5, %6, %7}, [%8+16];"
                 : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]), "=r"(v[4]), "=r"(v[5]), "=r"(v[6]), "=r"(v[7])
                 : "l"(t)
                 : "memory");
  else
    asm volatile("ld.relaxed.sys.global.v4.u32 {%0, %1, %2, %3}, [%8];\n\t"
                 "ld.relaxed.sys.global.v4.u32 {%4, %5, %6, %7}, [%8+16];"
                 : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]), "=r"(v[4]), "=r"(v[5]), "=r"(v[6]), "=r"(v[7])
                 : "l"(t)
                 : "memory");
#else
  (void)near;
  for (unsigned c = 0; c < MPIXD_LANE; ++c) v[c] = __atomic_load_n(t + c, __ATOMIC_ACQUIRE);
#endif
}

/* Whether cell turn word `turn` (as loaded) lets message seq into its
 * lane cell: the cell's previous message was taken. */
MPIXD_HD bool mpixd_lane_open(uint32_t turn, uint32_t seq) { return turn == (seq & ~(MPIXD_LANE - 1)); }

/* Claims the slot of message (tag, seq) to dst: its lane cell once open,
 * else a way of the table; false while there is none (the send waits). The
 * acquire orders the put after the receiver's reads of the cell's previous
 * message. */
MPIXD_HD bool mpixd_claim_slot(const MPIX_Device_comm *h, int dst, int tag, uint32_t seq, uint32_t *slot) {
  if (mpixd_lane(h, tag)) {
    const uint32_t *turn = mpixd_lane_turns(h, h->local, dst, tag) + (seq & (MPIXD_LANE - 1));
    if (!mpixd_lane_open(mpixd_load_acquire_at(turn, mpixd_near(h, dst)), seq)) return false;
    *slot = mpixd_lane_slot(tag, seq);
    return true;
  }
  return mpixd_claim_way(h, dst, tag, seq, slot);
}

/* Looks for message (tag, seq) from src in its lane cell or the table: its
 * slot, or -1 while it has not arrived; in a lane cell, *payload is the
 * cell's payload word, read with its key. */
MPIXD_HD int32_t mpixd_find_slot(const MPIX_Device_comm *h, int src, int tag, uint32_t seq, uint64_t *key,
                                 uint64_t *payload) {
  if (!mpixd_lane(h, tag)) return mpixd_find(h, src, tag, seq, key);
  const uint32_t slot = mpixd_lane_slot(tag, seq);
  uint64_t k = 0, p = 0;
  mpixd_cell_load(mpixd_cell(h, h->local, src, slot), mpixd_near(h, src), &k, &p);
  if ((k & ~MPIXD_KEY_SIZE) != mpixd_mkey(tag, seq)) return -1;
  *key = k;
  *payload = p;
  return (int32_t)slot;
}

/* Opens the lane cell of message seq of (src, tag) for its next message
 * (seq + MPIXD_LANE), once this rank took message seq from it, by writing
 * the cell's turn word in src's mailbox (src_base). `dep` is 0, computed
 * from every word the take read from the cell and its entry: the store
 * then cannot issue before those reads are performed, and needs no release
 * (which costs a system-scope fence to another GPU). */
MPIXD_HD void mpixd_lane_pass(const MPIX_Device_comm *h, int src, char *src_base, int tag, uint32_t seq, uint32_t dep) {
  uint32_t *turn = mpixd_lane_turns(h, src_base, h->rank, tag) + (seq & (MPIXD_LANE - 1));
  mpixd_store_relaxed_at(turn, (seq & ~(MPIXD_LANE - 1)) + MPIXD_LANE + dep, mpixd_near(h, src));
}

#endif
