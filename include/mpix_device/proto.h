/*
 * mpix device point-to-point: the queue protocol, header-only, compiled both
 * by nvcc for device code (user kernels include it through mpix_device.h, no
 * -rdc needed) and as plain C++ for the host unit test (test/unit), where
 * std::threads play the GPU threads. Not a public interface: names start
 * with mpixd_ and may change.
 *
 * Design (issue 6; ideas from papers/000 ch. 6.2-6.3 and papers/001):
 *
 * Mailboxes in the receiver's memory (dCUDA, papers/001). Every rank owns
 * one device allocation, exported by CUDA IPC and mapped by every other rank
 * of the node. For each (source, channel) it holds a ring of `slots`
 * 64-byte entries and, beside each entry, a staging block of `slot_bytes`.
 * The sender writes an entry (and its staging block) straight into the
 * receiver's memory and publishes it by storing the sequence number
 * ticket+1 last (release, system scope); the receiver sees a new entry when
 * that word equals the ticket it expects (acquire). No CPU on the path.
 *
 * Tickets and credits. Senders claim tickets per (destination, channel) on a
 * counter in their own memory (only threads of the sending process compete
 * for it). The receiver returns credits by writing how many tickets it has
 * released into the sender's memory; ticket t may be written once
 * t - credit < slots. A full ring makes MPIX_Isend return
 * MPIX_DEVICE_AGAIN (before claiming anything) and MPIX_Send spin; nothing
 * is ever overwritten. Claims of single-slot messages are warp-aggregated
 * (papers/000 Algorithm 1: one atomic per group of lanes sending to the same
 * queue, lanes take consecutive slots by their rank in the group).
 *
 * Channels: the hashed-bin idea of papers/000 ch. 6.3 applied to the
 * queues. A message goes to channel hash(tag) mod channels, so every (source,
 * tag) key lives in exactly one ring and keeps its FIFO order there, while
 * different tags spread over independent rings, locks and credits:
 * receivers of different tags do not contend.
 *
 * Matching per (source, channel), under a lock in the receiver's memory
 * that is only ever tried (see mpixd_try_lock), MPI's two-queue scheme:
 * arrivals are taken in ticket order (`arr`) and matched against the posted
 * receives of that channel, oldest post first; unmatched headers stay in the
 * ring as unexpected, and a new receive scans them oldest first. So the n-th
 * receive posted for a key gets the n-th message sent for it. Slots are
 * released in order (`lo`) once consumed, which returns the credits.
 * Waiting receives peek at a few words without the lock and take it only
 * when something arrived for them to take in or collect.
 *
 * Messages up to MPIXD_INLINE bytes ride in the entry. Larger ones take
 * ceil(bytes/slot_bytes) consecutive tickets (one claim), each carrying one
 * chunk in its slot's staging block; messages longer than the ring stream
 * through it as credits come back (pipelined: the receiver copies chunk j
 * out while the sender writes chunk j+1).
 *
 * Progress guarantee: on the IPC path a device call only ever waits for the
 * peer's device threads (never for a host thread; on the proxy path also
 * for mpix's progress thread). Kernels in different processes (or
 * on different GPUs) always progress relative to each other: no
 * co-residency is needed between sender and receiver kernels. Within one
 * process, a thread spinning in MPIX_Send/MPIX_Wait needs the threads that
 * will receive (or send) its message to be resident at the same time, as
 * for any spin wait; two launches of one process (even on two streams) are
 * not guaranteed to overlap, so both sides belong in one grid (launched
 * cooperatively where co-residency must be certain). A request advances only while its owner tests or
 * waits on it (no background progress on the GPU). A receive holds ring
 * slots until it is completed, so
 * as in MPI a message whose receive is never posted can, once the ring is
 * full, block later messages of the same channel.
 */
#ifndef MPIX_DEVICE_PROTO_H
#define MPIX_DEVICE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define MPIXD_HD __host__ __device__ __forceinline__
#elif defined(__cplusplus)
#define MPIXD_HD inline
#else
#define MPIXD_HD static inline
#endif
#ifndef __cplusplus
#include <stdbool.h>
#endif

#if !defined(__CUDA_ARCH__)
#include <sched.h>
#endif

/* Status codes of the device calls. */
#define MPIX_DEVICE_SUCCESS 0
#define MPIX_DEVICE_PENDING 1       /* MPIX_Test: not complete yet */
#define MPIX_DEVICE_AGAIN 2         /* queue full / no receive slot / queue busy: nothing done, retry */
#define MPIX_DEVICE_ERR_RANK (-1)   /* peer out of [0, size) (MPI_ANY_SOURCE included) */
#define MPIX_DEVICE_ERR_TAG (-2)    /* tag out of [0, tag_ub] (MPI_ANY_TAG included) */
#define MPIX_DEVICE_ERR_ARG (-3)    /* null request, null buffer with bytes > 0, invalid handle */
#define MPIX_DEVICE_ERR_TRUNCATE (-4) /* message longer than the receive buffer (buffer filled, rest dropped) */
#define MPIX_DEVICE_ERR_REQUEST (-5)  /* MPIX_Test/MPIX_Wait on an inactive request */

#define MPIXD_INLINE 32u /* payload bytes carried in the entry itself */

