/*
 * mpix device point-to-point: the device calls (included by mpix_device.h
 * when compiled by nvcc). Everything is inline: user kernels need no -rdc.
 * The protocol itself is in proto.h.
 */
#ifndef MPIX_DEVICE_OPS_CUH
#define MPIX_DEVICE_OPS_CUH

#include <cooperative_groups.h>

#include "proto.h"

/* Wait-loop backoff ceilings (ns): short on the IPC path, where the wait is
 * for a peer GPU's store; longer on the proxy path (see mpixd_backoff). */
#define MPIXD_BACKOFF_MIN_NS 32u
#define MPIXD_BACKOFF_IPC_NS 256u
#define MPIXD_BACKOFF_PROXY_NS 4096u

__device__ __forceinline__ unsigned mpixd_backoff_max(const MPIX_Device_comm &comm) {
  return comm.path == MPIXD_PATH_PROXY ? MPIXD_BACKOFF_PROXY_NS : MPIXD_BACKOFF_IPC_NS;
}

/* Nonblocking send of `bytes` bytes to `peer` with `tag`. Returns
 * MPIX_DEVICE_SUCCESS with *req active (complete it with MPIX_Test or
 * MPIX_Wait), MPIX_DEVICE_AGAIN when the ring to the peer is full (nothing
 * was sent; retry), or an error code. A message that fits the ring is
 * written before the call returns. Single-slot sends of the lanes of a warp
 * that target the same queue claim their slots with one atomic. */
__device__ inline int MPIX_Isend(const void *buf, size_t bytes, int peer, int tag, MPIX_Device_comm comm,
                                 MPIX_Device_request *req) {
  const int rc = mpixd_check(&comm, buf, bytes, peer, tag, req);
  if (rc != MPIX_DEVICE_SUCCESS) return rc;
  if (comm.path == MPIXD_PATH_PROXY || mpixd_nslots(&comm, bytes) > 1)
    return mpixd_isend(&comm, buf, bytes, peer, tag, req);
  namespace cg = cooperative_groups;
  mpixd_send_init(&comm, req, buf, bytes, peer, tag);
  mpixd_schan *sc = mpixd_schan_of(&comm, comm.local, peer, req->chan);
  cg::coalesced_group active = cg::coalesced_threads();
  cg::coalesced_group same = cg::labeled_partition(active, (int)((unsigned)peer * comm.channels + req->chan));
  uint32_t ticket = 0;
  int ok = 0;
  if (same.thread_rank() == 0)
    ok = mpixd_claim_room(&comm, sc, same.size(), &ticket) == MPIX_DEVICE_SUCCESS;
  ok = same.shfl(ok, 0);
  ticket = same.shfl(ticket, 0) + same.thread_rank();
  /* Not room for the whole group: each lane on its own (a ring smaller
   * than a warp must still make progress). */
  if (!ok && mpixd_claim_room(&comm, sc, 1, &ticket) != MPIX_DEVICE_SUCCESS) {
    req->state = MPIXD_INACTIVE;
    return MPIX_DEVICE_AGAIN;
  }
  req->ticket = ticket;
  mpixd_put_chunk(&comm, peer, req->chan, ticket, 0, 1, tag, buf, bytes, 0, 1);
  mpixd_publish(&comm, peer, req->chan, ticket);
  req->next = 1;
  req->state = MPIXD_DONE;
  req->status = MPIX_DEVICE_SUCCESS;
  return MPIX_DEVICE_SUCCESS;
}

/* Nonblocking receive of at most `bytes` bytes from `peer` with `tag` (no
 * wildcards). MPIX_DEVICE_AGAIN, with nothing done, when the channel's
 * posted-receive table is full or another thread holds the channel (retry). */
__device__ inline int MPIX_Irecv(void *buf, size_t bytes, int peer, int tag, MPIX_Device_comm comm,
                                 MPIX_Device_request *req) {
  return mpixd_irecv(&comm, buf, bytes, peer, tag, req);
}

/* MPIX_DEVICE_PENDING while not complete; then the request's final status
 * (MPIX_DEVICE_SUCCESS, MPIX_DEVICE_ERR_TRUNCATE), the request inactive. */
__device__ inline int MPIX_Test(MPIX_Device_request *req, MPIX_Device_comm comm) { return mpixd_test(&comm, req); }

__device__ inline int MPIX_Wait(MPIX_Device_request *req, MPIX_Device_comm comm) {
  int rc;
  unsigned ns = MPIXD_BACKOFF_MIN_NS;
  while ((rc = MPIX_Test(req, comm)) == MPIX_DEVICE_PENDING) mpixd_backoff(&ns, mpixd_backoff_max(comm));
  return rc;
}

/* Blocking: spin while the ring is full, then until complete. */
__device__ inline int MPIX_Send(const void *buf, size_t bytes, int peer, int tag, MPIX_Device_comm comm) {
  MPIX_Device_request req;
  int rc;
  unsigned ns = MPIXD_BACKOFF_MIN_NS;
  while ((rc = MPIX_Isend(buf, bytes, peer, tag, comm, &req)) == MPIX_DEVICE_AGAIN)
    mpixd_backoff(&ns, mpixd_backoff_max(comm));
  return rc == MPIX_DEVICE_SUCCESS ? MPIX_Wait(&req, comm) : rc;
}

