/*
 * mpix device point-to-point: the calls for one thread, on either path
 * (ops.cuh adds warp-aggregated numbering and the _block variants, built on
 * the same pieces). Host tests call these directly. Not a public
 * interface: names start with mpixd_.
 */
#ifndef MPIX_DEVICE_CALLS_H
#define MPIX_DEVICE_CALLS_H

#include "proto.h"
#include "proxy.h"

/* ---- the calls, for one thread (ops.cuh adds warp-aggregated numbering
 * and the _block variants, built on the same pieces) ---- */

/* A complete receive's status: truncated when the message was longer than
 * its buffer. */
MPIXD_HD int mpixd_recv_status(const MPIX_Device_request *r) {
  return r->msg_bytes > r->bytes ? MPIX_DEVICE_ERR_TRUNCATE : MPIX_DEVICE_SUCCESS;
}

/* What a medium send takes before its lines and announcement go out, as
 * far as it can without waiting: its ring slots (once), then a table way
 * or lane cell. True with *slot when it has both. */
MPIXD_HD bool mpixd_mid_send_ready(const MPIX_Device_comm *h, MPIX_Device_request *r, uint32_t *slot) {
  if (!(r->flags & MPIXD_R_TICKETS)) {
    if (mpixd_mid_claim(h, r->peer, r->chan, r->nslots, &r->ticket) != MPIX_DEVICE_SUCCESS) return false;
    r->flags |= MPIXD_R_TICKETS;
  }
  return mpixd_claim_slot(h, r->peer, r->tag, r->seq, slot);
}

/* Moves a send on as far as it can without waiting: ring tickets (a
 * message that fits the ring claims all at once, when there is room; a
 * longer one claims them up front and streams), the table entry, then the
 * chunks the ring has room for. */
MPIXD_HD int mpixd_send_progress(const MPIX_Device_comm *h, MPIX_Device_request *r) {
  if (r->flags & MPIXD_R_PULL) return mpixd_pull_send_progress(h, r);
  if (r->flags & MPIXD_R_MID) {
    /* Medium: its slots, its way, then lines and announcement at once. */
    uint32_t slot;
    if (!mpixd_mid_send_ready(h, r, &slot)) return MPIX_DEVICE_PENDING;
    mpixd_mid_put1(h, r->peer, r->chan, r->ticket, r->buf, r->bytes);
    mpixd_mid_post(h, r->peer, h->bases[r->peer], slot, r->tag, r->seq, (uint32_t)r->bytes, r->ticket);
    r->flags |= MPIXD_R_POSTED;
    r->state = MPIXD_DONE;
    r->status = MPIX_DEVICE_SUCCESS;
    return MPIX_DEVICE_SUCCESS;
  }
  if (r->nslots > 0 && !(r->flags & MPIXD_R_TICKETS)) {
    mpixd_schan *sc = mpixd_schan_of(h, h->local, r->peer, r->chan);
    if (r->nslots <= h->slots) {
      if (mpixd_claim_room(h, sc, r->nslots, &r->ticket, mpixd_near(h, r->peer)) != MPIX_DEVICE_SUCCESS)
        return MPIX_DEVICE_PENDING;
    } else {
      r->ticket = mpixd_fetch_add(&sc->tail, r->nslots);
    }
    r->flags |= MPIXD_R_TICKETS;
  }
  if (!(r->flags & MPIXD_R_POSTED)) {
    uint32_t slot;
    if (!mpixd_claim_slot(h, r->peer, r->tag, r->seq, &slot)) return MPIX_DEVICE_PENDING;
    char *base = h->bases[r->peer];
    if (r->nslots == 0) mpixd_post_small(h, r->peer, base, slot, r->tag, r->seq, (uint32_t)r->bytes, r->buf);
    else
      mpixd_post_entry(h, r->peer, base, slot, r->tag, r->seq, (uint32_t)r->bytes, r->chan, r->ticket, r->nslots,
                       r->buf);
    r->flags |= MPIXD_R_POSTED;
  }
  if (r->next < r->nslots) {
    mpixd_schan *sc = mpixd_schan_of(h, h->local, r->peer, r->chan);
    for (uint32_t k = mpixd_room(h, sc, r->ticket + r->next, r->nslots - r->next, mpixd_near(h, r->peer)); k > 0;
         --k) {
      mpixd_put_chunk(h, r->peer, r->chan, r->ticket, r->next, r->buf, r->bytes, 0, 1);
      mpixd_publish_chunk(h, r->peer, r->chan, r->ticket + r->next);
      ++r->next;
    }
    if (r->next < r->nslots) return MPIX_DEVICE_PENDING;
  }
  r->state = MPIXD_DONE;
  r->status = MPIX_DEVICE_SUCCESS;
  return MPIX_DEVICE_SUCCESS;
}

