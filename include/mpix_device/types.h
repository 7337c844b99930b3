/*
 * mpix device point-to-point: the status codes of the device calls, the
 * protocol's size constants, and the two objects a caller holds: the device
 * handle (MPIX_Device_comm) and a request (MPIX_Device_request). One of the
 * headers proto.h gathers (the protocol's design is described there); names
 * that start with mpixd_ are not a public interface and may change.
 */
#ifndef MPIX_DEVICE_TYPES_H
#define MPIX_DEVICE_TYPES_H

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
#define MPIXD_MID_SLOT_BYTES 1024u
#define MPIXD_PULL_EXPORTS 64u /* sender buffers a rank may name to each peer for pulling (pull.h) */
#define MPIXD_PULL_DONE 64u    /* done words per (sender, receiver): pulled sends in flight at most */
#define MPIXD_CHAN_PULL 0xffffffffu /* a table entry's channel: the receiver pulls from the sender's buffer */ /* bytes of a medium ring slot: 64 lines of 8 payload bytes and their flags */

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
  uint64_t off_mstaging; /* medium rings: flagged lines, per (source, channel) */
  uint64_t off_mrchan;  /* medium rings: release state and slot states */
  uint64_t off_mschan;  /* medium rings: sender side, ticket counter and credit */
  uint64_t off_pull;    /* pulled messages: imported peer buffers, per (source, export); done words, per (destination, slot) */
  uint32_t rchan_bytes;
  uint32_t mrchan_bytes;
  uint32_t mid_slots;   /* medium ring slots (power of two; 0: no medium rings) */
  uint32_t mid_max;     /* largest medium message (payload bytes; 0: none) */
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
/* A send or a bound receive of a medium message (ticket and nslots name
 * its medium ring slots: see mid.h). */
#define MPIXD_R_MID 4u
/* A pulled message (see pull.h). A bound receive: ticket and nslots hold
 * the source address, next the number to signal back. A send: chan the
 * export, ticket and nslots the offset, next the number it waits for. */
#define MPIXD_R_PULL 8u

#define MPIXD_PATH_IPC 0
#define MPIXD_PATH_PROXY 1

#endif
