// Kernels that run enqueued sends and receives on the application's stream
// (see stream_exec.h). Each is one block: the protocol is driven by lane 0
// and payload chunks are copied by the whole block (mpixd_send_block /
// mpixd_recv_block, with the number the host gave the message).
#include <cuda_runtime.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>
#ifdef MPIX_STAGE_TRACE
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#endif

#include "cuda_check.h"
#include "mpix_device/ops.cuh"
#include "stream_exec.h"

namespace mpix::device {


namespace {

// Waits of up to this many requests carry their list in the kernel's
// parameters (the common case: a halo exchange's handful); longer lists
// are copied to the device in stream order.
constexpr int kWaitInline = 24;
constexpr int kWaitBlocks = 16;

struct WaitInline {
  MPIX_Device_request *reqs[kWaitInline];
  ExecResult *results[kWaitInline];
};

// Receives whose start was left to the wait that completes them (see
// StreamExec::irecv): request i of the list starts there when bit i of
// `mask` is set.
struct RecvStarts {
  void *buf[kWaitInline];
  std::uint64_t bytes[kWaitInline];
  int peer[kWaitInline], tag[kWaitInline];
  std::uint32_t seq[kWaitInline];
  std::uint32_t mask;
};

// A large receive of a wait is driven by a group of blocks: its leader
// runs the protocol; once the message is bound to a pulled one (copied
// straight from the sender's buffer), every block of the group copies a
// share, so a pulled receive is not held to one block's speed (~20 GB/s
// over NVLink; a 4 MiB exchange took 215 us where NCCL took 30). One
// entry per request of an inline wait, in device memory, reused by each
// wait of the StreamExec (its kernels run one at a time): `state` is
// op * 2 + 1 once request i is bound to a pulled message, op * 2 once it
// ended otherwise (the helpers then leave); `arrived` counts the blocks
// done copying.
struct WaitGroups {
  std::uint32_t state[kWaitInline];
  std::uint32_t arrived[kWaitInline];
};
// At most this many blocks in a wait's grid, and the bytes a block of the
// group is given (the host sizes groups by the receive buffers).
constexpr unsigned kWaitGridMax = 256;
constexpr std::size_t kGroupBytes = std::size_t(128) << 10;
constexpr unsigned kGroupMax = 32;

struct PullGroup {
  volatile std::uint32_t *state;
  std::uint32_t *arrived;
  unsigned blocks;
  std::uint32_t op;
};

// Stage timestamps for timelines inside the kernels (a variant build with
// -DMPIX_STAGE_TRACE; off by default): lane 0 of a block records
// (%globaltimer, clock64, stage, block) through a device atomic (~0.35 us
// a mark on an H200); ~StreamExec writes the process's marks so far to
// $MPIX_STAGE_TRACE_FILE.<pid> (the last stream communicator freed writes
// them all). bench/stage_timeline.py reads them.
#ifdef MPIX_STAGE_TRACE
struct StageRec {
  unsigned long long t, clk;
  unsigned id, block;
};
constexpr unsigned kStageMax = 1u << 18;
__device__ StageRec g_stages[kStageMax];
__device__ unsigned g_stage_n;
__device__ __forceinline__ void stage(unsigned id) {
  if (threadIdx.x != 0) return;
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  const unsigned i = atomicAdd(&g_stage_n, 1u);
  if (i < kStageMax) g_stages[i] = StageRec{t, static_cast<unsigned long long>(clock64()), id, blockIdx.x};
}
#define MPIX_STAGE(id) stage(id)
#else
#define MPIX_STAGE(id) ((void)0)
#endif

constexpr int kRequestChunk = 256;
constexpr int kResultChunk = 256;

__device__ void note_failure(ExecFailure *f, int code, std::uint32_t op) {
  if (code == MPIX_DEVICE_SUCCESS) return;
  volatile ExecFailure *v = f;
  // First failure wins; a race between two failing kernels keeps one of
  // them, which is all the report needs.
  if (v->code != 0) return;
  v->op = op;
  __threadfence_system();
  v->code = code;
  __threadfence_system();
}

__device__ void note_result(ExecResult *r, std::uint64_t bytes, int status) {
  if (r == nullptr) return;
  r->bytes = bytes;
  r->status = status;
}

// Threads for a block that copies `bytes`: a warp for what fits a table
// entry, more for chunked payloads, at most what the kernel can launch
// with (its registers decide: `limit`).
unsigned threads_for(std::size_t bytes, unsigned limit) {
  unsigned want = bytes <= MPIXD_INLINE ? 32u : bytes <= 16384 ? 256u : 1024u;
  return want < limit ? want : limit;
}

// A request moved on as far as it goes without waiting, by the whole block:
// lane 0 runs the protocol, every lane copies chunks. Returns
// MPIX_DEVICE_PENDING, or the final status (the request then inactive).
// Every lane calls it with the same r.
// g: the group of blocks that copies a pulled receive (null: this block).
__device__ int block_test(const MPIX_Device_comm *h, MPIX_Device_request *r, const PullGroup *g = nullptr) {
  __shared__ int s_rc;
  __shared__ uint32_t s_first, s_k, s_mid, s_pull;
  const unsigned lane = threadIdx.x, lanes = blockDim.x;
  for (;;) {
    if (lane == 0) {
      s_k = 0;
      s_mid = 0;
      s_pull = 0;
      s_first = r->next;
      if (r->state == MPIXD_SEND && (r->flags & MPIXD_R_PULL)) {
        // Pulled: the receiver copies; the send waits for its signal.
        mpixd_pull_send_progress(h, r);
      } else if (r->state == MPIXD_SEND && (r->flags & MPIXD_R_MID)) {
        // Medium: slots and way, then announced; the lanes write the lines.
        uint32_t slot;
        if (mpixd_mid_send_ready(h, r, &slot)) {
          mpixd_mid_post(h, r->peer, h->bases[r->peer], slot, r->tag, r->seq, (uint32_t)r->bytes, r->ticket);
          r->flags |= MPIXD_R_POSTED;
          s_mid = 1;
        }
      } else if (r->state == MPIXD_SEND) {
        // Tickets and the table entry, as mpixd_send_progress takes them.
        bool posted = true;
        if (r->nslots > 0 && !(r->flags & MPIXD_R_TICKETS)) {
          mpixd_schan *sc = mpixd_schan_of(h, h->local, r->peer, r->chan);
          if (r->nslots <= h->slots) {
            posted = mpixd_claim_room(h, sc, r->nslots, &r->ticket, mpixd_near(h, r->peer)) == MPIX_DEVICE_SUCCESS;
          } else {
            r->ticket = mpixd_fetch_add(&sc->tail, r->nslots);
          }
          if (posted) r->flags |= MPIXD_R_TICKETS;
        }
        if (posted && !(r->flags & MPIXD_R_POSTED)) {
          uint32_t slot;
          posted = mpixd_claim_slot(h, r->peer, r->tag, r->seq, &slot);
          if (posted) {
            char *base = h->bases[r->peer];
            if (r->nslots == 0) mpixd_post_small(h, r->peer, base, slot, r->tag, r->seq, (uint32_t)r->bytes, r->buf);
            else
              mpixd_post_entry(h, r->peer, base, slot, r->tag, r->seq, (uint32_t)r->bytes, r->chan, r->ticket,
                               r->nslots, r->buf);
            r->flags |= MPIXD_R_POSTED;
          }
        }
        if (posted && r->next < r->nslots) {
          mpixd_schan *sc = mpixd_schan_of(h, h->local, r->peer, r->chan);
          const uint32_t left = r->nslots - r->next;
          s_k = mpixd_room(h, sc, r->ticket + r->next, left < MPIXD_BLOCK_BATCH ? left : MPIXD_BLOCK_BATCH,
                           mpixd_near(h, r->peer));
        }
        if (posted && r->next == r->nslots) {
          r->state = MPIXD_DONE;
          r->status = MPIX_DEVICE_SUCCESS;
        }
      } else if (r->state == MPIXD_RECV_WAIT || r->state == MPIXD_RECV_BOUND) {
        if (r->state == MPIXD_RECV_WAIT) mpixd_recv_match(h, r);
        if (r->state == MPIXD_RECV_BOUND && (r->flags & MPIXD_R_PULL)) {
          s_pull = 1;
        } else if (r->state == MPIXD_RECV_BOUND && (r->flags & MPIXD_R_MID)) {
          s_mid = 1;
        } else if (r->state == MPIXD_RECV_BOUND) {
          uint32_t k = 0;
          while (r->next + k < r->nslots && k < MPIXD_BLOCK_BATCH &&
                 mpixd_arrived_relaxed(h, r->peer, r->chan, r->ticket + r->next + k))
            ++k;
          // One fence orders every lane's reads of the chunks after their
          // sequence words (through the barrier below).
          if (k > 0) mpixd_fence_at(mpixd_near(h, r->peer));
          s_k = k;
        }
      }
    }
    __syncthreads();
    if (s_pull) {
      MPIX_STAGE(40);
      // A pulled message, straight from the sender's buffer by every lane
      // (of the group: this block's share is the first).
      if (g != nullptr && lane == 0) {
        g->arrived[0] = 0;
        __threadfence();  // the binding (r) and the count before the news
        *g->state = g->op * 2 + 1;
      }
      mpixd_pull_copy(r, lane, g != nullptr ? lanes * g->blocks : lanes);
      __syncthreads();
      if (lane == 0) {
        if (g != nullptr) {
          // The sender may reuse its buffer only once every block copied.
          __threadfence();
          atomicAdd(g->arrived, 1u);
          unsigned ns = MPIXD_BACKOFF_MIN_NS;
          while (atomicAdd(g->arrived, 0u) < g->blocks) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
          __threadfence();
        }
        MPIX_STAGE(41);
        mpixd_pull_signal(h, r);
        MPIX_STAGE(42);
        r->state = MPIXD_INACTIVE;
        r->status = mpixd_recv_status(r);
        s_rc = r->status;
      }
      __syncthreads();
      const int rc = s_rc;
      __syncthreads();
      return rc;
    }
    if (s_mid) {
      // A medium message's lines, by every lane, in one round.
      const bool send = r->state == MPIXD_SEND;
      MPIX_STAGE(send ? 45 : 43);
      if (send) mpixd_mid_put(h, r->peer, r->chan, r->ticket, r->buf, r->bytes, lane, lanes);
      else mpixd_mid_get_block(h, r, lane, lanes);
      __syncthreads();
      MPIX_STAGE(send ? 46 : 44);
      if (lane == 0) {
        r->state = MPIXD_INACTIVE;
        r->status = send ? MPIX_DEVICE_SUCCESS : mpixd_recv_status(r);
        s_rc = r->status;
      }
      __syncthreads();
      const int rc = s_rc;
      __syncthreads();
      return rc;
    }
    const uint32_t first = s_first, k = s_k;
    const bool send = r->state == MPIXD_SEND;
    for (uint32_t j = first; j < first + k; ++j) {
      if (send) mpixd_put_chunk(h, r->peer, r->chan, r->ticket, j, r->buf, r->bytes, lane, lanes);
      else mpixd_get_chunk(h, r, j, lane, lanes);
    }
    __syncthreads();
    if (lane == 0) {
      if (k > 0 && send) {
        mpixd_publish_chunks(h, r->peer, r->chan, r->ticket + first, k);
        r->next = first + k;
        if (r->next == r->nslots && (r->flags & MPIXD_R_POSTED)) {
          r->state = MPIXD_DONE;
          r->status = MPIX_DEVICE_SUCCESS;
        }
      } else if (k > 0) {
        mpixd_mark_done_batch(h, r->peer, r->chan, r->ticket + first, k);
        mpixd_ring_release(h, r->peer, r->chan);
        r->next = first + k;
        if (r->next == r->nslots) {
          r->state = MPIXD_DONE;
          r->status = mpixd_recv_status(r);
        }
      }
      s_rc = MPIX_DEVICE_PENDING;
      if (r->state == MPIXD_DONE) {
        s_rc = r->status;
        r->state = MPIXD_INACTIVE;
      } else if (r->state != MPIXD_SEND && r->state != MPIXD_RECV_WAIT && r->state != MPIXD_RECV_BOUND) {
        s_rc = MPIX_DEVICE_ERR_REQUEST;
      }
    }
    __syncthreads();
    const int rc = s_rc;
    __syncthreads();  // every lane read s_rc before the next round rewrites it
    if (rc != MPIX_DEVICE_PENDING || k == 0) return rc;
  }
}

// Programmatic dependent launch (sm_90): each kernel lets the next one of
// the stream be scheduled at once and waits, before touching memory, until
// the previous one has completed and flushed (as stream order requires).
// The launch latency between consecutive operations is then hidden behind
// the previous kernel's run. A kernel launched without the attribute (the
// application's) simply runs after ours.
__device__ __forceinline__ void let_next_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void wait_previous() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void after_previous() {
  wait_previous();
  let_next_start();
}

// Hand-over from block 0 (which runs the protocol) to the other blocks of
// a wide transfer: one per StreamExec, reused by its blocking kernels, which
// the stream runs one after the other.
struct WideState {
  volatile std::uint32_t op;
  int rc;
  std::uint32_t chan, ticket, nslots, mid;
  std::uint64_t msg_bytes;
  // A pulled message: its source, the number to signal, and the blocks
  // done copying (the last one signals).
  std::uint32_t pull, pull_gen, pull_done;
  const void *pull_src;
  // The table way the last blocking receive took: freeing it (a remote
  // atomic) is left to the next kernel of ours, after its own work, so
  // that it is off the path from one message to the next.
  std::uint32_t free_pending, free_slot;
  int free_peer;
};

// By lane 0 of block 0 only (kernels of one StreamExec run one at a time).
__device__ void flush_deferred(const MPIX_Device_comm *h, WideState *w) {
  if (w->free_pending == 0) return;
  mpixd_free_deferred(h, w->free_peer, w->free_slot);
  w->free_pending = 0;
}

__device__ void wide_publish(WideState *w, std::uint32_t op) {
  __threadfence();
  w->op = op;
}

__device__ void wide_wait(WideState *w, std::uint32_t op) {
  if (threadIdx.x == 0) {
    unsigned ns = MPIXD_BACKOFF_MIN_NS;
    while (w->op != op) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
    __threadfence();
  }
  __syncthreads();
}

// A message of many chunks sent by several blocks: block 0 numbers and
// posts it, then every block moves the chunks j = blockIdx.x (mod
// gridDim.x), each chunk published by its own sequence word.
__global__ void __launch_bounds__(1024) send_wide_kernel(const MPIX_Device_comm h, const void *buf, std::size_t bytes,
                                                         int peer, int tag, std::uint32_t seq, WideState *w,
                                                         ExecFailure *failure, std::uint32_t op) {
  after_previous();
  const MPIX_Device_comm *hp = &h;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    w->rc = mpixd_check_args(hp, buf, bytes, peer, tag);
    if (w->rc == MPIX_DEVICE_SUCCESS) {
      w->chan = mpixd_channel(hp, tag);
      w->nslots = mpixd_nslots(hp, bytes);
      w->ticket = mpixd_fetch_add(&mpixd_schan_of(hp, hp->local, peer, w->chan)->tail, w->nslots);
      uint32_t slot;
      unsigned ns = MPIXD_BACKOFF_MIN_NS;
      while (!mpixd_claim_slot(hp, peer, tag, seq, &slot)) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
      mpixd_post_entry(hp, peer, hp->bases[peer], slot, tag, seq, (uint32_t)bytes, w->chan, w->ticket, w->nslots, buf);
    }
    note_failure(failure, w->rc, op);
    wide_publish(w, op);
  }
  wide_wait(w, op);
  if (w->rc != MPIX_DEVICE_SUCCESS) return;
  const uint32_t chan = w->chan, ticket = w->ticket, n = w->nslots;
  mpixd_schan *sc = mpixd_schan_of(hp, hp->local, peer, chan);
  const bool near = mpixd_near(hp, peer);
  for (uint32_t j = blockIdx.x; j < n; j += gridDim.x) {
    if (threadIdx.x == 0) {
      unsigned ns = MPIXD_BACKOFF_MIN_NS;
      while (mpixd_room(hp, sc, ticket + j, 1, near) == 0) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
    }
    __syncthreads();
    mpixd_put_chunk(hp, peer, chan, ticket, j, buf, bytes, threadIdx.x, blockDim.x);
    __syncthreads();
    if (threadIdx.x == 0) mpixd_publish_chunks(hp, peer, chan, ticket + j, 1);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) flush_deferred(hp, w);
}

// A pulled send (include/mpix_device/pull.h): one thread posts the entry
// naming the buffer's export and waits until the receiver has copied it.
__global__ void send_pull_kernel(const MPIX_Device_comm h, const void *buf, std::size_t bytes, int peer, int tag,
                                 std::uint32_t seq, std::uint32_t export_id, std::uint64_t offset, std::uint32_t gen,
                                 WideState *w, ExecFailure *failure, std::uint32_t op) {
  after_previous();
  const MPIX_Device_comm *hp = &h;
  const int rc = mpixd_check_args(hp, buf, bytes, peer, tag);
  if (rc == MPIX_DEVICE_SUCCESS) {
    uint32_t slot;
    unsigned ns = MPIXD_BACKOFF_MIN_NS;
    while (!mpixd_claim_slot(hp, peer, tag, seq, &slot)) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
    mpixd_post_pull(hp, hp->bases[peer], slot, tag, seq, static_cast<uint32_t>(bytes), export_id, offset, gen);
    flush_deferred(hp, w);
    ns = MPIXD_BACKOFF_MIN_NS;
    while (!mpixd_pull_signalled(hp, peer, gen)) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
  }
  note_failure(failure, rc, op);
}

// Its receive: block 0 finds the entry, every block copies its chunks out
// and releases their ring slots (in any order: the release is ordered by
// whoever holds the ring's release lock).
__global__ void __launch_bounds__(1024) recv_wide_kernel(const MPIX_Device_comm h, void *buf, std::size_t bytes,
                                                         int peer, int tag, std::uint32_t seq, WideState *w,
                                                         ExecFailure *failure, std::uint32_t op, ExecResult *out) {
  after_previous();
  const MPIX_Device_comm *hp = &h;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    MPIX_Device_request r;
    w->rc = mpixd_check(hp, buf, bytes, peer, tag, &r);
    w->nslots = 0;
    w->mid = 0;
    w->pull = 0;
    w->pull_done = 0;
    w->msg_bytes = 0;
    if (w->rc == MPIX_DEVICE_SUCCESS) {
      uint64_t key = 0, payload = 0;
      const int32_t slot = mpixd_wait_numbered(hp, peer, tag, seq, &key, &payload);
      mpixd_recv_start(&r, buf, bytes, peer, tag, seq);
      mpixd_recv_take(hp, &r, slot, key, payload, hp->bases[peer]);
      if (r.state == MPIXD_RECV_BOUND && (r.flags & MPIXD_R_PULL)) {
        w->pull = 1;
        w->pull_src = mpixd_pull_src(&r);
        w->pull_gen = r.next;
      } else if (r.state == MPIXD_RECV_BOUND) {
        w->chan = r.chan;
        w->ticket = r.ticket;
        w->nslots = r.nslots;
        w->mid = (r.flags & MPIXD_R_MID) != 0;
      }
      w->msg_bytes = r.msg_bytes;
      const int rc = r.msg_bytes > bytes ? MPIX_DEVICE_ERR_TRUNCATE : MPIX_DEVICE_SUCCESS;
      note_result(out, r.msg_bytes, rc);
      note_failure(failure, rc, op);
    } else {
      note_result(out, 0, w->rc);
      note_failure(failure, w->rc, op);
    }
    wide_publish(w, op);
  }
  wide_wait(w, op);
  if (w->rc != MPIX_DEVICE_SUCCESS) return;
  MPIX_Device_request r{};
  r.peer = peer;
  r.buf = buf;
  r.bytes = bytes;
  r.chan = w->chan;
  r.ticket = w->ticket;
  r.nslots = w->nslots;
  r.msg_bytes = w->msg_bytes;
  if (w->pull) {
    // A pulled message: every block copies its share of the grid's lanes;
    // the last block to finish tells the sender.
    r.ticket = static_cast<uint32_t>(reinterpret_cast<std::uintptr_t>(w->pull_src));
    r.nslots = static_cast<uint32_t>(reinterpret_cast<std::uintptr_t>(w->pull_src) >> 32);
    r.next = w->pull_gen;
    mpixd_pull_copy(&r, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      if (atomicAdd(&w->pull_done, 1u) == gridDim.x - 1) {
        __threadfence();
        mpixd_pull_signal(hp, &r);
      }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) flush_deferred(hp, w);
    return;
  }
  if (w->mid) {
    // A medium message into a large buffer: block 0 copies it alone.
    if (blockIdx.x != 0) return;
    mpixd_mid_get_block(hp, &r, threadIdx.x, blockDim.x);
    if (threadIdx.x == 0) flush_deferred(hp, w);
    return;
  }
  for (uint32_t j = blockIdx.x; j < r.nslots; j += gridDim.x) {
    if (threadIdx.x == 0) {
      unsigned ns = MPIXD_BACKOFF_MIN_NS;
      while (!mpixd_arrived(hp, peer, r.chan, r.ticket + j)) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
    }
    __syncthreads();
    mpixd_get_chunk(hp, &r, j, threadIdx.x, blockDim.x);
    __syncthreads();
    if (threadIdx.x == 0) {
      mpixd_mark_done(hp, peer, r.chan, r.ticket + j);
      mpixd_ring_release(hp, peer, r.chan);
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) flush_deferred(hp, w);
}

// A message that fits a table entry, by one thread. What touches neither the
// user's buffer nor state an earlier operation of the stream may still use
// runs before waiting for that operation: the sender claims its table way,
// the receiver polls for its message. So a kernel launched early (see
// after_previous) has its message on the way, or in hand, by the time the
// previous operation ends.
__global__ void send_small_kernel(const MPIX_Device_comm h, const void *buf, std::size_t bytes, int peer, int tag,
                                  std::uint32_t seq, WideState *w, ExecFailure *failure, std::uint32_t op) {
  let_next_start();
  const MPIX_Device_comm *hp = &h;
  int rc = mpixd_check_args(hp, buf, bytes, peer, tag);
  uint32_t slot = 0;
  if (rc == MPIX_DEVICE_SUCCESS) {
    unsigned ns = MPIXD_BACKOFF_MIN_NS;
    while (!mpixd_claim_slot(hp, peer, tag, seq, &slot)) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
  }
  wait_previous();
  if (rc == MPIX_DEVICE_SUCCESS) mpixd_post_small(hp, peer, hp->bases[peer], slot, tag, seq, (uint32_t)bytes, buf);
  note_failure(failure, rc, op);
  flush_deferred(hp, w);
}

__global__ void recv_small_kernel(const MPIX_Device_comm h, void *buf, std::size_t bytes, int peer, int tag,
                                  std::uint32_t seq, WideState *w, ExecFailure *failure, std::uint32_t op,
                                  ExecResult *out) {
  let_next_start();
  const MPIX_Device_comm *hp = &h;
  MPIX_Device_request r;
  int rc = mpixd_check(hp, buf, bytes, peer, tag, &r);
  int32_t slot = -1;
  uint64_t key = 0, payload = 0;
  if (rc == MPIX_DEVICE_SUCCESS) slot = mpixd_wait_numbered(hp, peer, tag, seq, &key, &payload);
  wait_previous();
  std::size_t got = 0;
  uint32_t taken = 0xffffffffu;
  if (rc == MPIX_DEVICE_SUCCESS) {
    mpixd_recv_start(&r, buf, bytes, peer, tag, seq);
    mpixd_recv_take_ex(hp, &r, slot, key, payload, hp->bases[peer], &taken);
    got = r.msg_bytes;
    // A message above a table entry (a truncated receive) still has its
    // chunks to drain, as the block receive would.
    while (r.state == MPIXD_RECV_BOUND && mpixd_recv_progress(hp, &r) == MPIX_DEVICE_PENDING) {
    }
    rc = r.msg_bytes > bytes ? MPIX_DEVICE_ERR_TRUNCATE : MPIX_DEVICE_SUCCESS;
  }
  note_result(out, got, rc);
  note_failure(failure, rc, op);
  flush_deferred(hp, w);
  if (taken != 0xffffffffu) {
    w->free_peer = peer;
    w->free_slot = taken;
    w->free_pending = 1;
  }
}

__global__ void __launch_bounds__(1024) send_kernel(const MPIX_Device_comm h, const void *buf, std::size_t bytes,
                                                    int peer, int tag, std::uint32_t seq, WideState *w,
                                                    ExecFailure *failure, std::uint32_t op) {
  after_previous();
  const int rc = mpixd_send_block(&h, buf, bytes, peer, tag, true, seq);
  if (threadIdx.x == 0) {
    note_failure(failure, rc, op);
    flush_deferred(&h, w);
  }
}

__global__ void __launch_bounds__(1024) recv_kernel(const MPIX_Device_comm h, void *buf, std::size_t bytes,
                                                    int peer, int tag, std::uint32_t seq, WideState *w,
                                                    ExecFailure *failure, std::uint32_t op, ExecResult *out) {
  after_previous();
  std::size_t got = 0;
  std::uint32_t taken = 0xffffffffu;
  const int rc = mpixd_recv_block(&h, buf, bytes, peer, tag, &got, true, seq, &taken);
  if (threadIdx.x == 0) {
    note_result(out, got, rc);
    note_failure(failure, rc, op);
    flush_deferred(&h, w);
    if (taken != 0xffffffffu) {
      w->free_peer = peer;
      w->free_slot = taken;
      w->free_pending = 1;
    }
  }
}

// Starts a request (a bad argument completes it at once with the error, so
// that the wait reports it); a send then writes what the peer has room for,
// by the whole block.
__device__ void start_request(const MPIX_Device_comm *h, MPIX_Device_request *r, bool send, const void *buf,
                              std::size_t bytes, int peer, int tag, std::uint32_t seq) {
  const int rc = mpixd_check(h, buf, bytes, peer, tag, r);
  if (rc != MPIX_DEVICE_SUCCESS) {
    r->state = MPIXD_DONE;
    r->status = rc;
    r->msg_bytes = 0;
  } else if (send) {
    mpixd_send_init(h, r, buf, bytes, peer, tag, seq);
  } else {
    mpixd_recv_start(r, const_cast<void *>(buf), bytes, peer, tag, seq);
  }
}

__global__ void start_kernel(const MPIX_Device_comm h, MPIX_Device_request *r, bool send, const void *buf,
                             std::size_t bytes, int peer, int tag, std::uint32_t seq, WideState *w) {
  MPIX_STAGE(15);
  after_previous();
  MPIX_STAGE(16);
  if (threadIdx.x == 0) start_request(&h, r, send, buf, bytes, peer, tag, seq);
  __syncthreads();
  if (send && r->state == MPIXD_SEND) {
    // Complete now if it fits; the final status stays for the wait.
    const int rc = block_test(&h, r);
    if (threadIdx.x == 0 && rc != MPIX_DEVICE_PENDING) {
      r->status = rc;
      r->state = MPIXD_DONE;
    }
  }
  if (threadIdx.x == 0) flush_deferred(&h, w);
  MPIX_STAGE(17);
}

// A nonblocking pulled send: one thread fills the request and posts its
// entry if a way is free (the wait does the rest).
__global__ void start_pull_kernel(const MPIX_Device_comm h, MPIX_Device_request *r, const void *buf,
                                  std::size_t bytes, int peer, int tag, std::uint32_t seq, std::uint32_t export_id,
                                  std::uint64_t offset, std::uint32_t gen, WideState *w) {
  MPIX_STAGE(10);
  after_previous();
  MPIX_STAGE(11);
  const int rc = mpixd_check(&h, buf, bytes, peer, tag, r);
  if (rc != MPIX_DEVICE_SUCCESS) {
    r->state = MPIXD_DONE;
    r->status = rc;
    r->msg_bytes = 0;
  } else {
    mpixd_pull_send_init(r, buf, bytes, peer, tag, seq, export_id, offset, gen);
    mpixd_pull_send_progress(&h, r);
  }
  MPIX_STAGE(12);
  flush_deferred(&h, w);
  MPIX_STAGE(13);
}

// Each block drives its share of the requests (whole-block copies) until
// all are complete: a request advances only while it is tested, and every
// block keeps testing all of its own.
__device__ void wait_all(const MPIX_Device_comm *h, MPIX_Device_request *const *reqs, ExecResult *const *results,
                         int n, ExecFailure *failure, std::uint32_t op) {
  unsigned ns = MPIXD_BACKOFF_MIN_NS;
  for (bool left = true; left;) {
    left = false;
    bool moved = false;
    for (int i = blockIdx.x; i < n; i += gridDim.x) {
      MPIX_Device_request *r = reqs[i];
      if (r->state == MPIXD_INACTIVE) continue;
      const int rc = block_test(h, r);
      if (rc == MPIX_DEVICE_PENDING) {
        left = true;
        continue;
      }
      moved = true;
      MPIX_STAGE(30 + i);
      if (threadIdx.x == 0) {
        note_result(results[i], r->msg_bytes, rc);
        note_failure(failure, rc, op);
      }
    }
    if (moved) ns = MPIXD_BACKOFF_MIN_NS;
    else if (left && threadIdx.x == 0) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
    __syncthreads();
  }
}

// Block k > 0 of request i's group: waits for the leader's news, then
// copies its share of a pulled message and counts itself done.
__device__ void help_pull(const MPIX_Device_request *r, const PullGroup &g, unsigned k) {
  __shared__ int s_go;
  __shared__ MPIX_Device_request s_r;
  if (threadIdx.x == 0) {
    unsigned ns = MPIXD_BACKOFF_MIN_NS;
    std::uint32_t v;
    while ((v = *g.state) >> 1 != g.op) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
    __threadfence();
    s_go = v & 1u;
    if (s_go) {  // what mpixd_pull_copy reads, as the leader bound it
      const volatile MPIX_Device_request *v = r;
      s_r.buf = v->buf;
      s_r.bytes = v->bytes;
      s_r.msg_bytes = v->msg_bytes;
      s_r.ticket = v->ticket;
      s_r.nslots = v->nslots;
    }
  }
  __syncthreads();
  if (!s_go) return;
  mpixd_pull_copy(&s_r, k * blockDim.x + threadIdx.x, g.blocks * blockDim.x);
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(g.arrived, 1u);
  }
}

