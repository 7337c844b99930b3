/*
 * mpix device point-to-point: medium messages (MPIXD_INLINE < bytes <=
 * mid_max), one hand-over each (issue 26). Part of proto.h.
 *
 * A staged message is published twice (its chunks by sequence words, its
 * entry by its key), each a release store: a system-scope fence each to
 * another GPU, and the receiver returns its ring slots through a lock and
 * two more fences. A medium message is instead written as flagged lines
 * (as NCCL's LL protocol does): every 16-byte line holds two 8-byte words
 * of {4 payload bytes, 4 flag bytes}, stored and loaded as single-copy
 * atomic 8-byte words, so a word whose flag is the expected one carries its
 * payload with it and no fence orders data before a flag. The lines go
 * into a medium ring of the receiver's (source, channel), slots of
 * MPIXD_MID_SLOT_BYTES; the message is announced in its table way or lane
 * cell by one 16-byte atomic {key with size code MPIXD_KEY_MID, ticket |
 * bytes << 32} (so only to peers with cells: mpixd_cells), in any order
 * with the lines: the receiver waits for each line's flag.
 *
 * Flags: a line of slot position p (ticket + j) carries p + 1 (never 0,
 * the flag of lines never written: see mpixd_mid_flag). A slot's earlier
 * lines carry an earlier position's flag, so they are never taken for new
 * ones (unless a line of a slot stays unwritten while its ring goes through
 * 2^32 tickets, every message of the slot shorter than it).
 *
 * Returning slots costs the receiver no lock, fence or atomic: it marks
 * each slot it emptied with its position + 1 (a word only it writes, in its
 * own memory), and the sender, when its ring looks full, reads those marks
 * in order and moves its own credit past the consecutive ones. The mark is
 * written after the receiver has every line of the slot in registers (its
 * value depends on them, and a block's lanes pass a barrier first), so
 * the sender's next lines into the slot cannot overtake those reads; the
 * receiver waits for every line of a message, even of a truncated receive,
 * so none of the sender's stores is still on its way when the slot is
 * reused.
 */
#ifndef MPIX_DEVICE_MID_H
#define MPIX_DEVICE_MID_H

#include <string.h>

#include "bytes.h"
#include "keys.h"
#include "layout.h"
#include "table.h"

/* The key's size code of a medium message (tiny ones 0 .. MPIXD_TINY,
 * entries MPIXD_KEY_ENTRY). */
#define MPIXD_KEY_MID 0xeull
#define MPIXD_MID_LINES (MPIXD_MID_SLOT_BYTES / 16u)

/* The flag of the lines of slot position pos, and the mark of the slot
 * once emptied: never 0 (memory never written). */
MPIXD_HD uint32_t mpixd_mid_flag(uint32_t pos) { return pos + 1 != 0 ? pos + 1 : 1; }

/* Whether a message of `bytes` to peer goes as a medium message. */
MPIXD_HD bool mpixd_mid(const MPIX_Device_comm *h, int peer, size_t bytes) {
  return bytes > MPIXD_INLINE && bytes <= h->mid_max && mpixd_cells(h, peer);
}

/* Lines (8 payload bytes each) and slots of a medium message. */
MPIXD_HD uint32_t mpixd_mid_lines(size_t bytes) { return (uint32_t)((bytes + 7) / 8); }
MPIXD_HD uint32_t mpixd_mid_nslots(size_t bytes) {
  return (mpixd_mid_lines(bytes) + MPIXD_MID_LINES - 1) / MPIXD_MID_LINES;
}

/* The slot marks of ring (src, c) in mailbox `base` (the receiver's). */
MPIXD_HD uint32_t *mpixd_mid_marks(const MPIX_Device_comm *h, char *base, int src, uint32_t c) {
  return (uint32_t *)(base + h->off_mrchan + ((uint64_t)src * h->channels + c) * h->mrchan_bytes);
}

/* Marks read at once by a sender that scans (one memory round trip for
 * a window of them). */
#define MPIXD_MID_SCAN 16u