/* Fills r for a send whose number within its key is seq. */
MPIXD_HD void mpixd_send_init(const MPIX_Device_comm *h, MPIX_Device_request *r, const void *buf, size_t bytes,
                              int peer, int tag, uint32_t seq) {
  r->peer = peer;
  r->tag = tag;
  r->buf = (void *)buf;
  r->bytes = bytes;
  r->msg_bytes = bytes;
  r->chan = mpixd_channel(h, tag);
  const bool mid = mpixd_mid(h, peer, bytes);
  r->nslots = mid ? mpixd_mid_nslots(bytes) : mpixd_nslots(h, bytes);
  r->ticket = 0;
  r->next = 0;
  r->seq = seq;
  r->flags = mid ? MPIXD_R_MID : 0;
  r->status = MPIX_DEVICE_PENDING;
  r->state = MPIXD_SEND;
}

/* Fills r for a send whose number within its key is seq and moves it on. */
MPIXD_HD void mpixd_send_start(const MPIX_Device_comm *h, MPIX_Device_request *r, const void *buf, size_t bytes,
                               int peer, int tag, uint32_t seq) {
  mpixd_send_init(h, r, buf, bytes, peer, tag, seq);
  mpixd_send_progress(h, r);
}


/* One thread's MPIX_Isend: SUCCESS with the request active. A message the
 * table and ring have room for is written before the call returns (then
 * the request is already complete); otherwise it goes out as room comes,
 * while its owner tests the request. MPIX_Isend (ops.cuh) is this call
 * with `warp` (mpixd_take_seq_one): the one place its arguments are
 * checked. */
MPIXD_HD int mpixd_isend_ex(const MPIX_Device_comm *h, const void *buf, size_t bytes, int peer, int tag,
                            MPIX_Device_request *r, bool warp) {
  const int rc = mpixd_check(h, buf, bytes, peer, tag, r);
  if (rc != MPIX_DEVICE_SUCCESS) return rc;
  if (h->path == MPIXD_PATH_PROXY) return mpixd_proxy_post(h, MPIXD_OP_SEND, (void *)buf, bytes, peer, tag, r);
  uint32_t seq;
  const int st = mpixd_take_seq_one(h, true, peer, tag, warp, &seq);
  if (st != MPIX_DEVICE_SUCCESS) return st;
  mpixd_send_start(h, r, buf, bytes, peer, tag, seq);
  return MPIX_DEVICE_SUCCESS;
}

MPIXD_HD int mpixd_isend(const MPIX_Device_comm *h, const void *buf, size_t bytes, int peer, int tag,
                         MPIX_Device_request *r) {
  return mpixd_isend_ex(h, buf, bytes, peer, tag, r, false);
}

MPIXD_HD void mpixd_recv_start(MPIX_Device_request *r, void *buf, size_t bytes, int peer, int tag, uint32_t seq) {
  r->peer = peer;
  r->tag = tag;
  r->buf = buf;
  r->bytes = bytes;
  r->msg_bytes = 0;
  r->seq = seq;
  r->next = 0;
  r->nslots = 0;
  r->flags = 0;
  r->status = MPIX_DEVICE_PENDING;
  r->state = MPIXD_RECV_WAIT;
}

/* One thread's MPIX_Irecv: SUCCESS with the request active (the receive
 * takes its number within its key now, so MPI's order among receives of a
 * key is the order of these calls). MPIX_Irecv (ops.cuh) is this call
 * with `warp`, as for mpixd_isend_ex. */
MPIXD_HD int mpixd_irecv_ex(const MPIX_Device_comm *h, void *buf, size_t bytes, int peer, int tag,
                            MPIX_Device_request *r, bool warp) {
  const int rc = mpixd_check(h, buf, bytes, peer, tag, r);
  if (rc != MPIX_DEVICE_SUCCESS) return rc;
  if (h->path == MPIXD_PATH_PROXY) return mpixd_proxy_post(h, MPIXD_OP_RECV, buf, bytes, peer, tag, r);
  uint32_t seq;
  const int st = mpixd_take_seq_one(h, false, peer, tag, warp, &seq);
  if (st != MPIX_DEVICE_SUCCESS) return st;
  mpixd_recv_start(r, buf, bytes, peer, tag, seq);
  return MPIX_DEVICE_SUCCESS;
}

MPIXD_HD int mpixd_irecv(const MPIX_Device_comm *h, void *buf, size_t bytes, int peer, int tag,
                         MPIX_Device_request *r) {
  return mpixd_irecv_ex(h, buf, bytes, peer, tag, r, false);
}