// A wait whose requests have `group` blocks each (group > 1): request i is
// driven by block i * group, helped by the group's other blocks.
__device__ void wait_grouped(const MPIX_Device_comm *h, const WaitInline &list, int n, unsigned group,
                             WaitGroups *groups, ExecFailure *failure, std::uint32_t op) {
  const int i = static_cast<int>(blockIdx.x / group);
  const unsigned k = blockIdx.x % group;
  if (i >= n) return;
  const PullGroup g{&groups->state[i], &groups->arrived[i], group, op};
  MPIX_Device_request *r = list.reqs[i];
  if (k != 0) {
    help_pull(r, g, k);
    return;
  }
  int rc = MPIX_DEVICE_SUCCESS;
  if (r->state != MPIXD_INACTIVE) {
    unsigned ns = MPIXD_BACKOFF_MIN_NS;
    while ((rc = block_test(h, r, &g)) == MPIX_DEVICE_PENDING)
      if (threadIdx.x == 0) mpixd_backoff(&ns, MPIXD_BACKOFF_IPC_NS);
    if (threadIdx.x == 0) {
      note_result(list.results[i], r->msg_bytes, rc);
      note_failure(failure, rc, op);
    }
  }
  if (threadIdx.x == 0 && *g.state != op * 2 + 1) *g.state = op * 2;  // not pulled: the helpers leave
}