/* How far the credit of ring (dst, c) can move from `credit` (at most to
 * `tail`): past the consecutive slots the receiver has marked emptied, all
 * of them, not only what the caller's claim needs: the credit found serves
 * the next sends too (a scan that stopped at the claim's need made every
 * send of a ping-pong scan: 8 KiB device-initiated 6.9 -> 8.2 us on two
 * H200s, 2026-11-30). The marks are loaded MPIXD_MID_SCAN at a time, all
 * before any is looked at, then one fence (an acquire pattern: the
 * receiver's reads of a slot come before this sender's next lines into
 * it). */
MPIXD_HD uint32_t mpixd_mid_scan(const MPIX_Device_comm *h, int dst, uint32_t c, uint32_t credit, uint32_t tail) {
  const uint32_t *marks = mpixd_mid_marks(h, h->bases[dst], h->rank, c);
  const bool near = mpixd_near(h, dst);
  const uint32_t mask = h->mid_slots - 1;
  uint32_t to = credit;
  for (;;) {
    uint32_t m[MPIXD_MID_SCAN];
MPIXD_UNROLL
    for (uint32_t k = 0; k < MPIXD_MID_SCAN; ++k) m[k] = mpixd_load_relaxed(marks + ((to + k) & mask));
    /* The prefix counted unrolled too (m indexed in a loop would live in
     * local memory, its loads waited for one by one). */
    uint32_t k = 0;
    bool on = true;
MPIXD_UNROLL
    for (uint32_t j = 0; j < MPIXD_MID_SCAN; ++j) {
      on = on && to + j != tail && m[j] == mpixd_mid_flag(to + j);
      k += on ? 1u : 0u;
    }
    to += k;
    if (k < MPIXD_MID_SCAN || to == tail) break;
  }
  if (to != credit) mpixd_fence_at(near);
  return to;
}

/* Claims n consecutive slots of the medium ring to (dst, c) if it has room
 * for all of them now: 0 and *ticket, or MPIX_DEVICE_AGAIN having claimed
 * nothing. Looks at the receiver's marks only when the ring looks full. */
MPIXD_HD int mpixd_mid_claim(const MPIX_Device_comm *h, int dst, uint32_t c, uint32_t n, uint32_t *ticket) {
  mpixd_schan *sc = mpixd_mid_schan_of(h, h->local, dst, c);
  for (;;) {
    /* Credit before tail: every credit value was written after the tail
     * passed it (see mpixd_claim_room). */
    uint32_t credit = mpixd_load_acquire_at(&sc->credit, true);
    const uint32_t tail = mpixd_load_relaxed(&sc->tail);
    /* A credit moved by another sender past the tail this one read. */
    if (mpixd_diff(tail, credit) < 0) continue;
    if ((uint64_t)(uint32_t)(tail - credit) + n > h->mid_slots) {
      /* Senders that scan together compute the same prefix; the credit
       * only grows. */
      const uint32_t to = mpixd_mid_scan(h, dst, c, credit, tail);
      if (to == credit) return MPIX_DEVICE_AGAIN;
      for (;;) {
        const uint32_t old = mpixd_cas(&sc->credit, credit, to);
        if (old == credit || mpixd_diff(old, to) >= 0) break;
        credit = old;
      }
      continue;
    }
    if (mpixd_cas(&sc->tail, tail, tail + n) == tail) {
      *ticket = tail;
      return MPIX_DEVICE_SUCCESS;
    }
  }
}

/* A line: two 8-byte words of {4 payload bytes, the flag above them},
 * each written and read as one aligned 8-byte access, volatile (relaxed at
 * system scope), as NCCL's LL lines. Strong .relaxed.gpu loads measured
 * one memory round trip per line of a thread's batch (one H100,
 * 2026-11-27: a thread's 512-byte receive 20.5 us); volatile ones 11.7 us
 * (one H200). Weak ld.global.cv loads and batches of 16 lines measured no
 * better (two H100s, 2026-11-28: 11.5-12.5 us with either, or both), nor
 * is the send side, which only stores, much faster (7.1-7.7 us): a thread
 * alone is slow on long medium messages (the block variants are not). No compiler
 * barrier: asm volatile keeps every access, and flags carry the ordering. */
MPIXD_HD void mpixd_mid_store_line(uint64_t *line, uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(line), "l"(a), "l"(b));
#else
  __atomic_store_n(line, a, __ATOMIC_RELAXED);
  __atomic_store_n(line + 1, b, __ATOMIC_RELAXED);
