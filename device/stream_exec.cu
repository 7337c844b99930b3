// Kernels that run enqueued sends and receives on the application's stream
// (see stream_exec.h). Each is one block: the protocol is driven by lane 0
// and payload chunks are copied by the whole block (mpixd_send_block /
// mpixd_recv_block, with the number the host gave the message).
#include <cuda_runtime.h>

#include <algorithm>
#include <mutex>

#include "mpix_device/ops.cuh"
#include "stream_exec.h"

namespace mpix::gpu {
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
  __threadfence_system();
  r->written = 1;
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
__device__ int block_test(const MPIX_Device_comm *h, MPIX_Device_request *r) {
  __shared__ int s_rc;
  __shared__ uint32_t s_first, s_k;
  const unsigned lane = threadIdx.x, lanes = blockDim.x;
  for (;;) {
    if (lane == 0) {
      s_k = 0;
      s_first = r->next;
      if (r->state == MPIXD_SEND) {
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
          posted = mpixd_claim_way(h, r->peer, r->tag, r->seq, &slot);
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
        if (r->state == MPIXD_RECV_BOUND) {
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
          r->status = r->msg_bytes > r->bytes ? MPIX_DEVICE_ERR_TRUNCATE : MPIX_DEVICE_SUCCESS;
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

__global__ void __launch_bounds__(1024) send_kernel(const MPIX_Device_comm h, const void *buf, std::size_t bytes, int peer, int tag,
                            std::uint32_t seq, ExecFailure *failure, std::uint32_t op) {
  const int rc = mpixd_send_block(&h, buf, bytes, peer, tag, true, seq);
  if (threadIdx.x == 0) note_failure(failure, rc, op);
}

__global__ void __launch_bounds__(1024) recv_kernel(const MPIX_Device_comm h, void *buf, std::size_t bytes, int peer, int tag,
                            std::uint32_t seq, ExecFailure *failure, std::uint32_t op, ExecResult *out) {
  std::size_t got = 0;
  const int rc = mpixd_recv_block(&h, buf, bytes, peer, tag, &got, true, seq);
  if (threadIdx.x == 0) {
    note_result(out, got, rc);
    note_failure(failure, rc, op);
  }
}

// Starts a request (a bad argument completes it at once with the error, so
// that the wait reports it); a send then writes what the peer has room for,
// by the whole block.
__global__ void start_kernel(const MPIX_Device_comm h, MPIX_Device_request *r, bool send, const void *buf,
                             std::size_t bytes, int peer, int tag, std::uint32_t seq) {
  if (threadIdx.x == 0) {
    const int rc = mpixd_check(&h, buf, bytes, peer, tag, r);
    if (rc != MPIX_DEVICE_SUCCESS) {
      r->state = MPIXD_DONE;
      r->status = rc;
      r->msg_bytes = 0;
    } else if (send) {
      r->peer = peer;
      r->tag = tag;
      r->buf = const_cast<void *>(buf);
      r->bytes = bytes;
      r->msg_bytes = bytes;
      r->chan = mpixd_channel(&h, tag);
      r->nslots = mpixd_nslots(&h, bytes);
      r->ticket = 0;
      r->next = 0;
      r->seq = seq;
      r->flags = 0;
      r->status = MPIX_DEVICE_PENDING;
      r->state = MPIXD_SEND;
    } else {
      mpixd_recv_start(r, const_cast<void *>(buf), bytes, peer, tag, seq);
    }
  }
  __syncthreads();
  if (!send || r->state != MPIXD_SEND) return;
  // Complete now if it fits; the final status stays for the wait.
  const int rc = block_test(&h, r);
  if (threadIdx.x == 0 && rc != MPIX_DEVICE_PENDING) {
    r->status = rc;
    r->state = MPIXD_DONE;
  }
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

__global__ void wait_inline_kernel(const MPIX_Device_comm h, WaitInline list, int n, ExecFailure *failure,
                                   std::uint32_t op) {
  wait_all(&h, list.reqs, list.results, n, failure, op);
}

__global__ void wait_list_kernel(const MPIX_Device_comm h, MPIX_Device_request *const *reqs,
                                 ExecResult *const *results, int n, ExecFailure *failure, std::uint32_t op) {
  wait_all(&h, reqs, results, n, failure, op);
}

ExecStatus launched() { return cudaGetLastError() == cudaSuccess ? ExecStatus::kOk : ExecStatus::kCudaError; }

}  // namespace

BufferKind buffer_kind(const void *p, const void **kernel_view) {
  *kernel_view = p;
  cudaPointerAttributes a{};
  if (p == nullptr || cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return BufferKind::kPageable;
  }
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
  unsigned send_limit = 32, recv_limit = 32, start_limit = 32, wait_limit = 32;

  ~Impl() {
    // Kernels of the stream may still use these: the communicator is being
    // freed (collectively, after the application synchronised its streams),
    // so freeing device memory (which waits for the device) is safe.
    for (auto *c : request_chunks) cudaFree(c);
    for (auto *c : result_chunks) cudaFreeHost(c);
    if (failure != nullptr) cudaFreeHost(failure);
    (void)cudaGetLastError();
  }
  bool current() {
    int cur = -1;
    return (cudaGetDevice(&cur) == cudaSuccess && cur == device) || cudaSetDevice(device) == cudaSuccess;
  }
};

StreamExec::StreamExec(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StreamExec::~StreamExec() = default;

std::unique_ptr<StreamExec> StreamExec::create(void *cuda_stream, const MPIX_Device_comm &h, ExecStatus *status) {
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0 || h.path != MPIXD_PATH_IPC) {
    (void)cudaGetLastError();
    *status = ExecStatus::kNoGpu;
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->stream = static_cast<cudaStream_t>(cuda_stream);
  impl->h = h;
  *status = ExecStatus::kCudaError;
  if (cudaStreamGetDevice(impl->stream, &impl->device) != cudaSuccess && cudaGetDevice(&impl->device) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  void *mem = nullptr;
  if (cudaHostAlloc(&mem, sizeof(ExecFailure), cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  // The most threads each kernel launches with (registers decide), in warps.
  const auto limit = [](const void *fn) {
    cudaFuncAttributes a{};
    if (cudaFuncGetAttributes(&a, fn) != cudaSuccess || a.maxThreadsPerBlock < 32) return 32u;
    return static_cast<unsigned>(a.maxThreadsPerBlock) / 32u * 32u;
  };
  impl->send_limit = limit(reinterpret_cast<const void *>(send_kernel));
  impl->recv_limit = limit(reinterpret_cast<const void *>(recv_kernel));
  impl->start_limit = limit(reinterpret_cast<const void *>(start_kernel));
  impl->wait_limit = std::min(limit(reinterpret_cast<const void *>(wait_inline_kernel)),
                              limit(reinterpret_cast<const void *>(wait_list_kernel)));
  impl->failure = static_cast<ExecFailure *>(mem);
  impl->failure->code = 0;
  impl->failure->op = 0;
  *status = ExecStatus::kOk;
  return std::unique_ptr<StreamExec>(new StreamExec(std::move(impl)));  // NOLINT: private constructor
}

ExecStatus StreamExec::send(const void *buf, std::size_t bytes, int peer, int tag, std::uint32_t seq,
                            std::uint32_t op) {
  Impl &m = *impl_;
  if (!m.current()) return ExecStatus::kCudaError;
  send_kernel<<<1, threads_for(bytes, m.send_limit), 0, m.stream>>>(m.h, buf, bytes, peer, tag, seq, m.failure, op);
  return launched();
}

ExecStatus StreamExec::recv(void *buf, std::size_t bytes, int peer, int tag, std::uint32_t seq, std::uint32_t op,
                            ExecResult *out) {
  Impl &m = *impl_;
  if (!m.current()) return ExecStatus::kCudaError;
  if (out != nullptr) out->written = 0;
  recv_kernel<<<1, threads_for(bytes, m.recv_limit), 0, m.stream>>>(m.h, buf, bytes, peer, tag, seq, m.failure, op, out);
  return launched();
}

ExecStatus StreamExec::isend(DeviceRequest r, const void *buf, std::size_t bytes, int peer, int tag,
                             std::uint32_t seq) {
  Impl &m = *impl_;
  if (!m.current()) return ExecStatus::kCudaError;
  start_kernel<<<1, threads_for(bytes, m.start_limit), 0, m.stream>>>(m.h, r, true, buf, bytes, peer, tag, seq);
  return launched();
}

ExecStatus StreamExec::irecv(DeviceRequest r, void *buf, std::size_t bytes, int peer, int tag, std::uint32_t seq) {
  Impl &m = *impl_;
  if (!m.current()) return ExecStatus::kCudaError;
  start_kernel<<<1, 32, 0, m.stream>>>(m.h, r, false, buf, bytes, peer, tag, seq);
  return launched();
}

ExecStatus StreamExec::wait(const std::vector<DeviceRequest> &reqs, const std::vector<ExecResult *> &results,
                            std::uint32_t op) {
  Impl &m = *impl_;
  const int n = static_cast<int>(reqs.size());
  if (n == 0) return ExecStatus::kOk;
  if (!m.current()) return ExecStatus::kCudaError;
  for (ExecResult *r : results)
    if (r != nullptr) r->written = 0;
  // A block per request up to kWaitBlocks (small enough to be resident
  // beside the peer's kernels: blocks that wait keep their SMs).
  const unsigned blocks = static_cast<unsigned>(std::min(n, kWaitBlocks));
  const unsigned threads = std::min(256u, m.wait_limit);
  if (n <= kWaitInline) {
    WaitInline list{};
    for (int i = 0; i < n; ++i) {
      list.reqs[i] = reqs[i];
      list.results[i] = results.empty() ? nullptr : results[i];
    }
    wait_inline_kernel<<<blocks, threads, 0, m.stream>>>(m.h, list, n, m.failure, op);
    return launched();
  }
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
  if (cudaMallocAsync(&dev, bytes, m.stream) != cudaSuccess) return launched();
  if (cudaMemcpyAsync(dev, table.data(), bytes, cudaMemcpyHostToDevice, m.stream) != cudaSuccess) return launched();
  auto *const *dreqs = static_cast<MPIX_Device_request *const *>(dev);
  auto *const *dres = reinterpret_cast<ExecResult *const *>(static_cast<void **>(dev) + n);
  wait_list_kernel<<<blocks, threads, 0, m.stream>>>(m.h, dreqs, dres, n, m.failure, op);
  const ExecStatus st = launched();
  cudaFreeAsync(dev, m.stream);
  return st;
}

DeviceRequest StreamExec::take_request() {
  Impl &m = *impl_;
  if (m.free_requests.empty()) {
    void *chunk = nullptr;
    if (!m.current() || cudaMalloc(&chunk, sizeof(MPIX_Device_request) * kRequestChunk) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
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
  if (r != nullptr) impl_->free_requests.push_back(r);
}

ExecResult *StreamExec::take_result() {
  Impl &m = *impl_;
  std::lock_guard<std::mutex> g(m.results_mutex);
  if (m.free_results.empty()) {
    void *chunk = nullptr;
    if (cudaHostAlloc(&chunk, sizeof(ExecResult) * kResultChunk, cudaHostAllocMapped | cudaHostAllocPortable) !=
        cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
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
  if (!m.current() || cudaMallocAsync(&p, bytes > 0 ? bytes : 1, m.stream) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return p;
}

ExecStatus StreamExec::copy(void *dst, const void *src, std::size_t bytes) {
  Impl &m = *impl_;
  if (bytes == 0) return ExecStatus::kOk;
  if (cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, m.stream) != cudaSuccess) return launched();
  return ExecStatus::kOk;
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

}  // namespace mpix::gpu