__global__ void wait_inline_kernel(const MPIX_Device_comm h, WaitInline list, RecvStarts starts, int n,
                                   unsigned group, WaitGroups *groups, WideState *w, ExecFailure *failure,
                                   std::uint32_t op) {
  MPIX_STAGE(20);
  after_previous();
  MPIX_STAGE(21);
  if (group > 1) {
    if (threadIdx.x == 0 && blockIdx.x % group == 0 && (starts.mask >> (blockIdx.x / group)) & 1u) {
      const int i = static_cast<int>(blockIdx.x / group);
      start_request(&h, list.reqs[i], false, starts.buf[i], starts.bytes[i], starts.peer[i], starts.tag[i],
                    starts.seq[i]);
    }
    __syncthreads();
    wait_grouped(&h, list, n, group, groups, failure, op);
    if (blockIdx.x == 0 && threadIdx.x == 0) flush_deferred(&h, w);
    return;
  }
  // The receives left to this wait start here, each by the block that
  // drives it, as start_kernel would have started them.
  if (threadIdx.x == 0)
    for (int i = blockIdx.x; i < n; i += gridDim.x)
      if ((starts.mask >> i) & 1u)
        start_request(&h, list.reqs[i], false, starts.buf[i], starts.bytes[i], starts.peer[i], starts.tag[i],
                      starts.seq[i]);
  __syncthreads();
  MPIX_STAGE(22);
  wait_all(&h, list.reqs, list.results, n, failure, op);
  if (blockIdx.x == 0 && threadIdx.x == 0) flush_deferred(&h, w);
  MPIX_STAGE(23);
}