#ifdef __cplusplus
extern "C" {
#endif

/* The device handle: plain data, passed to kernels by value. Fields are
 * private to the library. */
typedef struct MPIX_Device_comm {
  char *const *bases;   /* device array: every rank's mailbox as mapped here */
  char *local;          /* this rank's mailbox */
  uint64_t off_entries, off_staging, off_rchan, off_schan;
  uint32_t rchan_bytes;
  uint32_t channels;    /* power of two */
  uint32_t slots;       /* power of two */
  uint32_t slot_bytes;  /* multiple of 256 */
  uint32_t posted;      /* posted receives per (source, channel) */
  int rank, size;
  int tag_ub;
  int path;                        /* MPIXD_PATH_IPC or MPIXD_PATH_PROXY */
  uint32_t pq_slots;               /* proxy queue entries, power of two */
  struct mpixd_pdesc *pq;          /* proxy: descriptors, host memory mapped for the GPU */
  struct mpixd_pcomp *pc;          /* proxy: completions, likewise */
  uint32_t *pq_tail;               /* proxy: ticket counter (device memory) */
  uint32_t *pq_credit;             /* proxy: tickets released by the host */
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
  uint32_t chan, ticket, nslots, next, posted;
  uint32_t flags;
  void *buf;
  size_t bytes;       /* buffer size */
  size_t msg_bytes;   /* receive: size of the message matched */
} MPIX_Device_request;

#ifdef __cplusplus
}
#endif

#define MPIXD_F_COPIED 0x100u /* request flag: chunk `next` already copied out */

enum mpixd_req_state { MPIXD_INACTIVE = 0, MPIXD_SEND_STREAM, MPIXD_RECV_POSTED, MPIXD_RECV_BOUND, MPIXD_DONE, MPIXD_PROXIED };
enum mpixd_kind { MPIXD_HEADER = 1, MPIXD_CONT = 2 };
enum mpixd_slot_state { MPIXD_S_FREE = 0, MPIXD_S_UNEXP, MPIXD_S_BOUND, MPIXD_S_CONT, MPIXD_S_DONE };
enum mpixd_posted_state { MPIXD_P_FREE = 0, MPIXD_P_POSTED, MPIXD_P_MATCHED };

typedef struct mpixd_entry {
  uint32_t seq;     /* ticket + 1 once the entry is complete (written last) */
  int32_t tag;
  uint32_t bytes;   /* header: message bytes */
  uint32_t kind;    /* mpixd_kind */
  uint32_t nslots;  /* header: tickets the message takes */
  uint32_t pad[3];
  unsigned char data[MPIXD_INLINE];
} mpixd_entry;

#define MPIXD_PATH_IPC 0
#define MPIXD_PATH_PROXY 1

/* Proxy path (papers/002: the GPU only writes a compact descriptor): one
 * queue per rank in host memory mapped for the GPU. A device thread claims a
 * ticket, writes the descriptor and its sequence number last; the progress
 * thread (mpix/device_proxy.cc) starts the operation through MPI on the
 * communicator itself, so host MPI calls on the communicator match device
 * operations and vice versa, and writes the completion into the slot's
 * completion record; the device thread reads it and marks it released;
 * released tickets return as credits. Payloads up to MPIXD_INLINE bytes
 * travel in the descriptor / completion record, up to pq_inline bytes in the
 * entry's bounce buffer (mapped host memory; the device thread copies in or
 * out), so the host moves them as host memory, with no CUDA call per
 * message; both work with any buffer, local memory included. Longer ones are
 * moved from/to the buffer by MPI (mpix's GPU-aware point-to-point), so they
 * must be in memory the host can name (cudaMalloc, managed, mapped host
 * memory). */
typedef struct mpixd_pdesc {
  uint32_t seq;       /* ticket + 1, written last */
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
  uint32_t released;  /* ticket + 1 once the device has read the record */
  uint32_t pad[3];
  unsigned char data[MPIXD_INLINE];
} mpixd_pcomp;

enum mpixd_op { MPIXD_OP_SEND = 1, MPIXD_OP_RECV = 2 };

typedef struct mpixd_posted {
  uint32_t state;
  int32_t tag;
  uint32_t order;
  uint32_t ticket;
} mpixd_posted;

/* Receiver side of one (source, channel), followed by slot states and the
 * posted receives. Only threads of the receiving rank touch it. */
typedef struct mpixd_rchan {
  uint32_t lock;
  uint32_t arr;        /* next ticket to take in for matching */
  uint32_t lo;         /* tickets below lo are released */
  uint32_t post_order; /* age of posted receives */
  uint32_t pad[12];
} mpixd_rchan;

/* Sender side of one (destination, channel): the ticket counter, and on its
 * own cache line the credit word the receiver writes. */
typedef struct mpixd_schan {
  uint32_t tail;
  uint32_t pad1[31];
  uint32_t credit;
  uint32_t pad2[31];
} mpixd_schan;

/* ---- memory primitives: device and host flavours ---- */

