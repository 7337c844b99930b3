/*
 * mpix device point-to-point: the payload rings (see "Payload rings" in
 * proto.h): tickets and credit on the sender's side, chunk copies and
 * their sequence words, and the receiver's in-order release. Part of
 * proto.h.
 */
#ifndef MPIX_DEVICE_RING_H
#define MPIX_DEVICE_RING_H

#include "bytes.h"
#include "layout.h"

/* Chunks of a message: 0 for inline ones. */
MPIXD_HD uint32_t mpixd_nslots(const MPIX_Device_comm *h, size_t bytes) {
  return bytes <= MPIXD_INLINE ? 0u : (uint32_t)((bytes + h->slot_bytes - 1) / h->slot_bytes);
}

/* Bytes of chunk j of a staged message of `bytes` bytes. */
MPIXD_HD size_t mpixd_chunk_len(const MPIX_Device_comm *h, size_t bytes, uint32_t j) {
  const size_t off = (size_t)j * h->slot_bytes;
  const size_t rest = bytes - off;
  return rest < h->slot_bytes ? rest : h->slot_bytes;
}

/* Claims n tickets on (dst, c) if the ring has room for all of them now;
 * returns 0 and *ticket, or MPIX_DEVICE_AGAIN having claimed nothing. */
MPIXD_HD int mpixd_claim_room(const MPIX_Device_comm *h, mpixd_schan *sc, uint32_t n, uint32_t *ticket, bool near) {
  for (;;) {
    /* Credit first: every credit value was written after the tail passed
     * it, so a tail read after the acquire is >= credit. Read the other
     * way round, a stale tail under a fresh credit makes tail - credit wrap
     * to ~4G and reports a full ring that has room. */
    const uint32_t credit = mpixd_load_acquire_at(&sc->credit, near);
    const uint32_t tail = mpixd_load_relaxed(&sc->tail);
    if ((uint64_t)(uint32_t)(tail - credit) + n > h->slots) return MPIX_DEVICE_AGAIN;
    if (mpixd_cas(&sc->tail, tail, tail + n) == tail) {
      *ticket = tail;
      return MPIX_DEVICE_SUCCESS;
    }
  }
}

/* How many of the n tickets from t on may be written now (0 .. n); the
 * credit is written by the ring's receiver (near: on this GPU). */
MPIXD_HD uint32_t mpixd_room(const MPIX_Device_comm *h, mpixd_schan *sc, uint32_t t, uint32_t n, bool near) {
  const int32_t free = mpixd_diff(mpixd_load_acquire_at(&sc->credit, near) + h->slots, t);
  return free <= 0 ? 0u : (uint32_t)free < n ? (uint32_t)free : n;
}

/* Copies chunk j of a staged message (tickets from t) into its staging
 * block (room checked by the caller); `lanes` threads share the copy, then
 * the caller publishes it (mpixd_publish_chunk, after a barrier and a
 * system fence when lanes > 1). */
MPIXD_HD void mpixd_put_chunk(const MPIX_Device_comm *h, int dst, uint32_t c, uint32_t t, uint32_t j, const void *buf,
                              size_t bytes, unsigned lane, unsigned lanes) {
  const uint32_t slot = (t + j) & (h->slots - 1);
  mpixd_copy(mpixd_staging(h, h->bases[dst], h->rank, c, slot), (const unsigned char *)buf + (size_t)j * h->slot_bytes,
             mpixd_chunk_len(h, bytes, j), lane, lanes);
}

MPIXD_HD void mpixd_publish_chunk(const MPIX_Device_comm *h, int dst, uint32_t c, uint32_t pos) {
  mpixd_store_release_at(mpixd_seqs(h, h->bases[dst], h->rank, c) + (pos & (h->slots - 1)), pos + 1,
                         mpixd_near(h, dst));
}

/* Publishes chunks pos .. pos + k - 1 to dst with one fence, by the thread
 * that stores, after the barrier that ends every lane's copies (the block
 * variants: a release store each would cost a round trip each). */
MPIXD_HD void mpixd_publish_chunks(const MPIX_Device_comm *h, int dst, uint32_t c, uint32_t pos, uint32_t k) {
  uint32_t *seqs = mpixd_seqs(h, h->bases[dst], h->rank, c);
  mpixd_fence_at(mpixd_near(h, dst));
  for (uint32_t j = 0; j < k; ++j) mpixd_store_relaxed(seqs + ((pos + j) & (h->slots - 1)), pos + j + 1);
}

/* Whether chunk ticket pos from src has arrived, without ordering: a
 * caller that reads the data after a true answer fences first. */