__global__ void wait_list_kernel(const MPIX_Device_comm h, MPIX_Device_request *const *reqs,
                                 ExecResult *const *results, int n, WideState *w, ExecFailure *failure,
                                 std::uint32_t op) {
  after_previous();
  wait_all(&h, reqs, results, n, failure, op);
  if (blockIdx.x == 0 && threadIdx.x == 0) flush_deferred(&h, w);
}

// The received bytes of a staged slot into device memory: only as many as
// arrived (MPI leaves the rest of a receive buffer alone), read straight
// from the mapped host memory.
__global__ void copy_from_slot_kernel(unsigned char *dst, const StagedSlot *slot, std::size_t capacity) {
  const std::size_t got = static_cast<std::size_t>(slot->bytes);
  const std::size_t n = got < capacity ? got : capacity;
  const unsigned char *src = slot->data;
  const bool words = (reinterpret_cast<std::uintptr_t>(dst) & 7u) == 0;
  const std::size_t nw = words ? n / 8 : 0;
  for (std::size_t i = threadIdx.x; i < nw; i += blockDim.x)
    reinterpret_cast<std::uint64_t *>(dst)[i] = reinterpret_cast<const volatile std::uint64_t *>(src)[i];
  for (std::size_t i = nw * 8 + threadIdx.x; i < n; i += blockDim.x) dst[i] = static_cast<const volatile unsigned char *>(src)[i];
}

