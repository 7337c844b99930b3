/*
 * mpix device point-to-point: the device calls (included by mpix_device.h
 * when compiled by nvcc). Everything is inline: user kernels need no -rdc.
 * The protocol itself is in proto.h.
 */
#ifndef MPIX_DEVICE_OPS_CUH
#define MPIX_DEVICE_OPS_CUH

#include "proto.h"

/* Wait-loop backoff ceilings (ns): short on the IPC path, where the wait is
 * for a peer GPU's store; longer on the proxy path (see mpixd_backoff). */
#define MPIXD_BACKOFF_MIN_NS 32u
#define MPIXD_BACKOFF_IPC_NS 256u
#define MPIXD_BACKOFF_PROXY_NS 4096u

__device__ __forceinline__ unsigned mpixd_backoff_max(int path) {
  return path == MPIXD_PATH_PROXY ? MPIXD_BACKOFF_PROXY_NS : MPIXD_BACKOFF_IPC_NS;
}

/* The handle as the protocol functions see it: through a pointer whose
 * origin the compiler cannot see. nvcc 13.0 miscompiled the plain &comm in
 * a kernel with many inlined calls (test/gpu/dev_p2p's calls_send, an
 * invalid __local__ read caught by compute-sanitizer on an H100,
 * 2026-11-24): it addressed the kernel's by-value handle parameter in
 * param space (cvta.param) and then read it as local memory
 * (cvta.to.local). Laundered, the handle is copied to local memory once
 * per call and read through a generic pointer. test/gpu/check-ptx.sh looks
 * for the pattern in the compiled tests. */
__device__ __forceinline__ const MPIX_Device_comm *mpixd_launder(const MPIX_Device_comm *p) {
  const MPIX_Device_comm *q;
  asm("mov.b64 %0, %1;" : "=l"(q) : "l"(p));
  return q;
}

/* mpixd_take_seq for the lanes of a warp that call it together: lanes with
 * the same (peer, tag) take consecutive numbers, in lane order, with one
 * atomic (papers/000 Algorithm 1: one atomic per group of lanes, each lane
 * takes its rank in the group). */
__device__ __forceinline__ int mpixd_take_seq_warp(const MPIX_Device_comm &comm, bool send, int peer, int tag,
                                                    uint32_t *seq) {
  const uint64_t key = mpixd_key(peer, tag);
  const unsigned group = __match_any_sync(__activemask(), key);
  unsigned lane, lower;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lower));
  const unsigned leader = __ffs(group) - 1;
  uint32_t base = 0;
  int rc = MPIX_DEVICE_SUCCESS;
  if (lane == leader) rc = mpixd_take_seq(mpixd_launder(&comm), send, peer, tag, __popc(group), &base);
  rc = __shfl_sync(group, rc, leader);
  base = __shfl_sync(group, base, leader);
  *seq = base + __popc(group & lower);
  return rc;
}

/* Nonblocking send of `bytes` bytes to `peer` with `tag`. Returns
 * MPIX_DEVICE_SUCCESS with *req active (complete it with MPIX_Test or
 * MPIX_Wait), or an error code with nothing sent. A message the receiver's
 * table (and ring) have room for is written before the call returns; else
 * it goes out while MPIX_Test/MPIX_Wait is called on it. Proxy path:
 * MPIX_DEVICE_AGAIN when its queue is full (nothing was sent; retry). */
__device__ inline int MPIX_Isend(const void *buf, size_t bytes, int peer, int tag, MPIX_Device_comm comm,
                                 MPIX_Device_request *req) {
  const int rc = mpixd_check(mpixd_launder(&comm), buf, bytes, peer, tag, req);
  if (rc != MPIX_DEVICE_SUCCESS) return rc;
  if (comm.path == MPIXD_PATH_PROXY) return mpixd_isend(mpixd_launder(&comm), buf, bytes, peer, tag, req);
  uint32_t seq;
  const int st = mpixd_take_seq_warp(comm, true, peer, tag, &seq);
  if (st != MPIX_DEVICE_SUCCESS) return st;
  mpixd_send_start(mpixd_launder(&comm), req, buf, bytes, peer, tag, seq);
  return MPIX_DEVICE_SUCCESS;
}

/* Nonblocking receive of at most `bytes` bytes from `peer` with `tag` (no
 * wildcards). Receives of one (peer, tag) match its messages in the order
 * of their MPIX_Irecv calls (lanes of a warp calling together: in lane
 * order). Proxy path: MPIX_DEVICE_AGAIN when its queue is full. */
