/*
 * mpix device point-to-point: the device calls (included by mpix_device.h
 * when compiled by nvcc). Everything is inline: user kernels need no -rdc.
 * The protocol itself is in proto.h.
 */
#ifndef MPIX_DEVICE_OPS_CUH
#define MPIX_DEVICE_OPS_CUH

#include "calls.h"

/* Wait-loop backoff ceilings (ns): short on the IPC path, where the wait is
 * for a peer GPU's store; longer on the proxy path (see mpixd_backoff). */
#define MPIXD_BACKOFF_MIN_NS 32u
#define MPIXD_BACKOFF_IPC_NS 256u
#define MPIXD_BACKOFF_PROXY_NS 4096u

__device__ __forceinline__ unsigned mpixd_backoff_max(int path) {
  return path == MPIXD_PATH_PROXY ? MPIXD_BACKOFF_PROXY_NS : MPIXD_BACKOFF_IPC_NS;
}

/* The slot (and key, and a lane cell's payload word) of message `seq` of
 * (peer, tag) in this rank's memory, once it is there: its lane cell or its
 * buckets are known, so only they are polled. */
__device__ __forceinline__ int32_t mpixd_wait_numbered(const MPIX_Device_comm *h, int peer, int tag, uint32_t seq,
                                                       uint64_t *key, uint64_t *payload) {
  int32_t slot;
  unsigned ns = MPIXD_BACKOFF_MIN_NS;
  if (mpixd_lane(h, tag)) {
    while ((slot = mpixd_find_slot(h, peer, tag, seq, key, payload)) < 0) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
    return slot;
  }
  uint64_t *keys = mpixd_mkeys(h, h->local, peer);
  const uint32_t b0 = mpixd_bucket(h, tag, seq);
  const uint64_t want = mpixd_mkey(tag, seq);
  *payload = 0;
  while ((slot = mpixd_find_at(h->buckets, keys, b0, want, key)) < 0) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
  return slot;
}

/* The device calls take the handle by reference. Taken by value (as they
 * were), nvcc 13.0 miscompiled kernels that pass their own by-value handle
 * to many of them (test/gpu/dev_p2p's calls_send: an invalid __local__ read
 * caught by compute-sanitizer on an H100, 2026-11-24): the inlined callee's
 * copy of the handle became the kernel parameter, addressed in param space
 * (cvta.param) and then read as local memory (cvta.to.local). By reference,
 * the fields are read from the parameter directly. test/gpu/check-ptx.sh
 * looks for the pattern in the programs built here. */
#define MPIXD_OF(comm) (&(comm))

/* Nonblocking send of `bytes` bytes to `peer` with `tag`. Returns
 * MPIX_DEVICE_SUCCESS with *req active (complete it with MPIX_Test or
 * MPIX_Wait), or an error code with nothing sent. A message the receiver's
 * table (and ring) have room for is written before the call returns; else
 * it goes out while MPIX_Test/MPIX_Wait is called on it. Proxy path:
 * MPIX_DEVICE_AGAIN when its queue is full (nothing was sent; retry). */
__device__ inline int MPIX_Isend(const void *buf, size_t bytes, int peer, int tag, const MPIX_Device_comm &comm,
                                 MPIX_Device_request *req) {
  return mpixd_isend_ex(MPIXD_OF(comm), buf, bytes, peer, tag, req, true);
}

/* Nonblocking receive of at most `bytes` bytes from `peer` with `tag` (no
 * wildcards). Receives of one (peer, tag) match its messages in the order
 * of their MPIX_Irecv calls (lanes of a warp calling together: in lane
 * order). Proxy path: MPIX_DEVICE_AGAIN when its queue is full. */
__device__ inline int MPIX_Irecv(void *buf, size_t bytes, int peer, int tag, const MPIX_Device_comm &comm,
                                 MPIX_Device_request *req) {
  return mpixd_irecv_ex(MPIXD_OF(comm), buf, bytes, peer, tag, req, true);
}