// After <<<>>> launches: whether they were accepted.
Status launched() { return cuda_ok(cudaGetLastError()) ? Status::kOk : Status::kCudaError; }

// Launches a kernel of ours on s, allowed to start before the previous
// kernel of the stream ends (see after_previous).
template <typename... Params, typename... Args>
Status launch(void (*kernel)(Params...), unsigned blocks, unsigned threads, cudaStream_t s, Args... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(threads);
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cuda_ok(cudaLaunchKernelEx(&cfg, kernel, args...)) ? Status::kOk : Status::kCudaError;
}

// Messages of at least this many chunks move by several blocks at once.
constexpr std::uint32_t kWideChunks = 2;

}  // namespace

BufferKind buffer_kind(const void *p, const void **kernel_view) {
  *kernel_view = p;
  cudaPointerAttributes a{};
  if (p == nullptr || !cuda_ok(cudaPointerGetAttributes(&a, p))) return BufferKind::kPageable;
  switch (a.type) {
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged: return BufferKind::kDevice;
    case cudaMemoryTypeHost:
      if (a.devicePointer == nullptr) return BufferKind::kPageable;
      // The offset of p within its registration carries over to the
      // device view (the same address under unified addressing).
      *kernel_view = a.devicePointer;
      return BufferKind::kHostMapped;
    default: return BufferKind::kPageable;
  }
}