__device__ inline int MPIX_Irecv(void *buf, size_t bytes, int peer, int tag, MPIX_Device_comm comm,
                                 MPIX_Device_request *req) {
  const int rc = mpixd_check(mpixd_launder(&comm), buf, bytes, peer, tag, req);
  if (rc != MPIX_DEVICE_SUCCESS) return rc;
  if (comm.path == MPIXD_PATH_PROXY) return mpixd_irecv(mpixd_launder(&comm), buf, bytes, peer, tag, req);
  uint32_t seq;
  const int st = mpixd_take_seq_warp(comm, false, peer, tag, &seq);
  if (st != MPIX_DEVICE_SUCCESS) return st;
  mpixd_recv_start(req, buf, bytes, peer, tag, seq);
  return MPIX_DEVICE_SUCCESS;
}

/* MPIX_DEVICE_PENDING while not complete; then the request's final status
 * (MPIX_DEVICE_SUCCESS, MPIX_DEVICE_ERR_TRUNCATE), the request inactive. */
__device__ inline int MPIX_Test(MPIX_Device_request *req, MPIX_Device_comm comm) { return mpixd_test(mpixd_launder(&comm), req); }

__device__ inline int MPIX_Wait(MPIX_Device_request *req, MPIX_Device_comm comm) {
  int rc;
  unsigned ns = MPIXD_BACKOFF_MIN_NS;
  while ((rc = MPIX_Test(req, comm)) == MPIX_DEVICE_PENDING) mpixd_backoff(&ns, mpixd_backoff_max(comm.path));
  return rc;
}

/* Blocking: returns once the message is out of the buffer. */
__device__ inline int MPIX_Send(const void *buf, size_t bytes, int peer, int tag, MPIX_Device_comm comm) {
  MPIX_Device_request req;
  int rc;
  unsigned ns = MPIXD_BACKOFF_MIN_NS;
  while ((rc = MPIX_Isend(buf, bytes, peer, tag, comm, &req)) == MPIX_DEVICE_AGAIN)
    mpixd_backoff(&ns, mpixd_backoff_max(comm.path));
  return rc == MPIX_DEVICE_SUCCESS ? MPIX_Wait(&req, comm) : rc;
}