#endif
}

MPIXD_HD void mpixd_mid_load_line(const uint64_t *line, uint64_t *a, uint64_t *b) {
#if defined(__CUDA_ARCH__)
  uint64_t x, y;
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(x), "=l"(y) : "l"(line));
  *a = x;
  *b = y;
#else
  *a = __atomic_load_n(line, __ATOMIC_RELAXED);
  *b = __atomic_load_n(line + 1, __ATOMIC_RELAXED);
#endif
}

/* Payload word v as a line carries it: its two halves, each beside the
 * slot's flag (`flag` already shifted into the upper half). */
MPIXD_HD void mpixd_mid_put_word(uint64_t *line, uint64_t v, uint64_t flag) {
  mpixd_mid_store_line(line, (v & 0xffffffffull) | flag, (v >> 32) | flag);
}

/* The payload word of a line read as (a, b). */
MPIXD_HD uint64_t mpixd_mid_word(uint64_t a, uint64_t b) { return (a & 0xffffffffull) | b << 32; }

/* Word i of an 8-byte aligned buffer (the host build through memcpy: no
 * type punning). */
MPIXD_HD uint64_t mpixd_word_load(const unsigned char *p, uint32_t i) {
#if defined(__CUDA_ARCH__)
  return ((const uint64_t *)p)[i];
#else
  uint64_t v;
  memcpy(&v, p + 8 * (size_t)i, 8);
  return v;
#endif
}
MPIXD_HD void mpixd_word_store(unsigned char *p, uint32_t i, uint64_t v) {
#if defined(__CUDA_ARCH__)
  ((uint64_t *)p)[i] = v;
#else
  memcpy(p + 8 * (size_t)i, &v, 8);
#endif
}

/* The 8 payload bytes of line i of a message from buf (fewer at its end;
 * the rest zero), byte by byte: the lines that are not a whole aligned
 * word (mpixd_word_load takes those). */
MPIXD_HD uint64_t mpixd_mid_payload(const unsigned char *buf, size_t bytes, uint32_t i) {
  const size_t off = (size_t)i * 8;
  uint64_t v = 0;
  const size_t n = bytes - off < 8 ? bytes - off : 8;
  for (size_t k = 0; k < n; ++k) v |= (uint64_t)buf[off + k] << (8 * k);
  return v;
}

MPIXD_HD void mpixd_mid_unpayload(unsigned char *buf, size_t bytes, uint32_t i, uint64_t v) {
  const size_t off = (size_t)i * 8;
  if (off >= bytes) return;
  const size_t n = bytes - off < 8 ? bytes - off : 8;
  for (size_t k = 0; k < n; ++k) buf[off + k] = (unsigned char)(v >> (8 * k));
}

/* Lines a thread has in flight at once: the loads of a batch issue
 * together (each line's spin would otherwise wait a memory round trip
 * before the next line's load). */
#define MPIXD_MID_BATCH 8u

/* Line i of a message from ticket t in a ring whose slot 0 is at `ring`. */
MPIXD_HD uint64_t *mpixd_mid_line(unsigned char *ring, uint32_t mask, uint32_t t, uint32_t i) {
  return (uint64_t *)(ring + ((uint64_t)((t + i / MPIXD_MID_LINES) & mask) * MPIXD_MID_SLOT_BYTES +
                              (i % MPIXD_MID_LINES) * 16u));
}

/* Writes the lines of a medium message (tickets from t) into dst's ring c;
 * `lanes` threads share them. No fence after: the receiver checks flags.
 * Everything the loop needs is read before it (the compiler reloads
 * fields around the line stores otherwise). */