struct StreamExec::Impl {
  cudaStream_t stream = nullptr;
  int device = 0;
  MPIX_Device_comm h{};
  ExecFailure *failure = nullptr;  // mapped host memory
  std::vector<MPIX_Device_request *> request_chunks;
  std::vector<MPIX_Device_request *> free_requests;
  std::vector<ExecResult *> result_chunks;
  std::vector<ExecResult *> free_results;
  std::mutex results_mutex;  // results go back from the progress thread
  unsigned send_limit = 32, recv_limit = 32, start_limit = 32, wait_limit = 32, wide_limit = 32;
  unsigned wide_blocks = 16;
  WideState *wide = nullptr;  // device memory
  WaitGroups *groups = nullptr;  // device memory
  std::size_t group_min = 0;     // see group_receives_from
  // Receives not started yet: their wait starts them (see irecv).
  struct PendingRecv {
    void *buf;
    std::size_t bytes;
    int peer, tag;
    std::uint32_t seq;
  };
  std::unordered_map<DeviceRequest, PendingRecv> pending_recvs;
  // Starts a pending receive by a kernel of its own (a wait that cannot
  // carry it).
  Status start_pending(DeviceRequest r);

  ~Impl() {
    // Kernels of the stream may still use these: the communicator is being
    // freed (collectively, after the application synchronised its streams),
    // so freeing device memory (which waits for the device) is safe.
    for (auto *c : request_chunks) cudaFree(c);
    for (auto *c : result_chunks) cudaFreeHost(c);
    if (failure != nullptr) cudaFreeHost(failure);
    if (wide != nullptr) cudaFree(wide);
    if (groups != nullptr) cudaFree(groups);
    (void)cudaGetLastError();
  }
  bool current() {
    int cur = -1;
    return (cuda_ok(cudaGetDevice(&cur)) && cur == device) || cuda_ok(cudaSetDevice(device));
  }
};

