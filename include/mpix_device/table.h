/*
 * mpix device point-to-point: the message table (per source, in the
 * receiver's memory; see "Message table" in proto.h). Polling a bucket's
 * key line, the 16-byte cell atomics of tiny messages, claiming a way,
 * posting an entry, finding a message and giving its way back.
 * Part of proto.h.
 */
#ifndef MPIX_DEVICE_TABLE_H
#define MPIX_DEVICE_TABLE_H

#include "bytes.h"
#include "keys.h"

/* The 8 match keys of a bucket (its 8 cells of 16 bytes, 128-byte aligned,
 * key first), relaxed: a poll. No compiler barrier: a caller loads several
 * buckets before it looks at any, so their loads are in flight together. */
MPIXD_HD void mpixd_load_line(const uint64_t *p, uint64_t k[MPIXD_WAYS]) {
#if defined(__CUDA_ARCH__)
  asm volatile("ld.volatile.global.u64 %0, [%8];\n\t"
               "ld.volatile.global.u64 %1, [%8+16];\n\t"
               "ld.volatile.global.u64 %2, [%8+32];\n\t"
               "ld.volatile.global.u64 %3, [%8+48];\n\t"
               "ld.volatile.global.u64 %4, [%8+64];\n\t"
               "ld.volatile.global.u64 %5, [%8+80];\n\t"
               "ld.volatile.global.u64 %6, [%8+96];\n\t"
               "ld.volatile.global.u64 %7, [%8+112];"
               : "=l"(k[0]), "=l"(k[1]), "=l"(k[2]), "=l"(k[3]), "=l"(k[4]), "=l"(k[5]), "=l"(k[6]), "=l"(k[7])
               : "l"(p));
#else
  for (unsigned w = 0; w < MPIXD_WAYS; ++w) k[w] = __atomic_load_n(p + 2 * w, __ATOMIC_RELAXED);
#endif
}

/* A tiny message's cell, {key, payload}, written or taken as one 16-byte
 * atomic on the GPU (an exchange: single-copy atomic, so neither side
 * needs a fence or an acquire for the payload). The host build, where
 * 16-byte atomics are library calls, says the same with a release store of
 * the key after the payload and an acquire load before it. */
MPIXD_HD void mpixd_cell_put(uint64_t *cell, uint64_t key, uint64_t payload, bool near) {
#if defined(__CUDA_ARCH__)
  if (near)
    asm volatile("{\n\t.reg .b128 d, b;\n\tmov.b128 b, {%0, %1};\n\t"
                 "atom.relaxed.gpu.global.exch.b128 d, [%2], b;\n\t}" ::"l"(key), "l"(payload), "l"(cell)
                 : "memory");
  else
    asm volatile("{\n\t.reg .b128 d, b;\n\tmov.b128 b, {%0, %1};\n\t"
                 "atom.relaxed.sys.global.exch.b128 d, [%2], b;\n\t}" ::"l"(key), "l"(payload), "l"(cell)
                 : "memory");
#else
  (void)near;
  __atomic_store_n(cell + 1, payload, __ATOMIC_RELAXED);
  __atomic_store_n(cell, key, __ATOMIC_RELEASE);
#endif
}

/* Takes a tiny message's cell (seen holding its key): its payload, and in
 * *key the key the exchange took (the one seen: only this receive takes
 * the cell); the cell is left empty. */
MPIXD_HD uint64_t mpixd_cell_take(uint64_t *cell, bool near, uint64_t *key) {
#if defined(__CUDA_ARCH__)
  uint64_t payload, k;
  if (near)
    asm volatile("{\n\t.reg .b128 d, b;\n\tmov.b128 b, {0, 0};\n\t"
                 "atom.relaxed.gpu.global.exch.b128 d, [%2], b;\n\tmov.b128 {%1, %0}, d;\n\t}"
                 : "=l"(payload), "=l"(k)
                 : "l"(cell)
                 : "memory");
  else
    asm volatile("{\n\t.reg .b128 d, b;\n\tmov.b128 b, {0, 0};\n\t"
                 "atom.relaxed.sys.global.exch.b128 d, [%2], b;\n\tmov.b128 {%1, %0}, d;\n\t}"
                 : "=l"(payload), "=l"(k)
                 : "l"(cell)
                 : "memory");
  *key = k;
  return payload;
#else
  (void)near;
  *key = __atomic_load_n(cell, __ATOMIC_ACQUIRE);
  const uint64_t payload = __atomic_load_n(cell + 1, __ATOMIC_RELAXED);
  __atomic_store_n(cell, 0, __ATOMIC_RELAXED);
  return payload;
#endif
}