/* MPIX_DEVICE_PENDING while not complete; then the request's final status
 * (MPIX_DEVICE_SUCCESS, MPIX_DEVICE_ERR_TRUNCATE), the request inactive. */
__device__ inline int MPIX_Test(MPIX_Device_request *req, const MPIX_Device_comm &comm) {
  return mpixd_test(MPIXD_OF(comm), req);
}

__device__ inline int MPIX_Wait(MPIX_Device_request *req, const MPIX_Device_comm &comm) {
  const MPIX_Device_comm *h = MPIXD_OF(comm);
  int rc;
  unsigned ns = MPIXD_BACKOFF_MIN_NS;
  while ((rc = mpixd_test(h, req)) == MPIX_DEVICE_PENDING) mpixd_backoff(&ns, mpixd_backoff_max(h->path));
  return rc;
}

/* Blocking: returns once the message is out of the buffer. On the IPC path
 * a message carried in the table entry goes straight there, without the
 * request machinery (a half round trip is a few memory operations, so the
 * instructions around them count). */
__device__ inline int MPIX_Send(const void *buf, size_t bytes, int peer, int tag, const MPIX_Device_comm &comm) {
  const MPIX_Device_comm *h = MPIXD_OF(comm);
  unsigned ns = MPIXD_BACKOFF_MIN_NS;
  if (h->path == MPIXD_PATH_IPC && bytes <= MPIXD_INLINE) {
    int rc = mpixd_check_args(h, buf, bytes, peer, tag);
    if (rc != MPIX_DEVICE_SUCCESS) return rc;
    /* Issued first: its load overlaps the atomics below. */
    char *const base = h->bases[peer];
    const bool lane = mpixd_lane(h, tag);
    /* A lane key's turn words are loaded beside the numbering atomic (all
     * of them: which one is this message's is known only after it), so
     * the send costs one memory round trip before its put, not two. */
    uint32_t turns[MPIXD_LANE];
    if (lane) mpixd_load_turns(mpixd_lane_turns(h, h->local, peer, tag), mpixd_near(h, peer), turns);
    uint32_t seq;
    rc = mpixd_take_seq_warp(h, true, peer, tag, &seq);
    if (rc != MPIX_DEVICE_SUCCESS) return rc;
    uint32_t slot;
    if (lane && mpixd_lane_open(turns[seq & (MPIXD_LANE - 1)], seq)) {
      /* The put's key depends on the turn word's value: the put cannot
       * issue before that load is performed (an acquire's ordering, by
       * dependency). */
      slot = mpixd_lane_slot(tag, seq) | mpixd_zero_of(turns[seq & (MPIXD_LANE - 1)]);
    } else {
      while (!mpixd_claim_slot(h, peer, tag, seq, &slot)) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
    }
    mpixd_post_small(h, peer, base, slot, tag, seq, (uint32_t)bytes, buf);
    return MPIX_DEVICE_SUCCESS;
  }
  MPIX_Device_request req;
  int rc;
  while ((rc = MPIX_Isend(buf, bytes, peer, tag, comm, &req)) == MPIX_DEVICE_AGAIN)
    mpixd_backoff(&ns, mpixd_backoff_max(h->path));
  return rc == MPIX_DEVICE_SUCCESS ? MPIX_Wait(&req, comm) : rc;
}

/* Blocking receive. On the IPC path it polls its message's place in the
 * table directly (computed once), then finishes like MPIX_Wait. */