/* A way a receive took and left for later to free (mpixd_recv_take with
 * `defer`): freeing it is a remote atomic, which a caller may keep off its
 * critical path. */
#define MPIXD_DEFER_TINY 0x80000000u
MPIXD_HD void mpixd_free_deferred(const MPIX_Device_comm *h, int peer, uint32_t deferred) {
  mpixd_free_way(h, peer, h->bases[peer], deferred & ~MPIXD_DEFER_TINY, (deferred & MPIXD_DEFER_TINY) != 0);
}

/* Takes the message a waiting receive found at `slot` (a table way or a
 * lane cell) of its source's messages, whose key was `key` and, in a lane
 * cell, whose payload word was `payload` (mpixd_find_slot): a tiny or
 * inline one completes the receive, a staged one binds it to its chunks.
 * Then frees the way (with `defer`: leaves that to
 * mpixd_free_deferred(*defer)) or opens the lane cell for its next message
 * (at once: a store, nothing to keep off the path). */
MPIXD_HD void mpixd_recv_take_ex(const MPIX_Device_comm *h, MPIX_Device_request *r, int32_t slot, uint64_t key,
                                 uint64_t payload, char *src_base, uint32_t *defer) {
  const uint32_t s = (uint32_t)slot;
  const bool lane = (s & MPIXD_SLOT_LANE) != 0;
  uint64_t *cell = mpixd_cell(h, h->local, r->peer, s);
  const bool near = mpixd_near(h, r->peer);
  if ((key & MPIXD_KEY_SIZE) == MPIXD_KEY_MID) {
    /* Its ticket and size came with the key (a lane cell's load) or come
     * with the take (a table way's exchange); the lines are waited for
     * by whoever copies them out. */
    if (lane) {
      mpixd_lane_pass(h, r->peer, src_base, r->tag, r->seq, mpixd_zero_of(key) | mpixd_zero_of(payload));
    } else {
      uint64_t taken = 0;
      payload = mpixd_cell_take(cell, near, &taken);
      if (defer) *defer = s | MPIXD_DEFER_TINY;
      else mpixd_free_tiny_way(h, r->peer, src_base, s, taken ^ key);
    }
    mpixd_mid_bind(h, r, payload);
    return;
  }
  /* The way is freed before the payload is stored into the user's buffer:
   * freeing it is a release, which waits for this thread's earlier stores,
   * and the user's buffer need not be among them (its payload sits in
   * registers by then). */
  if ((key & MPIXD_KEY_SIZE) != MPIXD_KEY_ENTRY) {
    mpixd_w16 w[2];
    w[0].b = w[1].a = w[1].b = 0;
    r->msg_bytes = key & MPIXD_KEY_SIZE;
    if (lane) {
      /* Read with its key in one access; the cell stays as it is (its
       * next key is this one plus MPIXD_LANE, never taken for it). */
      w[0].a = payload;
      mpixd_lane_pass(h, r->peer, src_base, r->tag, r->seq, mpixd_zero_of(key));
    } else {
      uint64_t taken = 0;
      w[0].a = mpixd_cell_take(cell, near, &taken);
      if (defer) *defer = s | MPIXD_DEFER_TINY;
      else mpixd_free_tiny_way(h, r->peer, src_base, s, taken ^ key);
    }
    if (r->msg_bytes > 0 && r->bytes > 0) mpixd_inline_store(r->buf, w, r->msg_bytes < r->bytes ? r->msg_bytes : r->bytes);
    r->state = MPIXD_DONE;
    r->status = mpixd_recv_status(r);
    return;
  }
  /* The acquire orders the entry's reads after its key. */
  (void)mpixd_load_acquire64_at(cell, near);
  const mpixd_ment *e = mpixd_entry(h, h->local, r->peer, s);
  const mpixd_w16 head = *(const mpixd_w16 *)e;
  r->msg_bytes = (uint32_t)head.a;
  /* A pulled message's export, offset and number are read before the way
   * is freed (the sender may reuse it at once). */
  const bool pulled = (uint32_t)(head.a >> 32) == MPIXD_CHAN_PULL;
  mpixd_w16 pull;
  pull.a = pull.b = 0;
  if (pulled) pull = ((const mpixd_w16 *)e)[1];
  mpixd_w16 w[2];
  if (pulled) {
    w[0].a = w[0].b = w[1].a = w[1].b = 0;
  } else if (r->msg_bytes <= MPIXD_INLINE) {
    w[0] = ((const mpixd_w16 *)e->data)[0];
    w[1] = ((const mpixd_w16 *)e->data)[1];
  } else {
    r->chan = (uint32_t)(head.a >> 32);
    r->ticket = (uint32_t)head.b;
    r->nslots = (uint32_t)(head.b >> 32);
  }
  if (lane) {
    /* The turn's store depends on every word read from the entry, so it
     * cannot issue before they are read (as for a tiny message): no
     * release, so no system-scope fence on the receiver's path. */
    uint32_t dep = mpixd_zero_of(head.a) | mpixd_zero_of(head.b) | mpixd_zero_of(pull.a) | mpixd_zero_of(pull.b);
    if (!pulled && r->msg_bytes <= MPIXD_INLINE)
      dep |= mpixd_zero_of(w[0].a) | mpixd_zero_of(w[0].b) | mpixd_zero_of(w[1].a) | mpixd_zero_of(w[1].b);
    mpixd_lane_pass(h, r->peer, src_base, r->tag, r->seq, dep);
  }
  else if (defer) *defer = s;
  else mpixd_free_way(h, r->peer, src_base, s, false);
  if (pulled) {
    mpixd_pull_bind(h, r, (uint32_t)head.b, pull);
    return;
  }
  if (r->msg_bytes <= MPIXD_INLINE) {
    if (r->msg_bytes > 0 && r->bytes > 0) mpixd_inline_store(r->buf, w, r->msg_bytes < r->bytes ? r->msg_bytes : r->bytes);
    r->state = MPIXD_DONE;
    r->status = mpixd_recv_status(r);
    return;
  }
  r->next = 0;
  r->state = MPIXD_RECV_BOUND;
}