MPIXD_HD uint32_t mpixd_load_acquire(const uint32_t *p) {
#if defined(__CUDA_ARCH__)
  uint32_t v;
  asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

MPIXD_HD void mpixd_store_release(uint32_t *p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  asm volatile("st.release.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

MPIXD_HD uint32_t mpixd_load_relaxed(const uint32_t *p) {
#if defined(__CUDA_ARCH__)
  return *(const volatile uint32_t *)p;
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

/* For words read without the lock by lock-free peeks (see
 * mpixd_recv_bind): written under the lock, but as single atomic stores. */
MPIXD_HD void mpixd_store_relaxed(uint32_t *p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  *(volatile uint32_t *)p = v;
#else
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

MPIXD_HD uint32_t mpixd_cas(uint32_t *p, uint32_t expect, uint32_t desired) {
#if defined(__CUDA_ARCH__)
  return atomicCAS(p, expect, desired);
#else
  __atomic_compare_exchange_n(p, &expect, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
  return expect;
#endif
}

MPIXD_HD uint32_t mpixd_fetch_add(uint32_t *p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  return atomicAdd(p, v);
#else
  return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
#endif
}

/* Orders this thread's earlier writes (peer memory included) before later
 * ones, as seen from any agent. */
MPIXD_HD void mpixd_fence_system(void) {
#if defined(__CUDA_ARCH__)
  __threadfence_system();
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

MPIXD_HD void mpixd_pause(void) {
#if defined(__CUDA_ARCH__)
  __nanosleep(64);
#else
  sched_yield();
#endif
}

/* Exponential backoff for wait loops: sleeps *ns (device; a yield on the
 * host), then doubles it up to max_ns. Waiters on the proxy path poll
 * completion records in host memory across PCIe, where thousands of
 * threads polling flat out crowd out the traffic they wait for. */
MPIXD_HD void mpixd_backoff(unsigned *ns, unsigned max_ns) {
#if defined(__CUDA_ARCH__)
  __nanosleep(*ns);
#else
  sched_yield();
#endif
  if (*ns < max_ns) *ns *= 2;
}

/* The receive queues' lock is only ever tried, never waited for: a call
 * that does not get it reports PENDING / AGAIN and its caller retries (with
 * backoff) from outside. Lanes of a warp that spin on a lock together share
 * a convergence barrier after the spin loop (nvcc: BSSY before it, BSYNC
 * after it), where the lane that won the lock waits for its warp-mates that
 * spin on the lock it holds. With one queue for many threads that stalled
 * dev_p2p on an H200 (2026-11-23: the lock held, three matched receives
 * never collected). A failed try goes back to the caller's loop, which
 * contains the winner's whole critical section, so no lane ever holds the
 * lock at a barrier shared with lanes waiting for it. */
MPIXD_HD bool mpixd_try_lock(uint32_t *l) {
  if (mpixd_load_relaxed(l) != 0 || mpixd_cas(l, 0, 1) != 0) return false;
#if defined(__CUDA_ARCH__)
  __threadfence();
#endif
  return true;
}

MPIXD_HD void mpixd_unlock(uint32_t *l) {
#if defined(__CUDA_ARCH__)
  __threadfence();
  atomicExch(l, 0u);
#else
  __atomic_store_n(l, 0u, __ATOMIC_RELEASE);
#endif
}

/* a - b between wrapping 32-bit counters. */
MPIXD_HD int32_t mpixd_diff(uint32_t a, uint32_t b) { return (int32_t)(a - b); }

/* ---- layout ---- */

MPIXD_HD uint64_t mpixd_align(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

MPIXD_HD uint32_t mpixd_rchan_bytes(uint32_t slots, uint32_t posted) {
  return (uint32_t)mpixd_align(sizeof(mpixd_rchan) + mpixd_align(4ull * slots, 16) + sizeof(mpixd_posted) * posted, 128);
}

/* Fills the offsets of h (channels, slots, slot_bytes, posted, size set)
 * for a mailbox that starts with `header` bytes of the library's own;
 * returns the mailbox size. */
MPIXD_HD uint64_t mpixd_layout(MPIX_Device_comm *h, uint64_t header) {
  const uint64_t queues = (uint64_t)h->size * h->channels;
  h->rchan_bytes = mpixd_rchan_bytes(h->slots, h->posted);
  h->off_entries = mpixd_align(header, 256);
  h->off_staging = mpixd_align(h->off_entries + queues * h->slots * sizeof(mpixd_entry), 256);
  h->off_rchan = mpixd_align(h->off_staging + queues * h->slots * (uint64_t)h->slot_bytes, 256);
  h->off_schan = mpixd_align(h->off_rchan + queues * h->rchan_bytes, 256);
  return mpixd_align(h->off_schan + queues * sizeof(mpixd_schan), 256);
}

MPIXD_HD uint32_t mpixd_channel(const MPIX_Device_comm *h, int tag) {
  uint32_t x = (uint32_t)tag * 2654435761u;
  x ^= x >> 15;
  return x & (h->channels - 1);
}

/* Ring of messages from `src` in mailbox `base` (the receiver's). */
MPIXD_HD mpixd_entry *mpixd_entries(const MPIX_Device_comm *h, char *base, int src, uint32_t c) {
  return (mpixd_entry *)(base + h->off_entries + ((uint64_t)src * h->channels + c) * h->slots * sizeof(mpixd_entry));
}
MPIXD_HD unsigned char *mpixd_staging(const MPIX_Device_comm *h, char *base, int src, uint32_t c, uint32_t slot) {
  return (unsigned char *)(base + h->off_staging +
                           (((uint64_t)src * h->channels + c) * h->slots + slot) * h->slot_bytes);
}
MPIXD_HD mpixd_rchan *mpixd_rchan_of(const MPIX_Device_comm *h, int src, uint32_t c) {
  return (mpixd_rchan *)(h->local + h->off_rchan + ((uint64_t)src * h->channels + c) * h->rchan_bytes);
}
MPIXD_HD uint32_t *mpixd_slot_states(const MPIX_Device_comm *h, mpixd_rchan *rc) {
  (void)h;
  return (uint32_t *)(rc + 1);
}
MPIXD_HD mpixd_posted *mpixd_posted_of(const MPIX_Device_comm *h, mpixd_rchan *rc) {
  return (mpixd_posted *)((char *)(rc + 1) + mpixd_align(4ull * h->slots, 16));
}
/* Sender side for `dst` in mailbox `base` (the sender's). */
MPIXD_HD mpixd_schan *mpixd_schan_of(const MPIX_Device_comm *h, char *base, int dst, uint32_t c) {
  return (mpixd_schan *)(base + h->off_schan + ((uint64_t)dst * h->channels + c) * sizeof(mpixd_schan));
}

MPIXD_HD uint32_t mpixd_nslots(const MPIX_Device_comm *h, size_t bytes) {
  return bytes <= MPIXD_INLINE ? 1u : (uint32_t)((bytes + h->slot_bytes - 1) / h->slot_bytes);
}

/* Bytes of chunk j of a message of `bytes` bytes. */
MPIXD_HD size_t mpixd_chunk_len(const MPIX_Device_comm *h, size_t bytes, uint32_t j) {
  if (bytes <= MPIXD_INLINE) return bytes;
  const size_t off = (size_t)j * h->slot_bytes;
  const size_t rest = bytes - off;
  return rest < h->slot_bytes ? rest : h->slot_bytes;
}

/* Copies n bytes, lane `lane` of `lanes` cooperating threads doing its
 * share (16-byte words when both sides allow it). */
MPIXD_HD void mpixd_copy(void *dst, const void *src, size_t n, unsigned lane, unsigned lanes) {
  unsigned char *d = (unsigned char *)dst;
  const unsigned char *s = (const unsigned char *)src;
  size_t done = 0;
  if ((((uintptr_t)d | (uintptr_t)s) & 15) == 0) {
    /* Aligned to 16 so that nvcc emits one 128-bit access per word (with
     * the natural 8-byte alignment it splits every word into two 64-bit
     * accesses, twice the NVLink transactions). Only used on 16-byte
     * aligned pointers: vector accesses on unaligned user buffers fault. */
    typedef struct __attribute__((aligned(16))) { uint64_t a, b; } w16;
    const size_t words = n / 16;
    for (size_t i = lane; i < words; i += lanes) ((w16 *)d)[i] = ((const w16 *)s)[i];
    done = words * 16;
  }
  for (size_t i = done + lane; i < n; i += lanes) d[i] = s[i];
}

/* ---- sender ---- */

/* Claims n tickets on (dst, c) if the ring has room for all of them now;
 * returns 0 and *ticket, or MPIX_DEVICE_AGAIN having claimed nothing. */
MPIXD_HD int mpixd_claim_room(const MPIX_Device_comm *h, mpixd_schan *sc, uint32_t n, uint32_t *ticket) {
  for (;;) {
    /* Credit first: every credit value was written after the tail passed
     * it, so a tail read after the acquire is >= credit. Read the other
     * way round, a stale tail under a fresh credit makes tail - credit wrap
     * to ~4G and reports a full ring that has room (spurious AGAIN). */
    const uint32_t credit = mpixd_load_acquire(&sc->credit);
    const uint32_t tail = mpixd_load_relaxed(&sc->tail);
    if ((uint64_t)(uint32_t)(tail - credit) + n > h->slots) return MPIX_DEVICE_AGAIN;
    if (mpixd_cas(&sc->tail, tail, tail + n) == tail) {
      *ticket = tail;
      return MPIX_DEVICE_SUCCESS;
    }
  }
}

/* Whether ticket t of (dst, c) may be written now. */
MPIXD_HD bool mpixd_room_for(const MPIX_Device_comm *h, mpixd_schan *sc, uint32_t t) {
  return (uint32_t)(t - mpixd_load_acquire(&sc->credit)) < h->slots;
}

/* Writes chunk j of a message whose first ticket is t (room checked by the
 * caller): fields and data by `lanes` threads; the caller then has all lanes
 * done (a barrier when lanes > 1) and lane 0 calls mpixd_publish. */
MPIXD_HD void mpixd_put_chunk(const MPIX_Device_comm *h, int dst, uint32_t c, uint32_t t, uint32_t j, uint32_t nslots,
                              int tag, const void *buf, size_t bytes, unsigned lane, unsigned lanes) {
  const uint32_t pos = t + j;
  const uint32_t slot = pos & (h->slots - 1);
  char *base = h->bases[dst];
  mpixd_entry *e = mpixd_entries(h, base, h->rank, c) + slot;
  const size_t len = mpixd_chunk_len(h, bytes, j);
  if (lane == 0) {
    mpixd_store_relaxed((uint32_t *)&e->tag, (uint32_t)tag); /* read by lock-free peeks */
    e->bytes = (uint32_t)(j == 0 ? bytes : len);
    e->kind = j == 0 ? MPIXD_HEADER : MPIXD_CONT;
    e->nslots = nslots;
  }
  const unsigned char *src = (const unsigned char *)buf + (size_t)j * h->slot_bytes;
  if (bytes <= MPIXD_INLINE) mpixd_copy(e->data, src, len, lane, lanes);
  else mpixd_copy(mpixd_staging(h, base, h->rank, c, slot), src, len, lane, lanes);
}

MPIXD_HD void mpixd_publish(const MPIX_Device_comm *h, int dst, uint32_t c, uint32_t pos) {
  mpixd_entry *e = mpixd_entries(h, h->bases[dst], h->rank, c) + (pos & (h->slots - 1));
  mpixd_fence_system();
  mpixd_store_release(&e->seq, pos + 1);
}

/* ---- receiver (lock of the (src, c) queue held) ---- */

/* Takes in every entry that arrived, in ticket order: headers matched to
 * the oldest posted receive of their tag or left unexpected. */
MPIXD_HD void mpixd_take_arrivals(const MPIX_Device_comm *h, int src, uint32_t c, mpixd_rchan *rc) {
  mpixd_entry *ring = mpixd_entries(h, h->local, src, c);
  uint32_t *states = mpixd_slot_states(h, rc);
  mpixd_posted *posted = mpixd_posted_of(h, rc);
  for (;;) {
    const uint32_t pos = rc->arr;
    const uint32_t slot = pos & (h->slots - 1);
    mpixd_entry *e = ring + slot;
    if (mpixd_load_acquire(&e->seq) != pos + 1) break;
    if (e->kind == MPIXD_CONT) {
      if (states[slot] == MPIXD_S_FREE) mpixd_store_relaxed(&states[slot], MPIXD_S_CONT);
    } else {
      const int32_t tag = e->tag;
      int best = -1;
      for (uint32_t p = 0; p < h->posted; ++p) {
        if (posted[p].state == MPIXD_P_POSTED && posted[p].tag == tag &&
            (best < 0 || mpixd_diff(posted[p].order, posted[best].order) < 0))
          best = (int)p;
      }
      if (best >= 0) {
        posted[best].ticket = pos;
        mpixd_store_relaxed(&posted[best].state, MPIXD_P_MATCHED);
        mpixd_store_relaxed(&states[slot], MPIXD_S_BOUND);
      } else {
        mpixd_store_relaxed(&states[slot], MPIXD_S_UNEXP);
      }
    }
    mpixd_store_relaxed(&rc->arr, pos + 1);
  }
}

/* Releases the consumed prefix and returns its credits to the sender. */
MPIXD_HD void mpixd_release(const MPIX_Device_comm *h, int src, uint32_t c, mpixd_rchan *rc) {
  uint32_t *states = mpixd_slot_states(h, rc);
  uint32_t lo = rc->lo;
  const uint32_t start = lo;
  while (lo != rc->arr && states[lo & (h->slots - 1)] == MPIXD_S_DONE) {
    mpixd_store_relaxed(&states[lo & (h->slots - 1)], MPIXD_S_FREE);
    ++lo;
  }
  if (lo == start) return;
  mpixd_store_relaxed(&rc->lo, lo);
  /* The slots' data was read before: order those reads before the credit. */
  mpixd_fence_system();
  mpixd_store_release(&mpixd_schan_of(h, h->bases[src], h->rank, c)->credit, lo);
}

/* Receive side of one message chunk: whether ticket pos has arrived. */
MPIXD_HD bool mpixd_arrived(const MPIX_Device_comm *h, int src, uint32_t c, uint32_t pos) {
  const mpixd_entry *e = mpixd_entries(h, h->local, src, c) + (pos & (h->slots - 1));
  return mpixd_load_acquire(&e->seq) == pos + 1;
}

/* Copies chunk j of the message bound to r into its buffer (lanes
 * cooperating; truncated to the buffer). */
MPIXD_HD void mpixd_get_chunk(const MPIX_Device_comm *h, const MPIX_Device_request *r, uint32_t j, unsigned lane,
                              unsigned lanes) {
  const uint32_t pos = r->ticket + j;
  const uint32_t slot = pos & (h->slots - 1);
  const size_t off = (size_t)j * h->slot_bytes;
  if (off >= r->bytes && r->msg_bytes > MPIXD_INLINE) return;
  size_t len = mpixd_chunk_len(h, r->msg_bytes, j);
  if (r->msg_bytes <= MPIXD_INLINE) {
    if (len > r->bytes) len = r->bytes;
    mpixd_entry *e = mpixd_entries(h, h->local, r->peer, r->chan) + slot;
    mpixd_copy(r->buf, e->data, len, lane, lanes);
    return;
  }
  if (off + len > r->bytes) len = r->bytes - off;
  mpixd_copy((unsigned char *)r->buf + off, mpixd_staging(h, h->local, r->peer, r->chan, slot), len, lane, lanes);
}

/* Reads the header of the message bound to r (at r->ticket). */
MPIXD_HD void mpixd_read_header(const MPIX_Device_comm *h, MPIX_Device_request *r) {
  const mpixd_entry *e = mpixd_entries(h, h->local, r->peer, r->chan) + (r->ticket & (h->slots - 1));
  r->msg_bytes = e->bytes;
  r->nslots = e->nslots;
  r->next = 0;
  r->state = MPIXD_RECV_BOUND;
}

/* Marks chunk ticket pos consumed and releases what it can; false (nothing
 * done) when the queue's lock is busy. */
MPIXD_HD bool mpixd_try_consume(const MPIX_Device_comm *h, int src, uint32_t c, uint32_t pos) {
  mpixd_rchan *rc = mpixd_rchan_of(h, src, c);
  if (!mpixd_try_lock(&rc->lock)) return false;
  mpixd_store_relaxed(&mpixd_slot_states(h, rc)[pos & (h->slots - 1)], MPIXD_S_DONE);
  /* Continuation chunks are consumed as they land, possibly before any
   * receive took them in: take them in so that `lo` can pass them. */
  mpixd_take_arrivals(h, src, c, rc);
  mpixd_release(h, src, c, rc);
  mpixd_unlock(&rc->lock);
  return true;
}

/* ---- argument checks ---- */

MPIXD_HD int mpixd_check(const MPIX_Device_comm *h, const void *buf, size_t bytes, int peer, int tag,
                         const MPIX_Device_request *r) {
  if (r == NULL || h->size <= 0) return MPIX_DEVICE_ERR_ARG;
  if (h->path == MPIXD_PATH_IPC ? (h->bases == NULL || h->channels == 0) : (h->pq == NULL || h->pq_slots == 0))
    return MPIX_DEVICE_ERR_ARG;
  if (peer < 0 || peer >= h->size) return MPIX_DEVICE_ERR_RANK;
  if (tag < 0 || tag > h->tag_ub) return MPIX_DEVICE_ERR_TAG;
  if (buf == NULL && bytes > 0) return MPIX_DEVICE_ERR_ARG;
  if (bytes > 0xffffffffull) return MPIX_DEVICE_ERR_ARG; /* the entry's 32-bit size */
  return MPIX_DEVICE_SUCCESS;
}

/* ---- proxy path ---- */

MPIXD_HD unsigned char *mpixd_proxy_bounce(const MPIX_Device_comm *h, uint32_t ticket) {
  return h->pq_bounce + (size_t)(ticket & (h->pq_slots - 1)) * h->pq_inline;
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

/* Claims a descriptor and posts the operation; AGAIN when the queue is full. */
MPIXD_HD int mpixd_proxy_post(const MPIX_Device_comm *h, uint32_t op, void *buf, size_t bytes, int peer, int tag,
                              MPIX_Device_request *r) {
  uint32_t t;
  for (;;) {
    /* Credit before tail, as in mpixd_claim_room (no spurious AGAIN). */
    const uint32_t credit = mpixd_load_acquire(h->pq_credit);
    t = mpixd_load_relaxed(h->pq_tail);
    if ((uint32_t)(t - credit) >= h->pq_slots) return MPIX_DEVICE_AGAIN;
    if (mpixd_cas(h->pq_tail, t, t + 1) == t) break;
  }
  mpixd_pdesc *d = h->pq + (t & (h->pq_slots - 1));
  d->op = op;
  d->peer = peer;
  d->tag = tag;
  d->bytes = bytes;
  const bool inl = bytes <= MPIXD_INLINE;
  const bool bounce = !inl && bytes <= h->pq_inline;
  d->buf = inl || bounce ? 0 : (uint64_t)(uintptr_t)buf;
  if (op == MPIXD_OP_SEND && inl) mpixd_copy(d->data, buf, bytes, 0, 1);
  if (op == MPIXD_OP_SEND && bounce) mpixd_copy(mpixd_proxy_bounce(h, t), buf, bytes, 0, 1);
  mpixd_fence_system();
  mpixd_store_release(&d->seq, t + 1);
  r->peer = peer;
  r->tag = tag;
  r->buf = buf;
  r->bytes = bytes;
  r->msg_bytes = op == MPIXD_OP_SEND ? bytes : 0;
  r->ticket = t;
  r->flags = op;
  r->status = MPIX_DEVICE_PENDING;
  r->state = MPIXD_PROXIED;
  return MPIX_DEVICE_SUCCESS;
}

MPIXD_HD int mpixd_proxy_test(const MPIX_Device_comm *h, MPIX_Device_request *r) {
  mpixd_pcomp *c = h->pc + (r->ticket & (h->pq_slots - 1));
  if (mpixd_load_acquire(&c->seq) != r->ticket + 1) return MPIX_DEVICE_PENDING;
  r->status = c->status;
  if (r->flags == MPIXD_OP_RECV) {
    r->msg_bytes = c->bytes;
    const size_t n = c->bytes < r->bytes ? (size_t)c->bytes : r->bytes;
    if (r->bytes <= MPIXD_INLINE) mpixd_copy(r->buf, c->data, n, 0, 1);
    else if (r->bytes <= h->pq_inline) mpixd_copy_from_bounce(r->buf, mpixd_proxy_bounce(h, r->ticket), n);
  }
  mpixd_fence_system();
  mpixd_store_release(&c->released, r->ticket + 1);
  r->state = MPIXD_INACTIVE;
  return r->status;
}

/* ---- the calls, for one thread (the _block variants in ops.cuh build on
 * the same pieces) ---- */

/* Starts a send whose first ticket is t: writes what the ring has room for. */
MPIXD_HD int mpixd_send_progress(const MPIX_Device_comm *h, MPIX_Device_request *r) {
  mpixd_schan *sc = mpixd_schan_of(h, h->local, r->peer, r->chan);
  while (r->next < r->nslots) {
    const uint32_t pos = r->ticket + r->next;
    if (!mpixd_room_for(h, sc, pos)) return MPIX_DEVICE_PENDING;
    mpixd_put_chunk(h, r->peer, r->chan, r->ticket, r->next, r->nslots, r->tag, r->buf, r->bytes, 0, 1);
    mpixd_publish(h, r->peer, r->chan, pos);
    ++r->next;
  }
  r->state = MPIXD_DONE;
  r->status = MPIX_DEVICE_SUCCESS;
  return MPIX_DEVICE_SUCCESS;
}

MPIXD_HD void mpixd_send_init(const MPIX_Device_comm *h, MPIX_Device_request *r, const void *buf, size_t bytes,
                              int peer, int tag) {
  r->peer = peer;
  r->tag = tag;
  r->buf = (void *)buf;
  r->bytes = bytes;
  r->msg_bytes = bytes;
  r->chan = mpixd_channel(h, tag);
  r->nslots = mpixd_nslots(h, bytes);
  r->next = 0;
  r->flags = 0;
  r->status = MPIX_DEVICE_PENDING;
}

/* Host/one-thread MPIX_Isend: a message that fits the ring is written now
 * or not at all (MPIX_DEVICE_AGAIN); a longer one claims its tickets and
 * streams on in mpixd_test. */
MPIXD_HD int mpixd_isend(const MPIX_Device_comm *h, const void *buf, size_t bytes, int peer, int tag,
                         MPIX_Device_request *r) {
  const int rc = mpixd_check(h, buf, bytes, peer, tag, r);
  if (rc != MPIX_DEVICE_SUCCESS) return rc;
  if (h->path == MPIXD_PATH_PROXY) return mpixd_proxy_post(h, MPIXD_OP_SEND, (void *)buf, bytes, peer, tag, r);
  mpixd_send_init(h, r, buf, bytes, peer, tag);
  mpixd_schan *sc = mpixd_schan_of(h, h->local, peer, r->chan);
  if (r->nslots <= h->slots) {
    if (mpixd_claim_room(h, sc, r->nslots, &r->ticket) != MPIX_DEVICE_SUCCESS) {
      r->state = MPIXD_INACTIVE;
      return MPIX_DEVICE_AGAIN;
    }
  } else {
    r->ticket = mpixd_fetch_add(&sc->tail, r->nslots);
  }
  r->state = MPIXD_SEND_STREAM;
  mpixd_send_progress(h, r);
  return MPIX_DEVICE_SUCCESS;
}

/* Receive of an inline message bound under the lock: copied and released
 * in the same critical section. */
MPIXD_HD void mpixd_recv_inline_now(const MPIX_Device_comm *h, MPIX_Device_request *r, mpixd_rchan *rc) {
  mpixd_get_chunk(h, r, 0, 0, 1);
  mpixd_store_relaxed(&mpixd_slot_states(h, rc)[r->ticket & (h->slots - 1)], MPIXD_S_DONE);
  mpixd_release(h, r->peer, r->chan, rc);
  r->next = 1;
  r->state = MPIXD_DONE;
  r->status = r->msg_bytes > r->bytes ? MPIX_DEVICE_ERR_TRUNCATE : MPIX_DEVICE_SUCCESS;
}

/* Without the lock: whether taking it could start a receive of `tag`
 * (an arrival to take in, an unexpected message of the tag, or a free
 * posted entry). A hint: a stale word sends us to the lock for nothing or
 * to the next try. It keeps receives that wait for room in a full posted
 * table from queueing on the lock that the receives they wait for need. */
MPIXD_HD bool mpixd_irecv_could_start(const MPIX_Device_comm *h, mpixd_rchan *rc, const mpixd_entry *ring, int tag) {
  const uint32_t arr = mpixd_load_relaxed(&rc->arr);
  if (mpixd_load_relaxed(&ring[arr & (h->slots - 1)].seq) == arr + 1) return true;
  const mpixd_posted *posted = mpixd_posted_of(h, rc);
  for (uint32_t p = 0; p < h->posted; ++p)
    if (mpixd_load_relaxed(&posted[p].state) == MPIXD_P_FREE) return true;
  const uint32_t *states = mpixd_slot_states(h, rc);
  const uint32_t lo = mpixd_load_relaxed(&rc->lo);
  for (uint32_t pos = lo; pos != arr && pos - lo < h->slots; ++pos) {
    const uint32_t slot = pos & (h->slots - 1);
    if (mpixd_load_relaxed(&states[slot]) == MPIXD_S_UNEXP &&
        (int32_t)mpixd_load_relaxed((const uint32_t *)&ring[slot].tag) == tag)
      return true;
  }
  return false;
}

MPIXD_HD int mpixd_irecv(const MPIX_Device_comm *h, void *buf, size_t bytes, int peer, int tag,
                         MPIX_Device_request *r) {
  const int rc0 = mpixd_check(h, buf, bytes, peer, tag, r);
  if (rc0 != MPIX_DEVICE_SUCCESS) return rc0;
  if (h->path == MPIXD_PATH_PROXY) return mpixd_proxy_post(h, MPIXD_OP_RECV, buf, bytes, peer, tag, r);
  r->peer = peer;
  r->tag = tag;
  r->buf = buf;
  r->bytes = bytes;
  r->msg_bytes = 0;
  r->chan = mpixd_channel(h, tag);
  r->flags = 0;
  r->status = MPIX_DEVICE_PENDING;
  mpixd_rchan *rc = mpixd_rchan_of(h, peer, r->chan);
  uint32_t *states = mpixd_slot_states(h, rc);
  mpixd_entry *ring = mpixd_entries(h, h->local, peer, r->chan);
  if (!mpixd_irecv_could_start(h, rc, ring, tag) || !mpixd_try_lock(&rc->lock)) {
    r->state = MPIXD_INACTIVE;
    return MPIX_DEVICE_AGAIN;
  }
  mpixd_take_arrivals(h, peer, r->chan, rc);
  for (uint32_t pos = rc->lo; pos != rc->arr; ++pos) {
    const uint32_t slot = pos & (h->slots - 1);
    if (states[slot] == MPIXD_S_UNEXP && ring[slot].tag == tag) {
      mpixd_store_relaxed(&states[slot], MPIXD_S_BOUND);
      r->ticket = pos;
      mpixd_read_header(h, r);
      if (r->nslots == 1 && r->msg_bytes <= MPIXD_INLINE) mpixd_recv_inline_now(h, r, rc);
      mpixd_unlock(&rc->lock);
      return MPIX_DEVICE_SUCCESS;
    }
  }
  mpixd_posted *posted = mpixd_posted_of(h, rc);
  for (uint32_t p = 0; p < h->posted; ++p) {
    if (posted[p].state != MPIXD_P_FREE) continue;
    posted[p].tag = tag;
    posted[p].order = rc->post_order++;
    mpixd_store_relaxed(&posted[p].state, MPIXD_P_POSTED);
    r->posted = p;
    r->state = MPIXD_RECV_POSTED;
    mpixd_unlock(&rc->lock);
    return MPIX_DEVICE_SUCCESS;
  }
  mpixd_unlock(&rc->lock);
  r->state = MPIXD_INACTIVE;
  return MPIX_DEVICE_AGAIN;
}

/* A posted receive: whether it got its message (binds r if so). */
MPIXD_HD bool mpixd_recv_bind(const MPIX_Device_comm *h, MPIX_Device_request *r) {
  mpixd_rchan *rc = mpixd_rchan_of(h, r->peer, r->chan);
  mpixd_posted *p = mpixd_posted_of(h, rc) + r->posted;
  /* A peek without the lock first: the lock is needed only once this
   * receive was matched or an arrival waits to be taken in. So receives
   * that wait poll two words instead of queueing on the channel's lock,
   * and the thread that takes in their messages (and the owners of the
   * receives it matches) find the lock free. A stale `arr` only sends us
   * to the lock for nothing (the slot then holds a newer ticket or the
   * same one, already taken in); a missed update is seen at the next poll. */
  if (mpixd_load_relaxed(&p->state) != MPIXD_P_MATCHED) {
    const uint32_t arr = mpixd_load_relaxed(&rc->arr);
    const mpixd_entry *e = mpixd_entries(h, h->local, r->peer, r->chan) + (arr & (h->slots - 1));
    if (mpixd_load_relaxed(&e->seq) != arr + 1) return false;
  }
  bool bound = false;
  if (!mpixd_try_lock(&rc->lock)) return false;
  mpixd_take_arrivals(h, r->peer, r->chan, rc);
  if (p->state == MPIXD_P_MATCHED) {
    r->ticket = p->ticket;
    mpixd_store_relaxed(&p->state, MPIXD_P_FREE);
    mpixd_read_header(h, r);
    if (r->nslots == 1 && r->msg_bytes <= MPIXD_INLINE) mpixd_recv_inline_now(h, r, rc);
    bound = true;
  }
  mpixd_unlock(&rc->lock);
  return bound;
}

/* One thread's MPIX_Test. */
MPIXD_HD int mpixd_test(const MPIX_Device_comm *h, MPIX_Device_request *r) {
  if (r == NULL) return MPIX_DEVICE_ERR_ARG;
  switch (r->state) {
    case MPIXD_DONE: r->state = MPIXD_INACTIVE; return r->status;
    case MPIXD_PROXIED: return mpixd_proxy_test(h, r);
    case MPIXD_SEND_STREAM:
      if (mpixd_send_progress(h, r) != MPIX_DEVICE_SUCCESS) return MPIX_DEVICE_PENDING;
      r->state = MPIXD_INACTIVE;
      return r->status;
    case MPIXD_RECV_POSTED:
      if (!mpixd_recv_bind(h, r)) return MPIX_DEVICE_PENDING;
      if (r->state == MPIXD_DONE) { r->state = MPIXD_INACTIVE; return r->status; }
      /* fall through */
    case MPIXD_RECV_BOUND:
      while (r->next < r->nslots) {
        const uint32_t pos = r->ticket + r->next;
        if (!(r->flags & MPIXD_F_COPIED)) {
          if (!mpixd_arrived(h, r->peer, r->chan, pos)) return MPIX_DEVICE_PENDING;
          mpixd_get_chunk(h, r, r->next, 0, 1);
          r->flags |= MPIXD_F_COPIED;
        }
        if (!mpixd_try_consume(h, r->peer, r->chan, pos)) return MPIX_DEVICE_PENDING;
        r->flags &= ~MPIXD_F_COPIED;
        ++r->next;
      }
      r->state = MPIXD_INACTIVE;
      r->status = r->msg_bytes > r->bytes ? MPIX_DEVICE_ERR_TRUNCATE : MPIX_DEVICE_SUCCESS;
      return r->status;
    default: return MPIX_DEVICE_ERR_REQUEST;
  }
}

#endif