MPIXD_HD_LOOP void mpixd_mid_put(const MPIX_Device_comm *h, int dst, uint32_t c, uint32_t t, const void *buf,
                                 size_t bytes, unsigned lane, unsigned lanes) {
  const uint32_t n = mpixd_mid_lines(bytes);
  unsigned char *const ring = mpixd_mid_slot(h, h->bases[dst], h->rank, c, 0);
  const uint32_t mask = h->mid_slots - 1;
  const unsigned char *src = (const unsigned char *)buf;
  /* Whole 8-byte words of an aligned buffer are loaded as such, without a
   * branch per line; the rest (the tail, or any unaligned buffer) by
   * mpixd_mid_payload. */
  const uint32_t words = ((uintptr_t)src & 7) == 0 ? (uint32_t)(bytes / 8) : 0;
  for (uint32_t i0 = lane; i0 < n; i0 += MPIXD_MID_BATCH * lanes) {
    uint64_t v[MPIXD_MID_BATCH];
    /* Unrolled, so that v stays in registers (indexed in a loop it would
     * live in local memory, each load waited for before the next). */
MPIXD_UNROLL
    for (uint32_t k = 0; k < MPIXD_MID_BATCH; ++k) {
      const uint32_t i = i0 + k * lanes;
      v[k] = i < words ? mpixd_word_load(src, i) : i < n ? mpixd_mid_payload(src, bytes, i) : 0;
    }
MPIXD_UNROLL
    for (uint32_t k = 0; k < MPIXD_MID_BATCH; ++k) {
      const uint32_t i = i0 + k * lanes;
      if (i >= n) continue;
      const uint64_t flag = (uint64_t)mpixd_mid_flag(t + i / MPIXD_MID_LINES) << 32;
      mpixd_mid_put_word(mpixd_mid_line(ring, mask, t, i), v[k], flag);
    }
  }
}

/* One thread's lines (MPIX_Send and the other one-thread calls): slot by
 * slot from a line pointer, MPIXD_MID_BATCH1 lines at a time with no lane
 * arithmetic per line. Measured, one thread was instruction-bound in
 * mpixd_mid_put/get (built for any lane count, ~98 instructions per line
 * for both, at ~6 cycles each: bench/RESULTS.md, fifteenth session). A
 * batch's loads all issue before its first store, so a batch costs one
 * memory round trip; the last batch of a slot is predicated, not walked
 * line by line (a round trip each). The lines are those mpixd_mid_put
 * writes: either side may be a block. 16 lines a batch measured against 8
 * (a round trip more per 128 bytes) and 32 (its registers spilled: 128 B
 * 3x slower), two H200s, sixteenth session; -DMPIXD_MID_BATCH1=N builds
 * the others. */
#ifndef MPIXD_MID_BATCH1
#define MPIXD_MID_BATCH1 16u
#endif
MPIXD_HD_LOOP void mpixd_mid_put1(const MPIX_Device_comm *h, int dst, uint32_t c, uint32_t t, const void *buf,
                                  size_t bytes) {
  const uint32_t n = mpixd_mid_lines(bytes);
  unsigned char *const ring = mpixd_mid_slot(h, h->bases[dst], h->rank, c, 0);
  const uint32_t mask = h->mid_slots - 1;
  const unsigned char *src = (const unsigned char *)buf;
  const uint32_t words = ((uintptr_t)src & 7) == 0 ? (uint32_t)(bytes / 8) : 0;
  for (uint32_t s0 = 0; s0 < n; s0 += MPIXD_MID_LINES) {
    const uint32_t pos = t + s0 / MPIXD_MID_LINES;
    uint64_t *line = mpixd_mid_line(ring, mask, t, s0);
    const uint64_t flag = (uint64_t)mpixd_mid_flag(pos) << 32;
    const uint32_t end = n < s0 + MPIXD_MID_LINES ? n : s0 + MPIXD_MID_LINES;
    for (uint32_t i = s0; i < end; i += MPIXD_MID_BATCH1, line += 2 * MPIXD_MID_BATCH1) {
      uint64_t v[MPIXD_MID_BATCH1];
      if (i + MPIXD_MID_BATCH1 <= end && i + MPIXD_MID_BATCH1 <= words) {
MPIXD_UNROLL
        for (uint32_t k = 0; k < MPIXD_MID_BATCH1; ++k) v[k] = mpixd_word_load(src, i + k);
MPIXD_UNROLL
        for (uint32_t k = 0; k < MPIXD_MID_BATCH1; ++k)
          mpixd_mid_put_word(line + 2 * k, v[k], flag);
        continue;
      }
MPIXD_UNROLL
      for (uint32_t k = 0; k < MPIXD_MID_BATCH1; ++k)
        v[k] = i + k < words ? mpixd_word_load(src, i + k) : i + k < end ? mpixd_mid_payload(src, bytes, i + k) : 0;
MPIXD_UNROLL
      for (uint32_t k = 0; k < MPIXD_MID_BATCH1; ++k)
        if (i + k < end) mpixd_mid_put_word(line + 2 * k, v[k], flag);
    }
  }
}

