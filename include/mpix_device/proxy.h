/*
 * mpix device point-to-point: the proxy path's device side (the host side
 * is mpix/device_proxy.cc). Not a public interface: names start with
 * mpixd_.
 */
#ifndef MPIX_DEVICE_PROXY_H
#define MPIX_DEVICE_PROXY_H

#include "proto.h"

/* Proxy path (papers/002: the GPU only writes a compact descriptor): per
 * rank, pq_slots descriptor slots and completion records in host memory
 * mapped for the GPU, like an NVMe queue pair. A device thread claims a free
 * slot in a bitmap (in any order: an operation that stays pending, a
 * receive waiting long for its message, holds its slot and no one else's),
 * writes the descriptor, then submits the slot through a ring in ticket
 * order (ticket + 1 and slot in one word, written last). The progress
 * thread (mpix/device_proxy.cc) takes submissions in order, at once, so the
 * ring never fills while slots are free; it starts each operation through
 * MPI on the communicator itself, so host MPI calls on the communicator
 * match device operations and vice versa, and writes the completion into
 * the slot's record (the ticket + 1 last); the device thread reads it and
 * frees the slot. Payloads up to MPIXD_INLINE bytes
 * travel in the descriptor / completion record, up to pq_inline bytes in the
 * entry's bounce buffer (mapped host memory; the device thread copies in or
 * out), so the host moves them as host memory, with no CUDA call per
 * message; both work with any buffer, local memory included. Longer ones are
 * moved from/to the buffer by MPI (mpix's GPU-aware point-to-point), so they
 * must be in memory the host can name (cudaMalloc, managed, mapped host
 * memory). */
typedef struct mpixd_pdesc {
  uint32_t seq;       /* ticket + 1 (the submission word is the one written last) */
  uint32_t op;        /* MPIXD_OP_* */
  int32_t peer, tag;
  uint64_t bytes;     /* send: message size; receive: buffer size */
  uint64_t buf;       /* the buffer; 0: payload in data (send) / completion record (receive)
                         when bytes <= MPIXD_INLINE, else in the entry's bounce buffer */
  unsigned char data[MPIXD_INLINE];
} mpixd_pdesc;

typedef struct mpixd_pcomp {
  uint32_t seq;       /* ticket + 1 once complete (written last, by the host) */
  int32_t status;     /* final MPIX_DEVICE_* status */
  uint64_t bytes;     /* receive: message size */
  uint32_t pad[4];
  unsigned char data[MPIXD_INLINE];
} mpixd_pcomp;

enum mpixd_op { MPIXD_OP_SEND = 1, MPIXD_OP_RECV = 2 };

/* ---- proxy path ---- */

MPIXD_HD unsigned char *mpixd_proxy_bounce(const MPIX_Device_comm *h, uint32_t slot) {
  return h->pq_bounce + (size_t)slot * h->pq_inline;
}

/* Copies n bytes out of a bounce buffer (16-byte aligned, in host memory,
 * readable in whole 16-byte words up to n rounded up). Eight words are
 * loaded before any is stored, so one GPU thread waits for one PCIe round
 * trip per 128 bytes rather than one per word (loads and stores of a plain
 * copy loop may alias, so they stay in order). */
MPIXD_HD void mpixd_copy_from_bounce(void *dst, const void *src, size_t n) {
  typedef struct __attribute__((aligned(16))) { uint64_t a, b; } w16;
  const w16 *s = (const w16 *)src;
  unsigned char *d = (unsigned char *)dst;
  const bool aligned = ((uintptr_t)d & 15) == 0;
  for (size_t off = 0; off < n; off += 128) {
    const size_t words = (n - off + 15) / 16 < 8 ? (n - off + 15) / 16 : 8;
    w16 t[8];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (size_t k = 0; k < 8; ++k)
      if (k < words) t[k] = s[off / 16 + k];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (size_t k = 0; k < 8; ++k) {
      if (k >= words) break;
      const size_t at = off + 16 * k, len = n - at < 16 ? n - at : 16;
      if (aligned && len == 16) {
        *(w16 *)(d + at) = t[k];
      } else {
        const unsigned char *b = (const unsigned char *)&t[k];
        for (size_t i = 0; i < len; ++i) d[at + i] = b[i];
      }
    }
  }
}

/* Claims a free slot of the proxy queue, searching from the word `hint`
 * picks (callers spread over the bitmap); false when every slot is in use. */