/* Reads a cell (a lane's: only its message's sender writes it, by one
 * 16-byte atomic or a key released after the entry) in one 16-byte access:
 * a tiny message's key and payload together, without taking the cell. The
 * host build says the same with an acquire load of the key before the
 * payload (whose host put stores the payload first). */
MPIXD_HD void mpixd_cell_load(const uint64_t *cell, bool near, uint64_t *key, uint64_t *payload) {
#if defined(__CUDA_ARCH__)
  uint64_t k, p;
  if (near)
    asm volatile("{\n\t.reg .b128 d;\n\tld.relaxed.gpu.global.b128 d, [%2];\n\tmov.b128 {%0, %1}, d;\n\t}"
                 : "=l"(k), "=l"(p)
                 : "l"(cell)
                 : "memory");
  else
    asm volatile("{\n\t.reg .b128 d;\n\tld.relaxed.sys.global.b128 d, [%2];\n\tmov.b128 {%0, %1}, d;\n\t}"
                 : "=l"(k), "=l"(p)
                 : "l"(cell)
                 : "memory");
  *key = k;
  *payload = p;
#else
  (void)near;
  *key = __atomic_load_n(cell, __ATOMIC_ACQUIRE);
  *payload = __atomic_load_n(cell + 1, __ATOMIC_RELAXED);
#endif
}

/* Claims a free way for message (tag, seq) to dst, from its hashed bucket
 * on: its index (bucket * MPIXD_WAYS + way) in *slot; false when all
 * MPIXD_PROBE buckets are full. The first try assumes an empty bucket,
 * which saves a load in the common case (a failed try returns the word). */
MPIXD_HD bool mpixd_claim_way(const MPIX_Device_comm *h, int dst, int tag, uint32_t seq, uint32_t *slot) {
  uint32_t *claims = mpixd_claims(h, h->local, dst);
  const bool near = mpixd_near(h, dst);
  const uint32_t b0 = mpixd_bucket(h, tag, seq);
  for (uint32_t i = 0; i < MPIXD_PROBE; ++i) {
    const uint32_t b = (b0 + i) & (h->buckets - 1);
    uint32_t m = 0;
    for (;;) {
      const uint32_t free = ~m & ((1u << MPIXD_WAYS) - 1);
      if (free == 0) break;
      const uint32_t bit = free & (0u - free);
      const uint32_t old = mpixd_cas_acquire_at(&claims[b], m, m | bit, near);
      if (old == m) {
        *slot = b * MPIXD_WAYS + mpixd_ctz(bit);
        return true;
      }
      m = old;
    }
  }
  return false;
}

/* Writes the entry of message (tag, seq) into way `slot` of dst's table
 * (mailbox `base`: h->bases[dst], loaded early by callers so that its
 * latency hides behind their atomics)
 * and publishes it by its match key, written last (release: the entry's
 * words, and the chunks the caller wrote before, are visible to whoever
 * sees the key). */
MPIXD_HD void mpixd_post_entry(const MPIX_Device_comm *h, int dst, char *base, uint32_t slot, int tag, uint32_t seq,
                               uint32_t bytes, uint32_t chan, uint32_t ticket, uint32_t nslots, const void *buf) {
  mpixd_ment *e = mpixd_entry(h, base, h->rank, slot);
  mpixd_w16 head;
  head.a = (uint64_t)bytes | (uint64_t)chan << 32;
  head.b = (uint64_t)ticket | (uint64_t)nslots << 32;
  *(mpixd_w16 *)e = head;
  if (bytes > 0 && bytes <= MPIXD_INLINE) {
    mpixd_w16 w[2];
    mpixd_inline_load(w, buf, bytes);
    ((mpixd_w16 *)e->data)[0] = w[0];
    if (bytes > 16) ((mpixd_w16 *)e->data)[1] = w[1];
  }
  mpixd_store_release64_at(mpixd_cell(h, base, h->rank, slot), mpixd_mkey(tag, seq) | MPIXD_KEY_ENTRY,
                           mpixd_near(h, dst));
}

/* A message of at most MPIXD_TINY bytes into way `slot` of dst's table:
 * key, size and payload in one 16-byte atomic. */
MPIXD_HD void mpixd_post_tiny(const MPIX_Device_comm *h, int dst, char *base, uint32_t slot, int tag, uint32_t seq,
                              uint32_t bytes, const void *buf) {
  mpixd_w16 w[2];
  mpixd_inline_load(w, buf, bytes);
  mpixd_cell_put(mpixd_cell(h, base, h->rank, slot), mpixd_mkey(tag, seq) | bytes, w[0].a, mpixd_near(h, dst));
}

