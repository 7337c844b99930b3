/*
 * mpix device point-to-point: pulled messages, a single copy for large
 * blocking sends of GPU-run streams. A ring moves every byte twice (into
 * the receiver's ring by the sender's SMs, out of it by the receiver's);
 * a pulled message moves once: the sender's host has exported the buffer's
 * allocation by CUDA IPC and the receiver's host has mapped it and written
 * the address into its own mailbox (mpix/stream_pull.cc), so the sender
 * only posts a table entry naming (export, offset) and waits; the receiver
 * copies straight out of the sender's buffer and signals the number the
 * entry carried on the sender's done word. The send is then complete, as a
 * rendezvous send would be. A sender has MPIXD_PULL_DONE done words per
 * receiver, picked by the number's low bits: its host numbers the pulled
 * sends so that no two in flight share a word. Part of proto.h.
 */
#ifndef MPIX_DEVICE_PULL_H
#define MPIX_DEVICE_PULL_H

#include "lanes.h"

/* The entry of a pulled message: channel MPIXD_CHAN_PULL, ticket the
 * export, and in the second 16 bytes the offset within it and the number
 * to signal. */
MPIXD_HD void mpixd_post_pull(const MPIX_Device_comm *h, char *base, uint32_t slot, int tag, uint32_t seq,
                              uint32_t bytes, uint32_t export_id, uint64_t offset, uint32_t gen) {
  mpixd_ment *e = mpixd_entry(h, base, h->rank, slot);
  mpixd_w16 head, pull;
  head.a = (uint64_t)bytes | (uint64_t)MPIXD_CHAN_PULL << 32;
  head.b = (uint64_t)export_id;
  pull.a = offset;
  pull.b = gen;
  ((mpixd_w16 *)e)[0] = head;
  ((mpixd_w16 *)e)[1] = pull;
  /* System scope even for a peer on this GPU: the payload is the buffer,
   * which earlier kernels of the stream wrote. */
  mpixd_store_release64_at(mpixd_cell(h, base, h->rank, slot), mpixd_mkey(tag, seq) | MPIXD_KEY_ENTRY, false);
}

/* Binds a receive to the pulled message whose entry read `export_id` and
 * `pull` (offset, number); the source address is what this rank's host
 * mapped for that export (written before the sender could name it). */
MPIXD_HD void mpixd_pull_bind(const MPIX_Device_comm *h, MPIX_Device_request *r, uint32_t export_id,
                              mpixd_w16 pull) {
  const volatile uint64_t *imports = mpixd_pull_imports(h, r->peer);
  const uint64_t src = imports[export_id & (MPIXD_PULL_EXPORTS - 1)] + pull.a;
  r->ticket = (uint32_t)src;
  r->nslots = (uint32_t)(src >> 32);
  r->next = (uint32_t)pull.b;
  r->flags |= MPIXD_R_PULL;
  r->state = MPIXD_RECV_BOUND;
}

MPIXD_HD const void *mpixd_pull_src(const MPIX_Device_request *r) {
  return (const void *)((uint64_t)r->ticket | (uint64_t)r->nslots << 32);
}

/* Bytes a pulled receive copies: the message, or the buffer's worth of it. */
MPIXD_HD size_t mpixd_pull_len(const MPIX_Device_request *r) {
  return r->msg_bytes < r->bytes ? r->msg_bytes : r->bytes;
}

/* Lane `lane` of `lanes` copies its share. */
MPIXD_HD void mpixd_pull_copy(const MPIX_Device_request *r, unsigned lane, unsigned lanes) {
  mpixd_copy(r->buf, mpixd_pull_src(r), mpixd_pull_len(r), lane, lanes);
}

/* Once every copying lane is done (the caller's barrier): the sender may
 * reuse its buffer. A system-scope release: the sender's GPU may be
 * another, and the copies' reads must be done before it writes again. */
MPIXD_HD void mpixd_pull_signal(const MPIX_Device_comm *h, const MPIX_Device_request *r) {
  mpixd_store_release_at(mpixd_pull_done(h, h->bases[r->peer], h->rank, r->next), r->next, false);
}

/* The sender: whether its receiver `dst` has signalled `gen`. */
MPIXD_HD bool mpixd_pull_signalled(const MPIX_Device_comm *h, int dst, uint32_t gen) {
  return mpixd_load_acquire_at(mpixd_pull_done(h, h->local, dst, gen), false) == gen;
}

/* A nonblocking pulled send: fills r (arguments checked by the caller). */
MPIXD_HD void mpixd_pull_send_init(MPIX_Device_request *r, const void *buf, size_t bytes, int peer, int tag,
                                   uint32_t seq, uint32_t export_id, uint64_t offset, uint32_t gen) {
  r->peer = peer;
  r->tag = tag;
  r->buf = (void *)buf;
  r->bytes = bytes;
  r->msg_bytes = bytes;
  r->chan = export_id;
  r->ticket = (uint32_t)offset;
  r->nslots = (uint32_t)(offset >> 32);
  r->next = gen;
  r->seq = seq;
  r->flags = MPIXD_R_PULL;
  r->status = MPIX_DEVICE_PENDING;
  r->state = MPIXD_SEND;
}

/* Moves it on without waiting: its entry once a way is free, then done
 * once the receiver has signalled. */
MPIXD_HD int mpixd_pull_send_progress(const MPIX_Device_comm *h, MPIX_Device_request *r) {
  if (!(r->flags & MPIXD_R_POSTED)) {
    uint32_t slot;
    if (!mpixd_claim_slot(h, r->peer, r->tag, r->seq, &slot)) return MPIX_DEVICE_PENDING;
    mpixd_post_pull(h, h->bases[r->peer], slot, r->tag, r->seq, (uint32_t)r->bytes, r->chan,
                    (uint64_t)r->ticket | (uint64_t)r->nslots << 32, r->next);
    r->flags |= MPIXD_R_POSTED;
  }
  if (!mpixd_pull_signalled(h, r->peer, r->next)) return MPIX_DEVICE_PENDING;
  r->state = MPIXD_DONE;
  r->status = MPIX_DEVICE_SUCCESS;
  return MPIX_DEVICE_SUCCESS;
}

#endif