__device__ inline int MPIX_Recv(void *buf, size_t bytes, int peer, int tag, MPIX_Device_comm comm,
                                size_t *received) {
  MPIX_Device_request req;
  int rc;
  unsigned ns = MPIXD_BACKOFF_MIN_NS;
  while ((rc = MPIX_Irecv(buf, bytes, peer, tag, comm, &req)) == MPIX_DEVICE_AGAIN)
    mpixd_backoff(&ns, mpixd_backoff_max(comm));
  if (rc != MPIX_DEVICE_SUCCESS) return rc;
  rc = MPIX_Wait(&req, comm);
  if (received) *received = req.msg_bytes;
  return rc;
}

/* ---- block-cooperative variants: every thread of the block calls with
 * the same arguments; thread 0 runs the protocol, all threads copy. ---- */

__device__ inline int MPIX_Send_block(const void *buf, size_t bytes, int peer, int tag, MPIX_Device_comm comm) {
  __shared__ int s_rc;
  __shared__ uint32_t s_ticket;
  const unsigned lane = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned lanes = blockDim.x * blockDim.y * blockDim.z;
  if (comm.path == MPIXD_PATH_PROXY) {  // the host moves the data: one thread posts
    /* The block's writes to buf before the call must be done before lane 0
     * posts it: the host's copy reads buf, and lane 0's system fence orders
     * them (through this barrier) before the descriptor. (The IPC path
     * below has a barrier before any lane reads buf.) */
    __syncthreads();
    if (lane == 0) s_rc = MPIX_Send(buf, bytes, peer, tag, comm);
    __syncthreads();
    const int rc = s_rc;
    __syncthreads();
    return rc;
  }
  const uint32_t c = mpixd_channel(&comm, tag);
  const uint32_t n = mpixd_nslots(&comm, bytes);
  mpixd_schan *sc = mpixd_schan_of(&comm, comm.local, peer, c);
  if (lane == 0) {
    MPIX_Device_request dummy;
    s_rc = mpixd_check(&comm, buf, bytes, peer, tag, &dummy);
    if (s_rc == MPIX_DEVICE_SUCCESS) s_ticket = mpixd_fetch_add(&sc->tail, n);
  }
  __syncthreads();
  const int rc = s_rc;
  if (rc != MPIX_DEVICE_SUCCESS) {
    /* Every lane must have read s_rc before lane 0 can enter the next
     * call and overwrite it. */
    __syncthreads();
    return rc;
  }
  for (uint32_t j = 0; j < n; ++j) {
    if (lane == 0) {
      while (!mpixd_room_for(&comm, sc, s_ticket + j)) mpixd_pause();
    }
    __syncthreads();
    mpixd_put_chunk(&comm, peer, c, s_ticket, j, n, tag, buf, bytes, lane, lanes);
    __syncthreads();
    if (lane == 0) mpixd_publish(&comm, peer, c, s_ticket + j);
  }
  __syncthreads();
  return MPIX_DEVICE_SUCCESS;
}

__device__ inline int MPIX_Recv_block(void *buf, size_t bytes, int peer, int tag, MPIX_Device_comm comm,
                                      size_t *received) {
  __shared__ int s_rc;
  __shared__ size_t s_got;
  __shared__ MPIX_Device_request s_req;
  const unsigned lane = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned lanes = blockDim.x * blockDim.y * blockDim.z;
  /* Lanes may still be reading buf (lane 0 writes an inline message into it
   * alone, under the queue lock). */
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
    while ((s_rc = mpixd_irecv(&comm, buf, bytes, peer, tag, &s_req)) == MPIX_DEVICE_AGAIN) mpixd_pause();
    if (s_rc == MPIX_DEVICE_SUCCESS && s_req.state == MPIXD_RECV_POSTED)
      while (!mpixd_recv_bind(&comm, &s_req)) mpixd_pause();
  }
  __syncthreads();
  if (s_rc != MPIX_DEVICE_SUCCESS) {
    const int rc = s_rc;
    __syncthreads();  // all lanes read s_rc before a next call rewrites it
    return rc;
  }
  if (s_req.state == MPIXD_RECV_BOUND) {
    for (uint32_t j = 0; j < s_req.nslots; ++j) {
      const uint32_t pos = s_req.ticket + j;
      if (lane == 0)
        while (!mpixd_arrived(&comm, s_req.peer, s_req.chan, pos)) mpixd_pause();
      __syncthreads();
      /* Every lane reads the chunk: acquire its arrival for this lane too. */
      (void)mpixd_arrived(&comm, s_req.peer, s_req.chan, pos);
      mpixd_get_chunk(&comm, &s_req, j, lane, lanes);
      __syncthreads();
      if (lane == 0)
        while (!mpixd_try_consume(&comm, s_req.peer, s_req.chan, pos)) mpixd_pause();
    }
  }
  __syncthreads();
  const int rc = s_req.msg_bytes > s_req.bytes ? MPIX_DEVICE_ERR_TRUNCATE : MPIX_DEVICE_SUCCESS;
  if (received) *received = s_req.msg_bytes;
  __syncthreads();
  return rc;
}

#endif