/* Whether tiny messages to peer go in their cell, by one 16-byte atomic:
 * always to peers on this GPU; to other GPUs where the host found the link
 * carries native atomics and was asked to use them (MPIX_DEVICE_FAR_CELLS).
 * Elsewhere they take the entry: its key is a release store, which costs a
 * system-scope fence. */
MPIXD_HD bool mpixd_cells(const MPIX_Device_comm *h, int peer) {
  return peer >= 0 && peer < 64 && ((h->cell_peers >> peer) & 1u) != 0;
}

/* Posts a message that fits the table (tiny in its cell where
 * mpixd_cells, up to MPIXD_INLINE in its entry) into way `slot` of dst's
 * table. */
MPIXD_HD void mpixd_post_small(const MPIX_Device_comm *h, int dst, char *base, uint32_t slot, int tag, uint32_t seq,
                               uint32_t bytes, const void *buf) {
  if (bytes <= MPIXD_TINY && mpixd_cells(h, dst)) mpixd_post_tiny(h, dst, base, slot, tag, seq, bytes, buf);
  else mpixd_post_entry(h, dst, base, slot, tag, seq, bytes, 0, 0, 0, buf);
}

/* Looks for message (tag, seq) from src: its way, or -1 while it has not
 * arrived. Only this receive wants (tag, seq), so no other thread touches
 * the entry: taking it needs no atomic. */
MPIXD_HD int32_t mpixd_find_at(uint32_t buckets, uint64_t *cells, uint32_t b0, uint64_t want, uint64_t *key) {
  /* Every line loaded before any is looked at: one memory round trip per
   * poll, not one per bucket. */
  uint64_t k[MPIXD_PROBE][MPIXD_WAYS];
  for (uint32_t i = 0; i < MPIXD_PROBE; ++i)
    mpixd_load_line(cells + 2 * (uint64_t)((b0 + i) & (buckets - 1)) * MPIXD_WAYS, k[i]);
  for (uint32_t i = 0; i < MPIXD_PROBE; ++i) {
    for (uint32_t w = 0; w < MPIXD_WAYS; ++w) {
      if ((k[i][w] & ~MPIXD_KEY_SIZE) != want) continue;
      *key = k[i][w];
      return (int32_t)(((b0 + i) & (buckets - 1)) * MPIXD_WAYS + w);
    }
  }
  return -1;
}

MPIXD_HD int32_t mpixd_find(const MPIX_Device_comm *h, int src, int tag, uint32_t seq, uint64_t *key) {
  return mpixd_find_at(h->buckets, mpixd_mkeys(h, h->local, src), mpixd_bucket(h, tag, seq), mpixd_mkey(tag, seq), key);
}

/* Gives way `slot` of src's table (src's mailbox at src_base) back to src
 * once its message was taken:
 * the key cleared (a tiny message's take cleared it), the way freed in the
 * sender's occupancy word (release: the reads of the entry and the cleared
 * key come before the sender's reuse). */
MPIXD_HD void mpixd_free_way(const MPIX_Device_comm *h, int src, char *src_base, uint32_t slot, bool cleared) {
  if (!cleared) mpixd_store_relaxed64(mpixd_mkeys(h, h->local, src) + 2 * (uint64_t)slot, 0);
  mpixd_and_release_at(mpixd_claims(h, src_base, h->rank) + slot / MPIXD_WAYS, ~(1u << (slot % MPIXD_WAYS)),
                       mpixd_near(h, src));
}

/* The same for a tiny message's way, right after its take, without the
 * release (a system-scope fence to another GPU, the largest cost left on
 * the receiver's path): the take, one atomic exchange, is the receiver's
 * only access to the way, and `taken` (the key the exchange returned xor
 * the key seen: 0) makes the freeing atomic depend on its value, so it
 * cannot issue before the take is performed; the sender's next put to the
 * way comes after it sees the way free. */
MPIXD_HD void mpixd_free_tiny_way(const MPIX_Device_comm *h, int src, char *src_base, uint32_t slot, uint64_t taken) {
  mpixd_and_relaxed_at(mpixd_claims(h, src_base, h->rank) + slot / MPIXD_WAYS,
                       ~(1u << (slot % MPIXD_WAYS)) | (uint32_t)(taken | taken >> 32), mpixd_near(h, src));
}

#endif