StreamExec::StreamExec(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
#ifdef MPIX_STAGE_TRACE
StreamExec::~StreamExec() {
  const char *path = std::getenv("MPIX_STAGE_TRACE_FILE");
  unsigned n = 0;
  if (path == nullptr || !impl_->current() || !cuda_ok(cudaDeviceSynchronize()) ||
      !cuda_ok(cudaMemcpyFromSymbol(&n, g_stage_n, sizeof n)))
    return;
  n = std::min(n, kStageMax);
  std::vector<StageRec> recs(n);
  if (n > 0 && !cuda_ok(cudaMemcpyFromSymbol(recs.data(), g_stages, n * sizeof(StageRec)))) return;
  const std::string name = std::string(path) + "." + std::to_string(getpid());
  if (FILE *f = std::fopen(name.c_str(), "w")) {
    for (const StageRec &r : recs) std::fprintf(f, "%llu,%llu,%u,%u\n", r.t, r.clk, r.id, r.block);
    std::fclose(f);
  }
}
#else
StreamExec::~StreamExec() = default;
#endif

std::unique_ptr<StreamExec> StreamExec::create(void *cuda_stream, const MPIX_Device_comm &h, unsigned wide_blocks,
                                               Status *status) {
  int ngpu = 0;
  if (!cuda_ok(cudaGetDeviceCount(&ngpu)) || ngpu == 0 || h.path != MPIXD_PATH_IPC) {
    *status = Status::kNoGpu;
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->stream = static_cast<cudaStream_t>(cuda_stream);
  impl->h = h;
  impl->wide_blocks = std::max(1u, wide_blocks);
  *status = Status::kCudaError;
  if (!cuda_ok(cudaStreamGetDevice(impl->stream, &impl->device)) && !cuda_ok(cudaGetDevice(&impl->device)))
    return nullptr;
  void *mem = nullptr;
  if (!cuda_ok(cudaHostAlloc(&mem, sizeof(ExecFailure), cudaHostAllocMapped | cudaHostAllocPortable))) return nullptr;
  // The most threads each kernel launches with (registers decide), in warps.
  const auto limit = [](const void *fn) {
    cudaFuncAttributes a{};
    if (!cuda_ok(cudaFuncGetAttributes(&a, fn)) || a.maxThreadsPerBlock < 32) return 32u;
    return static_cast<unsigned>(a.maxThreadsPerBlock) / 32u * 32u;
  };
  impl->send_limit = limit(reinterpret_cast<const void *>(send_kernel));
  impl->recv_limit = limit(reinterpret_cast<const void *>(recv_kernel));
  impl->start_limit = limit(reinterpret_cast<const void *>(start_kernel));
  impl->wait_limit = std::min(limit(reinterpret_cast<const void *>(wait_inline_kernel)),
                              limit(reinterpret_cast<const void *>(wait_list_kernel)));
  impl->wide_limit = std::min(limit(reinterpret_cast<const void *>(send_wide_kernel)),
                              limit(reinterpret_cast<const void *>(recv_wide_kernel)));
  void *wide = nullptr, *groups = nullptr;
  if (!cuda_ok(cudaMalloc(&wide, sizeof(WideState))) || !cuda_ok(cudaMemset(wide, 0, sizeof(WideState))) ||
      !cuda_ok(cudaMalloc(&groups, sizeof(WaitGroups))) || !cuda_ok(cudaMemset(groups, 0, sizeof(WaitGroups))) ||
      !cuda_ok(cudaDeviceSynchronize())) {
    if (wide != nullptr) cudaFree(wide);
    if (groups != nullptr) cudaFree(groups);
    cudaFreeHost(mem);
    return nullptr;
  }
  impl->wide = static_cast<WideState *>(wide);
  impl->groups = static_cast<WaitGroups *>(groups);
  impl->failure = static_cast<ExecFailure *>(mem);
  impl->failure->code = 0;
  impl->failure->op = 0;
  *status = Status::kOk;
  return std::unique_ptr<StreamExec>(new StreamExec(std::move(impl)));  // NOLINT: private constructor
}

Status StreamExec::send(const void *buf, std::size_t bytes, int peer, int tag, std::uint32_t seq,
                            std::uint32_t op) {
  Impl &m = *impl_;
  if (!m.current()) return Status::kCudaError;
  const std::uint32_t chunks = bytes <= MPIXD_INLINE ? 0 : static_cast<std::uint32_t>((bytes + m.h.slot_bytes - 1) / m.h.slot_bytes);
  if (bytes <= MPIXD_INLINE)
    return launch(send_small_kernel, 1, 1, m.stream, m.h, buf, bytes, peer, tag, seq, m.wide, m.failure, op);
  if (chunks >= kWideChunks)
    return launch(send_wide_kernel, std::min<unsigned>(chunks, m.wide_blocks), m.wide_limit, m.stream, m.h, buf, bytes,
                  peer, tag, seq, m.wide, m.failure, op);
  return launch(send_kernel, 1, threads_for(bytes, m.send_limit), m.stream, m.h, buf, bytes, peer, tag, seq, m.wide,
                m.failure, op);
}

Status StreamExec::send_pull(const void *buf, std::size_t bytes, int peer, int tag, std::uint32_t seq,
                             std::uint32_t op, std::uint32_t export_id, std::uint64_t offset, std::uint32_t gen) {
  Impl &m = *impl_;
  if (!m.current()) return Status::kCudaError;
  return launch(send_pull_kernel, 1, 1, m.stream, m.h, buf, bytes, peer, tag, seq, export_id, offset, gen, m.wide,
                m.failure, op);
}

Status StreamExec::recv(void *buf, std::size_t bytes, int peer, int tag, std::uint32_t seq, std::uint32_t op,
                            ExecResult *out) {
  Impl &m = *impl_;
  if (!m.current()) return Status::kCudaError;
  // Wide by the receive buffer: a message as long (or longer: truncated)
  // comes in as many chunks; a shorter one leaves blocks with nothing to do.
  const std::uint32_t chunks = bytes <= MPIXD_INLINE ? 0 : static_cast<std::uint32_t>((bytes + m.h.slot_bytes - 1) / m.h.slot_bytes);
  if (bytes <= MPIXD_INLINE)
    return launch(recv_small_kernel, 1, 1, m.stream, m.h, buf, bytes, peer, tag, seq, m.wide, m.failure, op, out);
  if (chunks >= kWideChunks)
    return launch(recv_wide_kernel, std::min<unsigned>(chunks, m.wide_blocks), m.wide_limit, m.stream, m.h, buf, bytes,
                  peer, tag, seq, m.wide, m.failure, op, out);
  return launch(recv_kernel, 1, threads_for(bytes, m.recv_limit), m.stream, m.h, buf, bytes, peer, tag, seq, m.wide,
                m.failure, op, out);
}

Status StreamExec::isend(DeviceRequest r, const void *buf, std::size_t bytes, int peer, int tag,
                             std::uint32_t seq) {
  Impl &m = *impl_;
  if (!m.current()) return Status::kCudaError;
  return launch(start_kernel, 1, threads_for(bytes, m.start_limit), m.stream, m.h, r, true, buf, bytes, peer, tag,
                seq, m.wide);
}

Status StreamExec::isend_pull(DeviceRequest r, const void *buf, std::size_t bytes, int peer, int tag,
                              std::uint32_t seq, std::uint32_t export_id, std::uint64_t offset, std::uint32_t gen) {
  Impl &m = *impl_;
  if (!m.current()) return Status::kCudaError;
  return launch(start_pull_kernel, 1, 1, m.stream, m.h, r, buf, bytes, peer, tag, seq, export_id, offset, gen,
                m.wide);
}

// A receive's start only records what it waits for (the message is
// numbered already, so when it starts does not change what it matches, and
// nothing but its wait looks at it): it is left to the wait that completes
// it, which saves a kernel launch per receive (a halo exchange's
// Irecv/Isend/Waitall is two launches instead of three).
Status StreamExec::irecv(DeviceRequest r, void *buf, std::size_t bytes, int peer, int tag, std::uint32_t seq) {
  Impl &m = *impl_;
  if (!m.current()) return Status::kCudaError;
  m.pending_recvs[r] = Impl::PendingRecv{buf, bytes, peer, tag, seq};
  return Status::kOk;
}

Status StreamExec::Impl::start_pending(DeviceRequest r) {
  const auto it = pending_recvs.find(r);
  if (it == pending_recvs.end()) return Status::kOk;
  const PendingRecv p = it->second;
  pending_recvs.erase(it);
  return launch(start_kernel, 1, 32, stream, h, r, false, static_cast<const void *>(p.buf), p.bytes, p.peer, p.tag,
                p.seq, wide);
}

void StreamExec::group_receives_from(std::size_t bytes) { impl_->group_min = bytes; }

Status StreamExec::wait(const std::vector<DeviceRequest> &reqs, const std::vector<ExecResult *> &results,
                            std::uint32_t op) {
  Impl &m = *impl_;
  const int n = static_cast<int>(reqs.size());
  if (n == 0) return Status::kOk;
  if (!m.current()) return Status::kCudaError;
  // A block per request up to kWaitBlocks (small enough to be resident
  // beside the peer's kernels: blocks that wait keep their SMs).
  const unsigned blocks = static_cast<unsigned>(std::min(n, kWaitBlocks));
  const unsigned threads = std::min(256u, m.wait_limit);
  if (n <= kWaitInline) {
    WaitInline list{};
    RecvStarts starts{};
    std::size_t largest = 0;  // of the receives started here
    for (int i = 0; i < n; ++i) {
      list.reqs[i] = reqs[i];
      list.results[i] = results.empty() ? nullptr : results[i];
      const auto it = m.pending_recvs.find(reqs[i]);
      if (it == m.pending_recvs.end()) continue;
      largest = std::max(largest, it->second.bytes);
      starts.buf[i] = it->second.buf;
      starts.bytes[i] = it->second.bytes;
      starts.peer[i] = it->second.peer;
      starts.tag[i] = it->second.tag;
      starts.seq[i] = it->second.seq;
      starts.mask |= 1u << i;
      m.pending_recvs.erase(it);
    }
    // A group of blocks per request where a receive may be pulled: a
    // block per kGroupBytes of the largest buffer.
    unsigned group = static_cast<unsigned>(std::min<std::size_t>(largest / kGroupBytes, kGroupMax));
    while (group > 1 && group * static_cast<unsigned>(n) > kWaitGridMax) group /= 2;
    if (group > 1 && m.group_min > 0 && largest >= m.group_min)
      return launch(wait_inline_kernel, group * static_cast<unsigned>(n), threads, m.stream, m.h, list, starts, n,
                    group, m.groups, m.wide, m.failure, op);
    return launch(wait_inline_kernel, blocks, threads, m.stream, m.h, list, starts, n, 1u, m.groups, m.wide,
                  m.failure, op);
  }
  for (int i = 0; i < n; ++i)
    if (const Status st = m.start_pending(reqs[i]); st != Status::kOk) return st;
  // The list goes to the device in stream order: a pageable source is
  // staged by the driver before cudaMemcpyAsync returns, so the vectors
  // may go once this call returns.
  std::vector<void *> table(2 * static_cast<std::size_t>(n), nullptr);
  for (int i = 0; i < n; ++i) {
    table[i] = reqs[i];
    table[n + i] = results.empty() ? nullptr : results[i];
  }
  void *dev = nullptr;
  const std::size_t bytes = table.size() * sizeof(void *);
  if (!cuda_ok(cudaMallocAsync(&dev, bytes, m.stream))) return Status::kCudaError;
  if (!cuda_ok(cudaMemcpyAsync(dev, table.data(), bytes, cudaMemcpyHostToDevice, m.stream))) return Status::kCudaError;
  auto *const *dreqs = static_cast<MPIX_Device_request *const *>(dev);
  auto *const *dres = reinterpret_cast<ExecResult *const *>(static_cast<void **>(dev) + n);
  const Status st =
      launch(wait_list_kernel, blocks, threads, m.stream, m.h, dreqs, dres, n, m.wide, m.failure, op);
  cudaFreeAsync(dev, m.stream);
  return st;
}

DeviceRequest StreamExec::take_request() {
  Impl &m = *impl_;
  if (m.free_requests.empty()) {
    void *chunk = nullptr;
    if (!m.current() || !cuda_ok(cudaMalloc(&chunk, sizeof(MPIX_Device_request) * kRequestChunk))) return nullptr;
    // Inactive until a start kernel fills one (stream-ordered after this
    // synchronous memset).
    cudaMemset(chunk, 0, sizeof(MPIX_Device_request) * kRequestChunk);
    auto *reqs = static_cast<MPIX_Device_request *>(chunk);
    m.request_chunks.push_back(reqs);
    for (int i = kRequestChunk - 1; i >= 0; --i) m.free_requests.push_back(reqs + i);
  }
  DeviceRequest r = m.free_requests.back();
  m.free_requests.pop_back();
  return r;
}

void StreamExec::give_back(DeviceRequest r) {
  if (r == nullptr) return;
  impl_->pending_recvs.erase(r);
  impl_->free_requests.push_back(r);
}

ExecResult *StreamExec::take_result() {
  Impl &m = *impl_;
  std::lock_guard<std::mutex> g(m.results_mutex);
  if (m.free_results.empty()) {
    void *chunk = nullptr;
    if (!cuda_ok(cudaHostAlloc(&chunk, sizeof(ExecResult) * kResultChunk, cudaHostAllocMapped | cudaHostAllocPortable)))
      return nullptr;
    auto *res = static_cast<ExecResult *>(chunk);
    m.result_chunks.push_back(res);
    for (int i = kResultChunk - 1; i >= 0; --i) m.free_results.push_back(res + i);
  }
  ExecResult *r = m.free_results.back();
  m.free_results.pop_back();
  return r;
}

void StreamExec::give_back(ExecResult *r) {
  if (r == nullptr) return;
  std::lock_guard<std::mutex> g(impl_->results_mutex);
  impl_->free_results.push_back(r);
}

void *StreamExec::stage(std::size_t bytes) {
  Impl &m = *impl_;
  void *p = nullptr;
  return m.current() && cuda_ok(cudaMallocAsync(&p, bytes > 0 ? bytes : 1, m.stream)) ? p : nullptr;
}

Status StreamExec::copy(void *dst, const void *src, std::size_t bytes) {
  Impl &m = *impl_;
  if (bytes == 0) return Status::kOk;
  return cuda_ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, m.stream)) ? Status::kOk : Status::kCudaError;
}