/* Announces a medium message in way (or lane cell) `slot` of dst's table:
 * its key, ticket and size in one 16-byte atomic. */
MPIXD_HD void mpixd_mid_post(const MPIX_Device_comm *h, int dst, char *base, uint32_t slot, int tag, uint32_t seq,
                             uint32_t bytes, uint32_t ticket) {
  mpixd_cell_put(mpixd_cell(h, base, h->rank, slot), mpixd_mkey(tag, seq) | MPIXD_KEY_MID,
                 (uint64_t)ticket | (uint64_t)bytes << 32, mpixd_near(h, dst));
}

/* Copies the medium message bound to r out of its lines (lanes
 * cooperating; truncated to the buffer), waiting for every line of it.
 * Returns 0 computed from every word read (see mpixd_zero_of), for the
 * slot marks. */
MPIXD_HD_LOOP uint32_t mpixd_mid_get(const MPIX_Device_comm *h, const MPIX_Device_request *r, unsigned lane,
                                     unsigned lanes) {
  const uint32_t n = mpixd_mid_lines(r->msg_bytes);
  const size_t keep = r->msg_bytes < r->bytes ? r->msg_bytes : r->bytes;
  unsigned char *const ring = mpixd_mid_slot(h, h->local, r->peer, r->chan, 0);
  const uint32_t mask = h->mid_slots - 1, t = r->ticket;
  unsigned char *const out = (unsigned char *)r->buf;
  const uint32_t words = ((uintptr_t)out & 7) == 0 ? (uint32_t)(keep / 8) : 0;
  uint64_t dep = 0;
  for (uint32_t i0 = lane; i0 < n; i0 += MPIXD_MID_BATCH * lanes) {
    uint64_t a[MPIXD_MID_BATCH], b[MPIXD_MID_BATCH];
MPIXD_UNROLL
    for (uint32_t k = 0; k < MPIXD_MID_BATCH; ++k) {
      const uint32_t i = i0 + k * lanes;
      a[k] = b[k] = 0;
      if (i < n) mpixd_mid_load_line(mpixd_mid_line(ring, mask, t, i), &a[k], &b[k]);
    }
MPIXD_UNROLL
    for (uint32_t k = 0; k < MPIXD_MID_BATCH; ++k) {
      const uint32_t i = i0 + k * lanes;
      if (i >= n) continue;
      const uint32_t flag = mpixd_mid_flag(t + i / MPIXD_MID_LINES);
      while ((uint32_t)(a[k] >> 32) != flag || (uint32_t)(b[k] >> 32) != flag) {
#if !defined(__CUDA_ARCH__)
        sched_yield();
#endif
        mpixd_mid_load_line(mpixd_mid_line(ring, mask, t, i), &a[k], &b[k]);
      }
      dep |= a[k] ^ b[k];
      const uint64_t v = mpixd_mid_word(a[k], b[k]);
      if (i < words) mpixd_word_store(out, i, v);
      else mpixd_mid_unpayload(out, keep, i, v);
    }
  }
  return mpixd_zero_of(dep >> 32);
}

/* One thread's copy out of the lines (see mpixd_mid_put1): a batch's
 * loads issue together; a batch whose flags are all there is taken at
 * once, otherwise its missing lines are waited for one by one. Returns
 * what mpixd_mid_get returns. */
