/*
 * mpix device point-to-point: the mailbox layout. The records that live in
 * a rank's mailbox (message-table entries, key-table counters, the two
 * sides of a payload ring), where mpixd_layout puts each region, and the
 * accessors that find a region of a given rank's mailbox. Part of proto.h.
 */
#ifndef MPIX_DEVICE_LAYOUT_H
#define MPIX_DEVICE_LAYOUT_H

#include "types.h"

enum mpixd_slot_state { MPIXD_S_FREE = 0, MPIXD_S_DONE = 1 };

/* A message-table entry; its match key is in the bucket's key line. */
typedef struct mpixd_ment {
  uint32_t bytes;   /* message size */
  uint32_t chan;    /* above MPIXD_INLINE: payload ring channel, */
  uint32_t ticket;  /* first chunk's ticket */
  uint32_t nslots;  /* and number of chunks */
  uint32_t pad[4];
  unsigned char data[MPIXD_INLINE]; /* up to MPIXD_INLINE: the payload */
} mpixd_ment;

/* A counter of a key table: key 0 is an empty slot. */
typedef struct mpixd_keyslot {
  uint64_t key;
  uint32_t count;
  uint32_t pad;
} mpixd_keyslot;

/* Receiver side of one payload ring (source, channel), followed by its slot
 * states. Only threads of the receiving rank touch it. */
typedef struct mpixd_rchan {
  uint32_t lock;       /* release lock: only ever tried */
  uint32_t lo;         /* tickets below lo are released */
  uint32_t pad[30];
} mpixd_rchan;

/* Sender side of one payload ring (destination, channel): the ticket
 * counter, and on its own cache line the credit word the receiver writes. */
typedef struct mpixd_schan {
  uint32_t tail;
  uint32_t pad1[31];
  uint32_t credit;
  uint32_t pad2[31];
} mpixd_schan;

