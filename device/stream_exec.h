// Stream-ordered send and receive executed by the GPU: small kernels on the
// application's CUDA stream move the data over a device communicator's IPC
// mailboxes (include/mpix_device/), so no host copy and no host handshake
// sits between the stream and the peer. Free of MPI: mpix/enqueue_kernel.cc
// numbers the operations and keeps the requests; a build without CUDA gets
// the stub (stream_exec_none.cc), whose create() always fails.
#ifndef MPIX_DEVICE_STREAM_EXEC_H
#define MPIX_DEVICE_STREAM_EXEC_H


#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "mpix_device/proto.h"
#include "status.h"

namespace mpix::device {


// What a finished receive (or waited request) reports, written by a kernel
// into host-mapped memory before the stream moves on.
struct ExecResult {
  volatile std::uint64_t bytes;  // the message's size
  volatile std::int32_t status;  // MPIX_DEVICE_SUCCESS or MPIX_DEVICE_ERR_*
};

// The first failure a kernel of this stream saw (host-mapped; 0: none).
struct ExecFailure {
  std::int32_t code;  // MPIX_DEVICE_ERR_*
  std::uint32_t op;   // the operation's number (StreamExec's caller counts them)
};

// Where a buffer of an enqueued operation lives, and the address a kernel
// uses for it.
enum class BufferKind { kDevice, kHostMapped, kPageable };
BufferKind buffer_kind(const void *p, const void **kernel_view);

// A device request of a nonblocking operation (MPIX_Device_request in
// device memory; the address stays valid for the StreamExec's life).
using DeviceRequest = MPIX_Device_request *;

class StreamExec {
 public:
  // For operations on the CUDA stream `cuda_stream` over `h` (IPC path).
  // wide_blocks: thread blocks that move one message of several chunks.
  static std::unique_ptr<StreamExec> create(void *cuda_stream, const MPIX_Device_comm &h, unsigned wide_blocks,
                                            Status *status);
  ~StreamExec();
  StreamExec(const StreamExec &) = delete;
  StreamExec &operator=(const StreamExec &) = delete;

  // Blocking operations: the stream moves on once the send buffer may be
  // reused / the message is in the receive buffer. seq: the message's number
  // within its (peer, tag); op: the operation's number for failure reports;
  // out (may be null): where the receive's size and status go.
  Status send(const void *buf, std::size_t bytes, int peer, int tag, std::uint32_t seq, std::uint32_t op);
  Status recv(void *buf, std::size_t bytes, int peer, int tag, std::uint32_t seq, std::uint32_t op,
                  ExecResult *out);
  // A blocking send the receiver pulls (include/mpix_device/pull.h): buf is
  // at `offset` in the allocation exported as `export_id`, which the peer
  // has mapped; gen: the number it waits for (PullLinks::take_gen).
  Status send_pull(const void *buf, std::size_t bytes, int peer, int tag, std::uint32_t seq, std::uint32_t op,
                   std::uint32_t export_id, std::uint64_t offset, std::uint32_t gen);
  // Nonblocking: starts `r` in stream order; wait() completes it.
  // isend_pull: a send the peer pulls (as send_pull; gen's done word must
  // not be another pulled send's in flight).
  Status isend_pull(DeviceRequest r, const void *buf, std::size_t bytes, int peer, int tag, std::uint32_t seq,
                    std::uint32_t export_id, std::uint64_t offset, std::uint32_t gen);
  Status isend(DeviceRequest r, const void *buf, std::size_t bytes, int peer, int tag, std::uint32_t seq);
  Status irecv(DeviceRequest r, void *buf, std::size_t bytes, int peer, int tag, std::uint32_t seq);
  // The stream moves on once every request of reqs is complete (results[i]
  // may be null; results may be empty).
  Status wait(const std::vector<DeviceRequest> &reqs, const std::vector<ExecResult *> &results,
                  std::uint32_t op);
  // Receives of at least `bytes` (0: none) that a wait starts get a group
  // of blocks, which copy the message together should it be pulled (the
  // bound of pulled sends: a smaller receive is never pulled).
  void group_receives_from(std::size_t bytes);

  // Requests and results: taken by the enqueuing thread, given back once a
  // later operation of the stream no longer needs them (stream order makes
  // the reuse safe). Grow as needed; never fail but for lack of memory.
  DeviceRequest take_request();
  void give_back(DeviceRequest r);
  ExecResult *take_result();
  void give_back(ExecResult *r);

  // Stream-ordered staging for pageable host buffers (cudaMallocAsync on the
  // stream, freed in stream order after the operation that uses it).
  void *stage(std::size_t bytes);
  Status copy(void *dst, const void *src, std::size_t bytes);
  void unstage(void *p);

  // The first failure a kernel recorded since the last call (cleared).
  bool take_failure(ExecFailure *f);

 private:
  struct Impl;
  explicit StreamExec(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---- the host-driven path's small device messages ----
// Where no kernel can reach the peer, a small device message still avoids
// synchronous copies on the progress thread: it is copied on the
// application's stream, into a pinned device-mapped slot before the
// operation's trigger (a send), or out of it after the completion word (a
// receive), and the progress thread moves host memory only.
constexpr std::size_t kStagedBytes = 8192;
struct StagedSlot {
  volatile std::uint64_t bytes;  // a receive's size, written before its completion word
  std::uint64_t pad[7];
  unsigned char data[kStagedBytes];
};
// nullptr without CUDA or when pinned memory runs out.
StagedSlot *staged_slot_alloc();
void staged_slot_free(StagedSlot *s);
// On cuda_stream, in its order: n bytes of device memory into the slot.
Status stage_to_host(void *cuda_stream, StagedSlot *slot, const void *src, std::size_t n);
// On cuda_stream: what the slot received (at most capacity bytes) to dst.
Status stage_from_host(void *cuda_stream, void *dst, const StagedSlot *slot, std::size_t capacity);

}  // namespace mpix::device

#endif
