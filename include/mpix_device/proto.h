/*
 * mpix device point-to-point: the queue protocol, header-only, compiled both
 * by nvcc for device code (user kernels include it through mpix_device.h, no
 * -rdc needed) and as plain C/C++ for the host tests (test/unit, test/mpi),
 * where host threads play the GPU threads. Not a public interface: names
 * start with mpixd_ and may change.
 *
 * Design (issues 6 and 7; papers/000 ch. 6.2-6.3, papers/001):
 *
 * Mailboxes in the receiver's memory (dCUDA, papers/001). Every rank owns
 * one device allocation, exported by CUDA IPC and mapped by every other rank
 * of the node. The sender writes straight into the receiver's memory; no
 * CPU is on the path.
 *
 * Matching by hash table, without locks or queues (papers/000 ch. 6.3.2.4
 * and the event tables of ch. 6.2: producer and consumer compute the same
 * key, so each finds the other's entry in O(1)). MPI orders messages per
 * (source, tag) only, so every message carries its number within its key:
 * the sender counts messages per (destination, tag), the receiver counts
 * receives per (source, tag), each with counters in its own memory (at
 * fixed places for tags below MPIXD_DIRECT_TAGS, in a hash table of keys
 * above: mpixd_counter). The n-th receive of a key is matched to the n-th
 * message of that key: message (tag, n) sits in the receiver's message
 * table for its source at a bucket hashed from (tag, n), and the receive
 * polls that bucket for it. Nobody else ever wants that entry, so taking it
 * needs no lock and no atomic; receives of different keys, and of one key,
 * proceed in parallel, in any order, and every pairing is MPI's.
 *
 * Message table (per source, in the receiver's memory): `buckets` buckets
 * of MPIXD_WAYS entries. A bucket's match keys (tag, n) are one 64-byte line
 * of 64-bit words, so one poll is a few vector loads; the entries beside
 * them hold the size and either the payload (up to MPIXD_INLINE bytes) or
 * where its chunks are in the payload ring. The sender claims a free way
 * with an atomic on its own occupancy word for that bucket (in its own
 * memory), writes the entry and then its match key (release, system
 * scope). The receiver, once done with the entry, clears the key and frees
 * the way with one fire-and-forget atomic AND on the sender's occupancy word
 * (release). A message may go to MPIXD_PROBE consecutive buckets from its
 * hashed one; when all are full the send waits (back-pressure), nothing is
 * overwritten.
 *
 * Lanes (tags below lane_tags, MPIX_DEVICE_LANE_TAGS): each (source, tag)
 * of a small tag has MPIXD_LANE cells of its own in the receiver's memory,
 * and message n of the key always goes to cell n mod MPIXD_LANE. The sender
 * claims nothing: the cell is its message's once the receiver has taken the
 * cell's previous message (n - MPIXD_LANE), which the receiver says by
 * writing the cell's next turn (n rounded down to MPIXD_LANE, plus
 * MPIXD_LANE) into the sender's memory. So a send costs one atomic (its
 * number), with the turn words loaded beside it, instead of two dependent
 * ones (number, then a way of the bucket the number hashes to). A cell's
 * keys only ever grow by MPIXD_LANE, so the key a receive looks for is
 * never a stale one: the receiver reads a tiny message's key and payload in
 * one 16-byte load and leaves the cell as it is (no exchange, no clear).
 * The price: at most MPIXD_LANE messages of one lane key are in flight
 * (later sends wait for receives), where the table holds thousands.
 *
 * Communicators that allow overtaking are matched in order too (MPI allows
 * it): a receive that took any message of its key could bind a staged
 * message whose chunks wait in the ring behind an earlier one of the same
 * key that only its next receive would consume.
 *
 * Payload rings (per (source, channel), channel = hash(tag)): messages above
 * MPIXD_INLINE bytes move in chunks of `slot_bytes` through a ring of
 * staging blocks in the receiver's memory. The sender claims tickets on a
 * counter in its own memory and writes chunk j into slot (ticket + j) mod
 * slots, publishing it with the chunk's sequence word; the receiver returns
 * credits by writing into the sender's memory how many tickets it has
 * released. Messages that fit the ring claim all their tickets at once, when
 * there is room; longer ones claim them up front and stream as credits come
 * back. Slots are released in ticket order: whoever marks a chunk consumed
 * tries the ring's release lock, and a thread that fails leaves the work to
 * the holder, which looks again after unlocking (a lock is only ever tried,
 * never waited for: see mpixd_try_lock).
 *
 * Progress guarantee: on the IPC path a device call only ever waits for the
 * peer's device threads (on the proxy path also for mpix's progress thread).
 * Kernels in different processes always progress relative to each other: no
 * co-residency is needed between sender and receiver kernels, as long as
 * each can start (ranks sharing one GPU must leave each other room on it:
 * waiting blocks keep their SM resources). Within one
 * process, a thread spinning in MPIX_Send/MPIX_Wait needs the threads that
 * will receive (or send) its message to be resident at the same time, as
 * for any spin wait. A request advances only while its owner tests or waits
 * on it (no background progress on the GPU). A staged message whose receive
 * is not yet posted holds its ring slots, so, as in MPI, it can delay later
 * staged messages of the same channel until its receive comes.
 */