__device__ inline int MPIX_Recv(void *buf, size_t bytes, int peer, int tag, MPIX_Device_comm comm,
                                size_t *received) {
  MPIX_Device_request req;
  int rc;
  unsigned ns = MPIXD_BACKOFF_MIN_NS;
  while ((rc = MPIX_Irecv(buf, bytes, peer, tag, comm, &req)) == MPIX_DEVICE_AGAIN)
    mpixd_backoff(&ns, mpixd_backoff_max(comm.path));
  if (rc != MPIX_DEVICE_SUCCESS) return rc;
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

__device__ inline int MPIX_Send_block(const void *buf, size_t bytes, int peer, int tag, MPIX_Device_comm comm) {
  __shared__ int s_rc;
  __shared__ uint32_t s_k;
  __shared__ MPIX_Device_request s_req;
  const unsigned lane = mpixd_block_lane();
  const unsigned lanes = blockDim.x * blockDim.y * blockDim.z;
  const bool near = mpixd_near(mpixd_launder(&comm), peer);
  /* The block's writes to buf before the call are done before anyone
   * reads it (lane 0 for an inline message, the host on the proxy path:
   * lane 0's release orders them, through this barrier). */
  __syncthreads();
  if (comm.path == MPIXD_PATH_PROXY) {  // the host moves the data: one thread posts
    if (lane == 0) s_rc = MPIX_Send(buf, bytes, peer, tag, comm);
    __syncthreads();
    const int rc = s_rc;
    __syncthreads();
    return rc;
  }
  if (lane == 0) {
    s_rc = mpixd_check(mpixd_launder(&comm), buf, bytes, peer, tag, &s_req);
    uint32_t seq = 0;
    if (s_rc == MPIX_DEVICE_SUCCESS) s_rc = mpixd_take_seq(mpixd_launder(&comm), true, peer, tag, 1, &seq);
    if (s_rc == MPIX_DEVICE_SUCCESS) {
      /* Tickets and the table entry (the entry can go before the chunks:
       * the receiver waits for each chunk's own sequence word). */
      MPIX_Device_request *r = &s_req;
      r->peer = peer;
      r->tag = tag;
      r->buf = (void *)buf;
      r->bytes = bytes;
      r->chan = mpixd_channel(mpixd_launder(&comm), tag);
      r->nslots = mpixd_nslots(mpixd_launder(&comm), bytes);
      r->seq = seq;
      r->next = 0;
      r->flags = 0;
      mpixd_schan *sc = mpixd_schan_of(mpixd_launder(&comm), comm.local, peer, r->chan);
      if (r->nslots > 0) r->ticket = mpixd_fetch_add(&sc->tail, r->nslots);
      uint32_t slot;
      unsigned ns = MPIXD_BACKOFF_MIN_NS;
      while (!mpixd_claim_way(mpixd_launder(&comm), peer, tag, seq, &slot)) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
      mpixd_post_entry(mpixd_launder(&comm), peer, slot, tag, seq, (uint32_t)bytes, r->chan, r->ticket, r->nslots, buf);
    }
  }
  __syncthreads();
  const int rc = s_rc;
  if (rc != MPIX_DEVICE_SUCCESS) {
    __syncthreads();  // every lane read s_rc before a next call rewrites it
    return rc;
  }
  const uint32_t n = s_req.nslots;
  for (uint32_t next = 0; next < n;) {
    if (lane == 0) {
      mpixd_schan *sc = mpixd_schan_of(mpixd_launder(&comm), comm.local, peer, s_req.chan);
      const uint32_t want = n - next < MPIXD_BLOCK_BATCH ? n - next : MPIXD_BLOCK_BATCH;
      uint32_t k;
      unsigned ns = MPIXD_BACKOFF_MIN_NS;
      while ((k = mpixd_room(mpixd_launder(&comm), sc, s_req.ticket + next, want, near)) == 0)
        mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
      s_k = k;
    }
    __syncthreads();
    const uint32_t k = s_k;
    for (uint32_t j = next; j < next + k; ++j)
      mpixd_put_chunk(mpixd_launder(&comm), peer, s_req.chan, s_req.ticket, j, buf, bytes, lane, lanes);
    /* Every lane's chunk writes before lane 0's sequence words. */
    mpixd_fence_at(near);
    __syncthreads();
    if (lane == 0)
      for (uint32_t j = next; j < next + k; ++j) mpixd_publish_chunk(mpixd_launder(&comm), peer, s_req.chan, s_req.ticket + j);
    next += k;
  }
  __syncthreads();
  return MPIX_DEVICE_SUCCESS;
}

__device__ inline int MPIX_Recv_block(void *buf, size_t bytes, int peer, int tag, MPIX_Device_comm comm,
                                      size_t *received) {
  __shared__ int s_rc;
  __shared__ uint32_t s_k;
  __shared__ size_t s_got;
  __shared__ MPIX_Device_request s_req;
  const unsigned lane = mpixd_block_lane();
  const unsigned lanes = blockDim.x * blockDim.y * blockDim.z;
  /* Lanes may still be reading buf (lane 0 writes an inline message into
   * it alone). */
  __syncthreads();
  if (comm.path == MPIXD_PATH_PROXY) {
    if (lane == 0) s_rc = MPIX_Recv(buf, bytes, peer, tag, comm, &s_got);
    __syncthreads();
    const int rc = s_rc;
    /* Every lane's `received`, as on the IPC path (it may be per thread). */
    if (received && (rc == MPIX_DEVICE_SUCCESS || rc == MPIX_DEVICE_ERR_TRUNCATE)) *received = s_got;
    __syncthreads();
    return rc;
  }
  if (lane == 0) {
    s_rc = mpixd_irecv(mpixd_launder(&comm), buf, bytes, peer, tag, &s_req);
    unsigned ns = MPIXD_BACKOFF_MIN_NS;
    if (s_rc == MPIX_DEVICE_SUCCESS)
      while (!mpixd_recv_match(mpixd_launder(&comm), &s_req)) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
  }
  __syncthreads();
  if (s_rc != MPIX_DEVICE_SUCCESS) {
    const int rc = s_rc;
    __syncthreads();  // all lanes read s_rc before a next call rewrites it
    return rc;
  }
  const uint32_t n = s_req.state == MPIXD_RECV_BOUND ? s_req.nslots : 0;
  for (uint32_t next = 0; next < n;) {
    if (lane == 0) {
      unsigned ns = MPIXD_BACKOFF_MIN_NS;
      while (!mpixd_arrived(mpixd_launder(&comm), peer, s_req.chan, s_req.ticket + next)) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
      uint32_t k = 1;
      while (next + k < n && k < MPIXD_BLOCK_BATCH && mpixd_arrived(mpixd_launder(&comm), peer, s_req.chan, s_req.ticket + next + k))
        ++k;
      s_k = k;
    }
    __syncthreads();
    const uint32_t k = s_k;
    for (uint32_t j = next; j < next + k; ++j) {
      /* This lane reads the chunk: acquire its arrival for this lane too. */
      (void)mpixd_arrived(mpixd_launder(&comm), peer, s_req.chan, s_req.ticket + j);
      mpixd_get_chunk(mpixd_launder(&comm), &s_req, j, lane, lanes);
    }
    /* Every lane's reads before lane 0 marks the chunks free. */
    __threadfence();
    __syncthreads();
    if (lane == 0) {
      for (uint32_t j = next; j < next + k; ++j) mpixd_mark_done(mpixd_launder(&comm), peer, s_req.chan, s_req.ticket + j);
      mpixd_ring_release(mpixd_launder(&comm), peer, s_req.chan);
    }
    next += k;
  }
  __syncthreads();
  const int rc = s_req.msg_bytes > s_req.bytes ? MPIX_DEVICE_ERR_TRUNCATE : MPIX_DEVICE_SUCCESS;
  if (received) *received = s_req.msg_bytes;
  __syncthreads();
  return rc;
}

#endif