MPIXD_HD_LOOP uint32_t mpixd_mid_get1(const MPIX_Device_comm *h, const MPIX_Device_request *r) {
  const uint32_t n = mpixd_mid_lines(r->msg_bytes);
  const size_t keep = r->msg_bytes < r->bytes ? r->msg_bytes : r->bytes;
  unsigned char *const ring = mpixd_mid_slot(h, h->local, r->peer, r->chan, 0);
  const uint32_t mask = h->mid_slots - 1;
  unsigned char *const out = (unsigned char *)r->buf;
  const uint32_t words = ((uintptr_t)out & 7) == 0 ? (uint32_t)(keep / 8) : 0;
  uint64_t dep = 0;
  for (uint32_t s0 = 0; s0 < n; s0 += MPIXD_MID_LINES) {
    const uint32_t pos = r->ticket + s0 / MPIXD_MID_LINES;
    const uint64_t *line = mpixd_mid_line(ring, mask, r->ticket, s0);
    const uint32_t flag = mpixd_mid_flag(pos);
    const uint32_t end = n < s0 + MPIXD_MID_LINES ? n : s0 + MPIXD_MID_LINES;
    for (uint32_t i = s0; i < end; i += MPIXD_MID_BATCH1, line += 2 * MPIXD_MID_BATCH1) {
      uint64_t a[MPIXD_MID_BATCH1], b[MPIXD_MID_BATCH1];
      bool there = true;
MPIXD_UNROLL
      for (uint32_t k = 0; k < MPIXD_MID_BATCH1; ++k) {
        a[k] = b[k] = (uint64_t)flag << 32;
        if (i + k < end) mpixd_mid_load_line(line + 2 * k, &a[k], &b[k]);
      }
MPIXD_UNROLL
      for (uint32_t k = 0; k < MPIXD_MID_BATCH1; ++k)
        there = there && (uint32_t)(a[k] >> 32) == flag && (uint32_t)(b[k] >> 32) == flag;
      if (!there) {
MPIXD_UNROLL
        for (uint32_t k = 0; k < MPIXD_MID_BATCH1; ++k) {
          while ((uint32_t)(a[k] >> 32) != flag || (uint32_t)(b[k] >> 32) != flag) {
#if !defined(__CUDA_ARCH__)
            sched_yield();
#endif
            mpixd_mid_load_line(line + 2 * k, &a[k], &b[k]);
          }
        }
      }
      if (i + MPIXD_MID_BATCH1 <= end && i + MPIXD_MID_BATCH1 <= words) {
MPIXD_UNROLL
        for (uint32_t k = 0; k < MPIXD_MID_BATCH1; ++k) {
          dep |= a[k] ^ b[k];
          mpixd_word_store(out, i + k, mpixd_mid_word(a[k], b[k]));
        }
        continue;
      }
MPIXD_UNROLL
      for (uint32_t k = 0; k < MPIXD_MID_BATCH1; ++k) {
        if (i + k >= end) continue;
        dep |= a[k] ^ b[k];
        const uint64_t v = mpixd_mid_word(a[k], b[k]);
        if (i + k < words) mpixd_word_store(out, i + k, v);
        else mpixd_mid_unpayload(out, keep, i + k, v);
      }
    }
  }
  return mpixd_zero_of(dep >> 32);
}

/* Marks the slots of the medium message bound to r emptied (once every
 * lane's mpixd_mid_get is done: `dep` from it, or after a barrier). */
MPIXD_HD void mpixd_mid_release(const MPIX_Device_comm *h, const MPIX_Device_request *r, uint32_t dep) {
  uint32_t *marks = mpixd_mid_marks(h, h->local, r->peer, r->chan);
  for (uint32_t j = 0; j < r->nslots; ++j) {
    const uint32_t pos = r->ticket + j;
#if defined(__CUDA_ARCH__)
    mpixd_store_relaxed_at(marks + (pos & (h->mid_slots - 1)), mpixd_mid_flag(pos) + dep, mpixd_near(h, r->peer));
#else
    (void)dep;
    __atomic_store_n(marks + (pos & (h->mid_slots - 1)), mpixd_mid_flag(pos), __ATOMIC_RELEASE);
#endif
  }
}

/* Binds receive r to the medium message announced by `key` and `payload`
 * (ticket | bytes << 32). */
MPIXD_HD void mpixd_mid_bind(const MPIX_Device_comm *h, MPIX_Device_request *r, uint64_t payload) {
  r->ticket = (uint32_t)payload;
  r->msg_bytes = (uint32_t)(payload >> 32);
  r->chan = mpixd_channel(h, r->tag);
  r->nslots = mpixd_mid_nslots(r->msg_bytes);
  r->next = 0;
  r->flags |= MPIXD_R_MID;
  r->state = MPIXD_RECV_BOUND;
}

#endif