#ifndef MPIX_DEVICE_PROTO_H
#define MPIX_DEVICE_PROTO_H

#include "mem.h"

/* Status codes of the device calls. */
#define MPIX_DEVICE_SUCCESS 0
#define MPIX_DEVICE_PENDING 1       /* MPIX_Test: not complete yet */
#define MPIX_DEVICE_AGAIN 2         /* proxy queue full: nothing done, retry */
#define MPIX_DEVICE_ERR_RANK (-1)   /* peer out of [0, size) (MPI_ANY_SOURCE included) */
#define MPIX_DEVICE_ERR_TAG (-2)    /* tag out of [0, tag_ub] (MPI_ANY_TAG included) */
#define MPIX_DEVICE_ERR_ARG (-3)    /* null request, null buffer with bytes > 0, invalid handle */
#define MPIX_DEVICE_ERR_TRUNCATE (-4) /* message longer than the receive buffer (buffer filled, rest dropped) */
#define MPIX_DEVICE_ERR_REQUEST (-5)  /* MPIX_Test/MPIX_Wait on an inactive request */
#define MPIX_DEVICE_ERR_KEYS (-6)     /* more distinct (peer, tag) pairs than MPIX_DEVICE_KEYS: nothing done */

#define MPIXD_INLINE 32u /* payload bytes carried in a message-table entry */
#define MPIXD_TINY 8u    /* payload bytes carried beside the match key, in its 16-byte cell */
#define MPIXD_WAYS 8u    /* entries per message-table bucket (one 64-byte line of match keys) */
#define MPIXD_PROBE 4u   /* buckets a message may go to, from its hashed one */
#define MPIXD_DIRECT_TAGS 4096u /* tags numbered by counters at fixed places (no key-table lookup) */
#define MPIXD_LANE 8u    /* cells per lane key: its messages in flight at most */
#define MPIXD_SLOT_LANE 0x40000000u /* a slot index that names a lane cell, not a table way */