MPIXD_HD void mpixd_recv_take(const MPIX_Device_comm *h, MPIX_Device_request *r, int32_t slot, uint64_t key,
                              uint64_t payload, char *src_base) {
  mpixd_recv_take_ex(h, r, slot, key, payload, src_base, NULL);
}

/* A waiting receive: whether its message has arrived (taken if so). */
MPIXD_HD bool mpixd_recv_match(const MPIX_Device_comm *h, MPIX_Device_request *r) {
  uint64_t key = 0, payload = 0;
  const int32_t slot = mpixd_find_slot(h, r->peer, r->tag, r->seq, &key, &payload);
  if (slot < 0) return false;
  mpixd_recv_take(h, r, slot, key, payload, h->bases[r->peer]);
  return true;
}

MPIXD_HD int mpixd_recv_progress(const MPIX_Device_comm *h, MPIX_Device_request *r) {
  if (r->state == MPIXD_RECV_WAIT && !mpixd_recv_match(h, r)) return MPIX_DEVICE_PENDING;
  if (r->state == MPIXD_RECV_BOUND && (r->flags & MPIXD_R_PULL)) {
    mpixd_pull_copy(r, 0, 1);
    mpixd_pull_signal(h, r);
    r->state = MPIXD_DONE;
    r->status = mpixd_recv_status(r);
  }
  if (r->state == MPIXD_RECV_BOUND && (r->flags & MPIXD_R_MID)) {
    mpixd_mid_release(h, r, mpixd_mid_get1(h, r));
    r->state = MPIXD_DONE;
    r->status = mpixd_recv_status(r);
  }
  if (r->state == MPIXD_RECV_BOUND) {
    const uint32_t start = r->next;
    while (r->next < r->nslots && mpixd_arrived(h, r->peer, r->chan, r->ticket + r->next)) {
      mpixd_get_chunk(h, r, r->next, 0, 1);
      mpixd_mark_done(h, r->peer, r->chan, r->ticket + r->next);
      ++r->next;
    }
    if (r->next != start) mpixd_ring_release(h, r->peer, r->chan);
    if (r->next < r->nslots) return MPIX_DEVICE_PENDING;
    r->state = MPIXD_DONE;
    r->status = mpixd_recv_status(r);
  }
  return MPIX_DEVICE_SUCCESS;
}

/* One thread's MPIX_Test: PENDING, or the request's final status (the
 * request then inactive). */
MPIXD_HD int mpixd_test(const MPIX_Device_comm *h, MPIX_Device_request *r) {
  if (r == NULL) return MPIX_DEVICE_ERR_ARG;
  switch (r->state) {
    case MPIXD_PROXIED: return mpixd_proxy_test(h, r);
    case MPIXD_SEND:
      if (mpixd_send_progress(h, r) != MPIX_DEVICE_SUCCESS) return MPIX_DEVICE_PENDING;
      break;
    case MPIXD_RECV_WAIT:
    case MPIXD_RECV_BOUND:
      if (mpixd_recv_progress(h, r) != MPIX_DEVICE_SUCCESS) return MPIX_DEVICE_PENDING;
      break;
    case MPIXD_DONE: break;
    default: return MPIX_DEVICE_ERR_REQUEST;
  }
  r->state = MPIXD_INACTIVE;
  return r->status;
}

#endif