MPIXD_HD bool mpixd_proxy_claim(const MPIX_Device_comm *h, uint32_t hint, uint32_t *slot) {
  const uint32_t words = (h->pq_slots + 31) / 32;
  for (uint32_t i = 0; i < words; ++i) {
    const uint32_t w = (hint + i) % words;
    const uint32_t valid = h->pq_slots - w * 32 >= 32 ? 0xffffffffu : (1u << (h->pq_slots - w * 32)) - 1;
    uint32_t m = mpixd_load_relaxed(h->pq_pool + w);
    for (uint32_t free = ~m & valid; free != 0; free = ~m & valid) {
      const uint32_t bit = free & (0u - free);
      const uint32_t old = mpixd_cas_acquire_at(h->pq_pool + w, m, m | bit, true);
      if (old == m) {
        *slot = w * 32 + mpixd_ctz(bit);
        return true;
      }
      m = old;
    }
  }
  return false;
}

/* Claims a slot and submits the operation; AGAIN when every slot is taken. */
MPIXD_HD int mpixd_proxy_post(const MPIX_Device_comm *h, uint32_t op, void *buf, size_t bytes, int peer, int tag,
                              MPIX_Device_request *r) {
  uint32_t slot;
#if defined(__CUDA_ARCH__)
  /* Threads start their search at different words: the clock's low bits
   * (the request's address would force it out of registers). */
  const uint32_t hint = mpixd_mix32((uint32_t)clock());
#else
  const uint32_t hint = mpixd_mix32((uint32_t)(uintptr_t)r);
#endif
  if (!mpixd_proxy_claim(h, hint, &slot)) return MPIX_DEVICE_AGAIN;
  mpixd_pdesc *d = h->pq + slot;
  d->op = op;
  d->peer = peer;
  d->tag = tag;
  d->bytes = bytes;
  const bool inl = bytes <= MPIXD_INLINE;
  const bool bounce = !inl && bytes <= h->pq_inline;
  d->buf = inl || bounce ? 0 : (uint64_t)(uintptr_t)buf;
  if (op == MPIXD_OP_SEND && inl) mpixd_copy(d->data, buf, bytes, 0, 1);
  if (op == MPIXD_OP_SEND && bounce) mpixd_copy(mpixd_proxy_bounce(h, slot), buf, bytes, 0, 1);
  /* Held slots bound the submissions the host has not taken (each holds
   * one), so ticket t's place in the ring, last used by ticket t - slots,
   * has been taken: no credit to wait for. */
  const uint32_t t = mpixd_fetch_add(h->pq_tail, 1);
  d->seq = t + 1;
  /* Release, system scope: the descriptor (and bounce buffer) before the
   * submission the host acts on. */
  mpixd_store_release64(h->pq_sq + (t & (h->pq_slots - 1)), (uint64_t)(t + 1) << 32 | slot);
  r->peer = peer;
  r->tag = tag;
  r->buf = buf;
  r->bytes = bytes;
  r->msg_bytes = op == MPIXD_OP_SEND ? bytes : 0;
  r->ticket = t;
  r->chan = slot; /* a proxied request's slot */
  r->flags = op;
  r->status = MPIX_DEVICE_PENDING;
  r->state = MPIXD_PROXIED;
  return MPIX_DEVICE_SUCCESS;
}

MPIXD_HD int mpixd_proxy_test(const MPIX_Device_comm *h, MPIX_Device_request *r) {
  mpixd_pcomp *c = h->pc + r->chan;
  if (mpixd_load_acquire(&c->seq) != r->ticket + 1) return MPIX_DEVICE_PENDING;
  r->status = c->status;
  if (r->flags == MPIXD_OP_RECV) {
    r->msg_bytes = c->bytes;
    const size_t n = c->bytes < r->bytes ? (size_t)c->bytes : r->bytes;
    if (r->bytes <= MPIXD_INLINE) mpixd_copy(r->buf, c->data, n, 0, 1);
    else if (r->bytes <= h->pq_inline) mpixd_copy_from_bounce(r->buf, mpixd_proxy_bounce(h, r->chan), n);
  }
  /* Release: the record and bounce buffer are read before the slot's next
   * user (a thread of this GPU, which claims it with an acquire) writes. */
  mpixd_and_release_at(h->pq_pool + r->chan / 32, ~(1u << (r->chan % 32)), true);
  r->state = MPIXD_INACTIVE;
  return r->status;
}

#endif