#ifdef __cplusplus
extern "C" {
#endif

/* The device handle: plain data, passed to kernels by value. Fields are
 * private to the library. */
typedef struct MPIX_Device_comm {
  char *const *bases;   /* device array: every rank's mailbox as mapped here */
  char *local;          /* this rank's mailbox */
  uint64_t off_mkeys;   /* message tables' match keys, per source */
  uint64_t off_ments;   /* message tables' entries, per source */
  uint64_t off_claims;  /* sender side: occupied ways per (destination, bucket) */
  uint64_t off_skeys;   /* sender side: message counters per (destination, tag) */
  uint64_t off_rkeys;   /* receiver side: receive counters per (source, tag) */
  uint64_t off_sdirect; /* sender side: counters of tags below MPIXD_DIRECT_TAGS, per destination */
  uint64_t off_rdirect; /* receiver side: likewise per source */
  uint64_t off_seqs;    /* payload rings: chunk sequence words, per (source, channel) */
  uint64_t off_staging; /* payload rings: staging blocks */
  uint64_t off_rchan;   /* payload rings: release state and slot states */
  uint64_t off_schan;   /* payload rings: sender side, ticket counter and credit */
  uint64_t off_lcells;  /* lanes: cells ({match key, tiny payload}), per (source, lane tag) */
  uint64_t off_lents;   /* lanes: entries beside them */
  uint64_t off_lturns;  /* lanes, sender side: each cell's next turn, per (destination, lane tag) */
  uint32_t rchan_bytes;
  uint32_t channels;    /* power of two */
  uint32_t slots;       /* power of two */
  uint32_t slot_bytes;  /* multiple of 256 */
  uint32_t buckets;     /* message-table buckets per source, power of two */
  uint32_t keys;        /* counters per side, power of two */
  uint32_t lane_tags;   /* tags below this have lanes (0: none) */
  uint64_t gpu_peers;   /* bit r: rank r (< 64) uses this GPU (see mpixd_near) */
  uint64_t cell_peers;  /* bit r: messages of at most MPIXD_TINY bytes to rank r (< 64) go in their cell */
  int rank, size;
  int tag_ub;
  int path;                        /* MPIXD_PATH_IPC or MPIXD_PATH_PROXY */
  uint32_t pq_slots;               /* proxy queue entries, power of two */
  struct mpixd_pdesc *pq;          /* proxy: descriptors, host memory mapped for the GPU */
  struct mpixd_pcomp *pc;          /* proxy: completions, likewise */
  uint64_t *pq_sq;                 /* proxy: submission ring ((ticket + 1) << 32 | slot), likewise */
  uint32_t *pq_pool;               /* proxy: bitmap of the slots in use (device memory) */
  uint32_t *pq_tail;               /* proxy: submission ticket counter (device memory) */
  uint32_t *pq_credit;             /* proxy: submissions the host has taken */
  uint32_t pq_inline;              /* proxy: bounce bytes per entry (multiple of 32) */
  unsigned char *pq_bounce;        /* proxy: pq_slots bounce buffers, mapped host memory */
} MPIX_Device_comm;

/* A device request: lives wherever the caller keeps it (registers, local or
 * global memory); only one thread (or one block, for the _block variants)
 * drives it at a time. */
typedef struct MPIX_Device_request {
  int state;          /* mpixd_req_state */
  int peer, tag;
  int status;         /* the call's final status */
  uint32_t chan, ticket, nslots, next;
  uint32_t seq;       /* the message's number within its (peer, tag) key */
  uint32_t flags;     /* MPIXD_R_* */
  void *buf;
  size_t bytes;       /* buffer size */
  size_t msg_bytes;   /* receive: size of the message matched */
} MPIX_Device_request;

#ifdef __cplusplus
}
#endif

enum mpixd_req_state { MPIXD_INACTIVE = 0, MPIXD_SEND, MPIXD_RECV_WAIT, MPIXD_RECV_BOUND, MPIXD_DONE, MPIXD_PROXIED };
/* Request flags of a send: ring tickets held, entry published. */
#define MPIXD_R_TICKETS 1u
#define MPIXD_R_POSTED 2u
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

#define MPIXD_PATH_IPC 0
#define MPIXD_PATH_PROXY 1


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

/* ---- layout ---- */