__device__ inline int MPIX_Recv(void *buf, size_t bytes, int peer, int tag, const MPIX_Device_comm &comm,
                                size_t *received) {
  const MPIX_Device_comm *h = MPIXD_OF(comm);
  MPIX_Device_request req;
  int rc;
  unsigned ns = MPIXD_BACKOFF_MIN_NS;
  if (h->path == MPIXD_PATH_IPC) {
    rc = mpixd_check_args(h, buf, bytes, peer, tag);
    if (rc != MPIX_DEVICE_SUCCESS) return rc;
    char *const src_base = h->bases[peer];  // for freeing the way; loaded while waiting
    uint32_t seq;
    rc = mpixd_take_seq_warp(h, false, peer, tag, &seq);
    if (rc != MPIX_DEVICE_SUCCESS) return rc;
    uint64_t key = 0, payload = 0;
    const int32_t slot = mpixd_wait_numbered(h, peer, tag, seq, &key, &payload);
    mpixd_recv_start(&req, buf, bytes, peer, tag, seq);
    mpixd_recv_take(h, &req, slot, key, payload, src_base);
  } else {
    while ((rc = MPIX_Irecv(buf, bytes, peer, tag, comm, &req)) == MPIX_DEVICE_AGAIN)
      mpixd_backoff(&ns, mpixd_backoff_max(h->path));
    if (rc != MPIX_DEVICE_SUCCESS) return rc;
  }
  rc = MPIX_Wait(&req, comm);
  if (received) *received = req.msg_bytes;
  return rc;
}

/* ---- block-cooperative variants: every thread of the block calls with
 * the same arguments; thread 0 runs the protocol, all threads copy. ---- */

/* Chunks moved per round of the block variants: one barrier pair and one
 * fence per round instead of per chunk. */
#define MPIXD_BLOCK_BATCH 8u

__device__ __forceinline__ unsigned mpixd_block_lane() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

/* The medium message bound to r into its buffer by every lane of the
 * block (the same r for all), then its slots returned by lane 0 once
 * every lane has its lines. */
__device__ inline void mpixd_mid_get_block(const MPIX_Device_comm *h, const MPIX_Device_request *r, unsigned lane,
                                           unsigned lanes) {
  mpixd_mid_get(h, r, lane, lanes);
  __syncthreads();
  if (lane == 0) mpixd_mid_release(h, r, 0);
}

/* The IPC path of MPIX_Send_block. numbered: the message's number within
 * its (peer, tag) is `given` instead of one taken from the counters
 * (operations a CUDA stream runs are numbered by the host, in enqueue
 * order: device/stream_exec.cu). */