void StreamExec::unstage(void *p) {
  if (p != nullptr) cudaFreeAsync(p, impl_->stream);
}

bool StreamExec::take_failure(ExecFailure *f) {
  volatile ExecFailure *v = impl_->failure;
  if (v->code == 0) return false;
  f->op = v->op;
  f->code = v->code;
  v->code = 0;
  return true;
}

StagedSlot *staged_slot_alloc() {
  void *p = nullptr;
  if (!cuda_ok(cudaHostAlloc(&p, sizeof(StagedSlot), cudaHostAllocMapped | cudaHostAllocPortable))) return nullptr;
  return static_cast<StagedSlot *>(p);
}

void staged_slot_free(StagedSlot *s) {
  if (s != nullptr) cudaFreeHost(s);
}

Status stage_to_host(void *cuda_stream, StagedSlot *slot, const void *src, std::size_t n) {
  if (n == 0) return Status::kOk;
  return cuda_ok(cudaMemcpyAsync(slot->data, src, n, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(cuda_stream)))
             ? Status::kOk
             : Status::kCudaError;
}

Status stage_from_host(void *cuda_stream, void *dst, const StagedSlot *slot, std::size_t capacity) {
  if (capacity == 0) return Status::kOk;
  copy_from_slot_kernel<<<1, 256, 0, static_cast<cudaStream_t>(cuda_stream)>>>(static_cast<unsigned char *>(dst),
                                                                              slot, capacity);
  return launched();
}

}  // namespace mpix::device