MPIXD_HD uint64_t mpixd_align(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

MPIXD_HD uint32_t mpixd_rchan_bytes(uint32_t slots) {
  return (uint32_t)mpixd_align(sizeof(mpixd_rchan) + 4ull * slots, 128);
}

/* Fills the offsets of h (size, channels, slots, slot_bytes, buckets, keys
 * set) for a mailbox that starts with `header` bytes of the library's own;
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
  return mpixd_align(h->off_lturns + lane_cells * sizeof(uint32_t), 256);
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

/* Whether peer shares this GPU: then its synchronisations need only GPU
 * scope (see the *_at primitives). Ranks from 64 on always use system scope. */
MPIXD_HD bool mpixd_near(const MPIX_Device_comm *h, int peer) {
  return peer >= 0 && peer < 64 && ((h->gpu_peers >> peer) & 1u) != 0;
}

/* ---- lanes ---- */

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

/* ---- hashing ---- */

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

/* ---- per-key counters ---- */

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

/* ---- copies ---- */

typedef struct __attribute__((aligned(16))) mpixd_w16 {
  uint64_t a, b;
} mpixd_w16;

/* Copies n bytes, lane `lane` of `lanes` cooperating threads doing its
 * share (16-byte words when both sides allow it; four words in flight per
 * lane, loaded before any is stored). */
MPIXD_HD void mpixd_copy(void *dst, const void *src, size_t n, unsigned lane, unsigned lanes) {
  unsigned char *d = (unsigned char *)dst;
  const unsigned char *s = (const unsigned char *)src;
  size_t done = 0;
  if ((((uintptr_t)d | (uintptr_t)s) & 15) == 0) {
    /* Aligned to 16 so that nvcc emits one 128-bit access per word (with
     * the natural 8-byte alignment it splits every word into two 64-bit
     * accesses, twice the NVLink transactions). Only used on 16-byte
     * aligned pointers: vector accesses on unaligned user buffers fault. */
    mpixd_w16 *dw = (mpixd_w16 *)d;
    const mpixd_w16 *sw = (const mpixd_w16 *)s;
    const size_t words = n / 16;
    size_t i = lane;
    for (; i + 3 * (size_t)lanes < words; i += 4 * (size_t)lanes) {
      const mpixd_w16 a = sw[i], b = sw[i + lanes], c = sw[i + 2 * (size_t)lanes], e = sw[i + 3 * (size_t)lanes];
      dw[i] = a;
      dw[i + lanes] = b;
      dw[i + 2 * (size_t)lanes] = c;
      dw[i + 3 * (size_t)lanes] = e;
    }
    for (; i < words; i += lanes) dw[i] = sw[i];
    done = words * 16;
  }
  for (size_t i = done + lane; i < n; i += lanes) d[i] = s[i];
}

/* Copies an inline payload (n <= MPIXD_INLINE) from a buffer of any
 * alignment into 32 bytes of registers, with the widest loads it allows. */
MPIXD_HD void mpixd_inline_load(mpixd_w16 w[2], const void *src, size_t n) {
  w[0].a = w[0].b = w[1].a = w[1].b = 0;
  const uintptr_t a = (uintptr_t)src;
  if ((a & 15) == 0 && n == MPIXD_INLINE) {
    w[0] = ((const mpixd_w16 *)src)[0];
    w[1] = ((const mpixd_w16 *)src)[1];
  } else if ((a & 7) == 0) {
    uint64_t *o = (uint64_t *)w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) o[i / 8] = ((const uint64_t *)src)[i / 8];
    for (; i < n; ++i) ((unsigned char *)w)[i] = ((const unsigned char *)src)[i];
  } else {
    for (size_t i = 0; i < n; ++i) ((unsigned char *)w)[i] = ((const unsigned char *)src)[i];
  }
}

/* The reverse: n bytes of 32 bytes of registers into a buffer. */
MPIXD_HD void mpixd_inline_store(void *dst, const mpixd_w16 w[2], size_t n) {
  const uintptr_t a = (uintptr_t)dst;
  if ((a & 15) == 0 && n == MPIXD_INLINE) {
    ((mpixd_w16 *)dst)[0] = w[0];
    ((mpixd_w16 *)dst)[1] = w[1];
  } else if ((a & 7) == 0) {
    const uint64_t *o = (const uint64_t *)w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) ((uint64_t *)dst)[i / 8] = o[i / 8];
    for (; i < n; ++i) ((unsigned char *)dst)[i] = ((const unsigned char *)w)[i];
  } else {
    for (size_t i = 0; i < n; ++i) ((unsigned char *)dst)[i] = ((const unsigned char *)w)[i];
  }
}

/* ---- message table ---- */

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

/* ---- payload rings ---- */

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

/* ---- argument checks ---- */

MPIXD_HD int mpixd_check_args(const MPIX_Device_comm *h, const void *buf, size_t bytes, int peer, int tag) {
  if (h->size <= 0) return MPIX_DEVICE_ERR_ARG;
  if (h->path == MPIXD_PATH_IPC ? (h->bases == NULL || h->channels == 0 || h->buckets == 0 || h->keys == 0)
                                : (h->pq == NULL || h->pq_sq == NULL || h->pq_pool == NULL || h->pq_slots == 0))
    return MPIX_DEVICE_ERR_ARG;
  if (peer < 0 || peer >= h->size) return MPIX_DEVICE_ERR_RANK;
  if (tag < 0 || tag > h->tag_ub) return MPIX_DEVICE_ERR_TAG;
  if (buf == NULL && bytes > 0) return MPIX_DEVICE_ERR_ARG;
  if (bytes > 0xffffffffull) return MPIX_DEVICE_ERR_ARG; /* the entry's 32-bit size */
  return MPIX_DEVICE_SUCCESS;
}

MPIXD_HD int mpixd_check(const MPIX_Device_comm *h, const void *buf, size_t bytes, int peer, int tag,
                         const MPIX_Device_request *r) {
  return r == NULL ? MPIX_DEVICE_ERR_ARG : mpixd_check_args(h, buf, bytes, peer, tag);
}

#endif