__device__ inline int mpixd_send_block(const MPIX_Device_comm *h, const void *buf, size_t bytes, int peer, int tag,
                                       bool numbered, uint32_t given) {
  __shared__ int s_rc;
  __shared__ uint32_t s_k;
  __shared__ MPIX_Device_request s_req;
  const unsigned lane = mpixd_block_lane();
  const unsigned lanes = blockDim.x * blockDim.y * blockDim.z;
  if (lane == 0) {
    s_rc = mpixd_check(h, buf, bytes, peer, tag, &s_req);
    uint32_t seq = given;
    if (s_rc == MPIX_DEVICE_SUCCESS && !numbered) s_rc = mpixd_take_seq(h, true, peer, tag, 1, &seq);
    if (s_rc == MPIX_DEVICE_SUCCESS) {
      /* Tickets and the table entry (the entry can go before the chunks:
       * the receiver waits for each chunk's own sequence word). */
      MPIX_Device_request *r = &s_req;
      r->peer = peer;
      r->tag = tag;
      r->buf = (void *)buf;
      r->bytes = bytes;
      r->chan = mpixd_channel(h, tag);
      r->flags = mpixd_mid(h, peer, bytes) ? MPIXD_R_MID : 0;
      r->nslots = r->flags ? 0 : mpixd_nslots(h, bytes);
      r->seq = seq;
      r->ticket = 0;
      unsigned ns = MPIXD_BACKOFF_MIN_NS;
      if (r->flags)
        while (mpixd_mid_claim(h, peer, r->chan, mpixd_mid_nslots(bytes), &r->ticket) != MPIX_DEVICE_SUCCESS)
          mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
      if (r->nslots > 0) r->ticket = mpixd_fetch_add(&mpixd_schan_of(h, h->local, peer, r->chan)->tail, r->nslots);
      uint32_t slot;
      ns = MPIXD_BACKOFF_MIN_NS;
      while (!mpixd_claim_slot(h, peer, tag, seq, &slot)) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
      char *const base = h->bases[peer];
      /* A medium message is announced before its lines are written: the
       * receiver waits for each line's flag. */
      if (r->flags) mpixd_mid_post(h, peer, base, slot, tag, seq, (uint32_t)bytes, r->ticket);
      else if (r->nslots == 0) mpixd_post_small(h, peer, base, slot, tag, seq, (uint32_t)bytes, buf);
      else mpixd_post_entry(h, peer, base, slot, tag, seq, (uint32_t)bytes, r->chan, r->ticket, r->nslots, buf);
    }
  }
  __syncthreads();
  const int rc = s_rc;
  if (rc != MPIX_DEVICE_SUCCESS) {
    __syncthreads();  // every lane read s_rc before a next call rewrites it
    return rc;
  }
  if (s_req.flags & MPIXD_R_MID) {
    mpixd_mid_put(h, peer, s_req.chan, s_req.ticket, buf, bytes, lane, lanes);
    __syncthreads();  // every lane has read buf: the call may return
    return MPIX_DEVICE_SUCCESS;
  }
  const uint32_t n = s_req.nslots;
  const bool near = mpixd_near(h, peer);
  for (uint32_t next = 0; next < n;) {
    if (lane == 0) {
      mpixd_schan *sc = mpixd_schan_of(h, h->local, peer, s_req.chan);
      const uint32_t want = n - next < MPIXD_BLOCK_BATCH ? n - next : MPIXD_BLOCK_BATCH;
      uint32_t k;
      unsigned ns = MPIXD_BACKOFF_MIN_NS;
      while ((k = mpixd_room(h, sc, s_req.ticket + next, want, near)) == 0) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
      s_k = k;
    }
    __syncthreads();
    const uint32_t k = s_k;
    for (uint32_t j = next; j < next + k; ++j) mpixd_put_chunk(h, peer, s_req.chan, s_req.ticket, j, buf, bytes, lane, lanes);
    __syncthreads();
    if (lane == 0) mpixd_publish_chunks(h, peer, s_req.chan, s_req.ticket + next, k);
    next += k;
  }
  __syncthreads();
  return MPIX_DEVICE_SUCCESS;
}

__device__ inline int MPIX_Send_block(const void *buf, size_t bytes, int peer, int tag, const MPIX_Device_comm &comm) {
  __shared__ int s_rc;
  const MPIX_Device_comm *h = MPIXD_OF(comm);
  /* The block's writes to buf before the call are done before anyone
   * reads it (lane 0 for an inline message, the host on the proxy path:
   * lane 0's release orders them, through this barrier). */
  __syncthreads();
  if (h->path == MPIXD_PATH_PROXY) {  // the host moves the data: one thread posts
    if (mpixd_block_lane() == 0) s_rc = MPIX_Send(buf, bytes, peer, tag, comm);
    __syncthreads();
    const int rc = s_rc;
    __syncthreads();
    return rc;
  }
  return mpixd_send_block(h, buf, bytes, peer, tag, false, 0);
}

/* The IPC path of MPIX_Recv_block; numbered and given as for
 * mpixd_send_block; defer (numbered only): the table way is left for the
 * caller to free (mpixd_free_deferred). */