MPIXD_HD uint64_t mpixd_align(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

MPIXD_HD uint32_t mpixd_rchan_bytes(uint32_t slots) {
  return (uint32_t)mpixd_align(sizeof(mpixd_rchan) + 4ull * slots, 128);
}

/* Fills the offsets of h (size, channels, slots, slot_bytes, buckets, keys,
 * lane_tags, mid_slots set) for a mailbox that starts with `header` bytes of the library's own;
 * returns the mailbox size. Everything starts zeroed. */
MPIXD_HD uint64_t mpixd_layout(MPIX_Device_comm *h, uint64_t header) {
  const uint64_t n = (uint64_t)h->size;
  const uint64_t table = (uint64_t)h->buckets * MPIXD_WAYS;
  const uint64_t rings = n * h->channels;
  h->rchan_bytes = mpixd_rchan_bytes(h->slots);
  h->off_mkeys = mpixd_align(header, 256);
  h->off_ments = mpixd_align(h->off_mkeys + n * table * 2 * sizeof(uint64_t), 256);
  h->off_claims = mpixd_align(h->off_ments + n * table * sizeof(mpixd_ment), 256);
  h->off_skeys = mpixd_align(h->off_claims + n * h->buckets * sizeof(uint32_t), 256);
  h->off_rkeys = mpixd_align(h->off_skeys + (uint64_t)h->keys * sizeof(mpixd_keyslot), 256);
  h->off_sdirect = mpixd_align(h->off_rkeys + (uint64_t)h->keys * sizeof(mpixd_keyslot), 256);
  h->off_rdirect = mpixd_align(h->off_sdirect + n * MPIXD_DIRECT_TAGS * sizeof(uint32_t), 256);
  h->off_seqs = mpixd_align(h->off_rdirect + n * MPIXD_DIRECT_TAGS * sizeof(uint32_t), 256);
  h->off_staging = mpixd_align(h->off_seqs + rings * h->slots * sizeof(uint32_t), 256);
  h->off_rchan = mpixd_align(h->off_staging + rings * h->slots * (uint64_t)h->slot_bytes, 256);
  h->off_schan = mpixd_align(h->off_rchan + rings * h->rchan_bytes, 256);
  const uint64_t lane_cells = n * h->lane_tags * MPIXD_LANE;
  h->off_lcells = mpixd_align(h->off_schan + rings * sizeof(mpixd_schan), 256);
  h->off_lents = mpixd_align(h->off_lcells + lane_cells * 2 * sizeof(uint64_t), 256);
  h->off_lturns = mpixd_align(h->off_lents + lane_cells * sizeof(mpixd_ment), 256);
  h->mrchan_bytes = h->mid_slots ? mpixd_rchan_bytes(h->mid_slots) : 0;
  h->off_mstaging = mpixd_align(h->off_lturns + lane_cells * sizeof(uint32_t), 256);
  h->off_mrchan = mpixd_align(h->off_mstaging + rings * h->mid_slots * (uint64_t)MPIXD_MID_SLOT_BYTES, 256);
  h->off_mschan = mpixd_align(h->off_mrchan + rings * h->mrchan_bytes, 256);
  h->off_pull = mpixd_align(h->off_mschan + (h->mid_slots ? rings * sizeof(mpixd_schan) : 0), 256);
  return mpixd_align(h->off_pull + n * MPIXD_PULL_EXPORTS * sizeof(uint64_t) + n * MPIXD_PULL_DONE * sizeof(uint32_t),
                     256);
}

/* Cells ({match key, tiny payload}, 16 bytes a way) and entries of the
 * message table for messages from `src` in mailbox `base` (the
 * receiver's); way s's cell is at cells + 2 * s. */
MPIXD_HD uint64_t *mpixd_mkeys(const MPIX_Device_comm *h, char *base, int src) {
  return (uint64_t *)(base + h->off_mkeys + (uint64_t)src * h->buckets * MPIXD_WAYS * 2 * sizeof(uint64_t));
}
MPIXD_HD mpixd_ment *mpixd_ments(const MPIX_Device_comm *h, char *base, int src) {
  return (mpixd_ment *)(base + h->off_ments + (uint64_t)src * h->buckets * MPIXD_WAYS * sizeof(mpixd_ment));
}
/* Occupied ways of the table for messages to `dst`, in mailbox `base` (the
 * sender's): bit w of word b = way w of bucket b. */
MPIXD_HD uint32_t *mpixd_claims(const MPIX_Device_comm *h, char *base, int dst) {
  return (uint32_t *)(base + h->off_claims + (uint64_t)dst * h->buckets * sizeof(uint32_t));
}
MPIXD_HD mpixd_keyslot *mpixd_send_keys(const MPIX_Device_comm *h) { return (mpixd_keyslot *)(h->local + h->off_skeys); }
MPIXD_HD mpixd_keyslot *mpixd_recv_keys(const MPIX_Device_comm *h) { return (mpixd_keyslot *)(h->local + h->off_rkeys); }

MPIXD_HD uint32_t *mpixd_seqs(const MPIX_Device_comm *h, char *base, int src, uint32_t c) {
  return (uint32_t *)(base + h->off_seqs + ((uint64_t)src * h->channels + c) * h->slots * sizeof(uint32_t));
}
MPIXD_HD unsigned char *mpixd_staging(const MPIX_Device_comm *h, char *base, int src, uint32_t c, uint32_t slot) {
  return (unsigned char *)(base + h->off_staging +
                           (((uint64_t)src * h->channels + c) * h->slots + slot) * h->slot_bytes);
}
MPIXD_HD mpixd_rchan *mpixd_rchan_of(const MPIX_Device_comm *h, int src, uint32_t c) {
  return (mpixd_rchan *)(h->local + h->off_rchan + ((uint64_t)src * h->channels + c) * h->rchan_bytes);
}
MPIXD_HD uint32_t *mpixd_slot_states(mpixd_rchan *rc) { return (uint32_t *)(rc + 1); }
/* Sender side for `dst` in mailbox `base` (the sender's). */
MPIXD_HD mpixd_schan *mpixd_schan_of(const MPIX_Device_comm *h, char *base, int dst, uint32_t c) {
  return (mpixd_schan *)(base + h->off_schan + ((uint64_t)dst * h->channels + c) * sizeof(mpixd_schan));
}

/* Medium rings (mid.h): (source, channel) in the receiver's mailbox, the
 * sender's side for (destination, channel) in the sender's. */
MPIXD_HD unsigned char *mpixd_mid_slot(const MPIX_Device_comm *h, char *base, int src, uint32_t c, uint32_t slot) {
  return (unsigned char *)(base + h->off_mstaging +
                           (((uint64_t)src * h->channels + c) * h->mid_slots + slot) * MPIXD_MID_SLOT_BYTES);
}
MPIXD_HD mpixd_rchan *mpixd_mid_rchan_of(const MPIX_Device_comm *h, int src, uint32_t c) {
  return (mpixd_rchan *)(h->local + h->off_mrchan + ((uint64_t)src * h->channels + c) * h->mrchan_bytes);
}
MPIXD_HD mpixd_schan *mpixd_mid_schan_of(const MPIX_Device_comm *h, char *base, int dst, uint32_t c) {
  return (mpixd_schan *)(base + h->off_mschan + ((uint64_t)dst * h->channels + c) * sizeof(mpixd_schan));
}

/* Pulled messages (pull.h): the addresses, as mapped here, of the buffers
 * `src` exported to this rank (written by this rank's host); and in mailbox
 * `base` (the sender's), the word the receiver `rank` signals number `gen`
 * on (its low bits pick one of MPIXD_PULL_DONE). */
MPIXD_HD uint64_t *mpixd_pull_imports(const MPIX_Device_comm *h, int src) {
  return (uint64_t *)(h->local + h->off_pull) + (uint64_t)src * MPIXD_PULL_EXPORTS;
}
MPIXD_HD uint32_t *mpixd_pull_done(const MPIX_Device_comm *h, char *base, int rank, uint32_t gen) {
  return (uint32_t *)(base + h->off_pull + (uint64_t)h->size * MPIXD_PULL_EXPORTS * sizeof(uint64_t)) +
         (uint64_t)rank * MPIXD_PULL_DONE + (gen & (MPIXD_PULL_DONE - 1));
}

/* Whether peer shares this GPU: then its synchronisations need only GPU
 * scope (see the *_at primitives). Ranks from 64 on always use system scope. */
MPIXD_HD bool mpixd_near(const MPIX_Device_comm *h, int peer) {
  return peer >= 0 && peer < 64 && ((h->gpu_peers >> peer) & 1u) != 0;
}

/* The cell (16 bytes: match key, tiny payload) and the entry of `slot` (a
 * table way or a lane cell) for messages from src in mailbox `base` (the
 * receiver's). */
MPIXD_HD uint64_t *mpixd_cell(const MPIX_Device_comm *h, char *base, int src, uint32_t slot) {
  if (slot & MPIXD_SLOT_LANE)
    return (uint64_t *)(base + h->off_lcells) +
           2 * ((uint64_t)src * h->lane_tags * MPIXD_LANE + (slot & ~MPIXD_SLOT_LANE));
  return mpixd_mkeys(h, base, src) + 2 * (uint64_t)slot;
}
MPIXD_HD mpixd_ment *mpixd_entry(const MPIX_Device_comm *h, char *base, int src, uint32_t slot) {
  if (slot & MPIXD_SLOT_LANE)
    return (mpixd_ment *)(base + h->off_lents) + (uint64_t)src * h->lane_tags * MPIXD_LANE + (slot & ~MPIXD_SLOT_LANE);
  return mpixd_ments(h, base, src) + slot;
}

#endif