MPIXD_HD bool mpixd_arrived_relaxed(const MPIX_Device_comm *h, int src, uint32_t c, uint32_t pos) {
  return mpixd_load_relaxed(mpixd_seqs(h, h->local, src, c) + (pos & (h->slots - 1))) == pos + 1;
}

/* Whether chunk ticket pos from src has arrived (acquire: its data may be
 * read after a true answer). */
MPIXD_HD bool mpixd_arrived(const MPIX_Device_comm *h, int src, uint32_t c, uint32_t pos) {
  return mpixd_load_acquire_at(mpixd_seqs(h, h->local, src, c) + (pos & (h->slots - 1)), mpixd_near(h, src)) ==
         pos + 1;
}

/* Copies chunk j of the message bound to r into its buffer (lanes
 * cooperating; truncated to the buffer). */
MPIXD_HD void mpixd_get_chunk(const MPIX_Device_comm *h, const MPIX_Device_request *r, uint32_t j, unsigned lane,
                              unsigned lanes) {
  const size_t off = (size_t)j * h->slot_bytes;
  if (off >= r->bytes) return;
  size_t len = mpixd_chunk_len(h, r->msg_bytes, j);
  if (off + len > r->bytes) len = r->bytes - off;
  mpixd_copy((unsigned char *)r->buf + off, mpixd_staging(h, h->local, r->peer, r->chan, (r->ticket + j) & (h->slots - 1)),
             len, lane, lanes);
}

/* Marks chunk ticket pos of (src, c) consumed (release: after the reads of
 * its data). */
MPIXD_HD void mpixd_mark_done(const MPIX_Device_comm *h, int src, uint32_t c, uint32_t pos) {
  mpixd_store_release_at(mpixd_slot_states(mpixd_rchan_of(h, src, c)) + (pos & (h->slots - 1)), MPIXD_S_DONE, true);
}

/* The same for k chunks from pos, after one fence (the block variants: the
 * fence by the thread that stores, after the barrier that ends every
 * lane's reads, releases all of them). */
MPIXD_HD void mpixd_mark_done_batch(const MPIX_Device_comm *h, int src, uint32_t c, uint32_t pos, uint32_t k) {
  uint32_t *states = mpixd_slot_states(mpixd_rchan_of(h, src, c));
  mpixd_fence_at(true);
  for (uint32_t j = 0; j < k; ++j) mpixd_store_relaxed(states + ((pos + j) & (h->slots - 1)), MPIXD_S_DONE);
}

/* Releases the consumed prefix of ring (src, c) and returns its credits.
 * Whoever marked a chunk done calls it; a thread that does not get the
 * lock leaves the work to the holder, which looks again after unlocking.
 * The fences make that hand-over safe: a marker stores DONE then loads
 * the lock, the holder stores the unlock then loads the state, so at
 * least one of them sees the other. */
MPIXD_HD void mpixd_ring_release(const MPIX_Device_comm *h, int src, uint32_t c) {
  mpixd_rchan *rc = mpixd_rchan_of(h, src, c);
  uint32_t *states = mpixd_slot_states(rc);
  const uint32_t mask = h->slots - 1;
  for (;;) {
    mpixd_fence_sc();
    if (!mpixd_try_lock(&rc->lock)) return;
    uint32_t lo = rc->lo;
    const uint32_t start = lo;
    /* On the GPU one fence serves the whole prefix (an acquire or release
     * costs a memory round trip each): it acquires the consumers' DONE
     * marks, which released their reads, and releases the FREE marks, all
     * before the sender sees the credit and reuses the slots. The host
     * build says the same with acquire loads and a release store, which
     * ThreadSanitizer understands (it does not model fences). */
#if defined(__CUDA_ARCH__)
    while (mpixd_load_relaxed(&states[lo & mask]) == MPIXD_S_DONE) {
#else
    while (__atomic_load_n(&states[lo & mask], __ATOMIC_ACQUIRE) == MPIXD_S_DONE) {
#endif
      mpixd_store_relaxed(&states[lo & mask], MPIXD_S_FREE);
      ++lo;
    }
    if (lo != start) {
      mpixd_store_relaxed(&rc->lo, lo);
      uint32_t *credit = &mpixd_schan_of(h, h->bases[src], h->rank, c)->credit;
#if defined(__CUDA_ARCH__)
      mpixd_fence_at(mpixd_near(h, src));
      mpixd_store_relaxed(credit, lo);
#else
      __atomic_store_n(credit, lo, __ATOMIC_RELEASE);
#endif
    }
    mpixd_unlock(&rc->lock);
    mpixd_fence_sc();
    if (mpixd_load_relaxed(&states[lo & mask]) != MPIXD_S_DONE) return;
  }
}

#endif