__device__ inline int mpixd_recv_block(const MPIX_Device_comm *h, void *buf, size_t bytes, int peer, int tag,
                                       size_t *received, bool numbered, uint32_t given, uint32_t *defer = nullptr) {
  __shared__ int s_rc;
  __shared__ uint32_t s_k;
  __shared__ MPIX_Device_request s_req;
  const unsigned lane = mpixd_block_lane();
  const unsigned lanes = blockDim.x * blockDim.y * blockDim.z;
  if (lane == 0) {
    unsigned ns = MPIXD_BACKOFF_MIN_NS;
    if (numbered) {
      /* The message's place in the table is known: poll it directly, as
       * MPIX_Recv does. */
      s_rc = mpixd_check(h, buf, bytes, peer, tag, &s_req);
      if (s_rc == MPIX_DEVICE_SUCCESS) {
        char *const src_base = h->bases[peer];
        uint64_t key = 0, payload = 0;
        const int32_t slot = mpixd_wait_numbered(h, peer, tag, given, &key, &payload);
        mpixd_recv_start(&s_req, buf, bytes, peer, tag, given);
        mpixd_recv_take_ex(h, &s_req, slot, key, payload, src_base, defer);
      }
    } else {
      s_rc = mpixd_irecv(h, buf, bytes, peer, tag, &s_req);
      if (s_rc == MPIX_DEVICE_SUCCESS)
        while (!mpixd_recv_match(h, &s_req)) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
    }
  }
  __syncthreads();
  if (s_rc != MPIX_DEVICE_SUCCESS) {
    const int rc = s_rc;
    __syncthreads();  // all lanes read s_rc before a next call rewrites it
    return rc;
  }
  if (s_req.state == MPIXD_RECV_BOUND && (s_req.flags & MPIXD_R_MID)) mpixd_mid_get_block(h, &s_req, lane, lanes);
  if (s_req.state == MPIXD_RECV_BOUND && (s_req.flags & MPIXD_R_PULL)) {
    mpixd_pull_copy(&s_req, lane, lanes);
    __syncthreads();
    if (lane == 0) mpixd_pull_signal(h, &s_req);
  }
  const uint32_t n =
      s_req.state == MPIXD_RECV_BOUND && !(s_req.flags & (MPIXD_R_MID | MPIXD_R_PULL)) ? s_req.nslots : 0;
  for (uint32_t next = 0; next < n;) {
    if (lane == 0) {
      /* Relaxed polls, then one fence: it orders every lane's reads of the
       * chunks after their sequence words (through the barrier below). */
      unsigned ns = MPIXD_BACKOFF_MIN_NS;
      while (!mpixd_arrived_relaxed(h, peer, s_req.chan, s_req.ticket + next)) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
      uint32_t k = 1;
      while (next + k < n && k < MPIXD_BLOCK_BATCH && mpixd_arrived_relaxed(h, peer, s_req.chan, s_req.ticket + next + k))
        ++k;
      mpixd_fence_at(mpixd_near(h, peer));
      s_k = k;
    }
    __syncthreads();
    const uint32_t k = s_k;
    for (uint32_t j = next; j < next + k; ++j) mpixd_get_chunk(h, &s_req, j, lane, lanes);
    __syncthreads();
    if (lane == 0) {
      mpixd_mark_done_batch(h, peer, s_req.chan, s_req.ticket + next, k);
      mpixd_ring_release(h, peer, s_req.chan);
    }
    next += k;
  }
  __syncthreads();
  const int rc = mpixd_recv_status(&s_req);
  if (received) *received = s_req.msg_bytes;
  __syncthreads();
  return rc;
}

__device__ inline int MPIX_Recv_block(void *buf, size_t bytes, int peer, int tag, const MPIX_Device_comm &comm,
                                      size_t *received) {
  __shared__ int s_rc;
  __shared__ size_t s_got;
  const MPIX_Device_comm *h = MPIXD_OF(comm);
  /* Lanes may still be reading buf (lane 0 writes an inline message into
   * it alone). */
  __syncthreads();
  if (h->path == MPIXD_PATH_PROXY) {
    if (mpixd_block_lane() == 0) s_rc = MPIX_Recv(buf, bytes, peer, tag, comm, &s_got);
    __syncthreads();
    const int rc = s_rc;
    /* Every lane's `received`, as on the IPC path (it may be per thread). */
    if (received && (rc == MPIX_DEVICE_SUCCESS || rc == MPIX_DEVICE_ERR_TRUNCATE)) *received = s_got;
    __syncthreads();
    return rc;
  }
  return mpixd_recv_block(h, buf, bytes, peer, tag, received, false, 0);
}

#endif
