// *_enqueue operations run by the GPU. On a stream communicator whose ranks
// all have GPU streams and reach each other by CUDA IPC, each enqueued
// operation is a small kernel on the communicator's CUDA stream that moves
// the data itself through the communicator's device mailboxes
// (device/stream_exec.h, include/mpix_device/): the host only launches it,
// and the stream never waits for a host thread (except for statuses the
// application asks for, which the progress thread copies).
//
// Matching needs no wildcards: such communicators are no-wildcard by
// construction (MPI_ANY_SOURCE/MPI_ANY_TAG raise MPIX_ERR_WILDCARD), and the
// n-th send to (peer, tag) meets the n-th receive from it, both numbered
// here in call order, which is stream order.
#ifndef MPIX_MPIX_ENQUEUE_KERNEL_H
#define MPIX_MPIX_ENQUEUE_KERNEL_H

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "device/stream_exec.h"
#include "key_numbers.h"
#include "stream.h"

namespace mpix::devhandle {
struct DeviceHandle;
}

namespace mpix::stream {

class PullLinks;

class KernelComm {
 public:
  // Collective over comm, a stream communicator being created (s: its local
  // stream, nullptr if it has none). nullptr on every rank when its
  // operations cannot run on the GPU (a rank without a GPU stream, ranks on
  // several nodes, MPIX_STREAM_PATH=host, or a set-up failure on any rank):
  // the communicator then keeps the host-driven path.
  static std::unique_ptr<KernelComm> create(MPI_Comm comm, Stream *s);
  ~KernelComm();
  KernelComm(const KernelComm &) = delete;
  KernelComm &operator=(const KernelComm &) = delete;

  // MPIX_Send/Recv/Isend/Irecv_enqueue on this communicator.
  int p2p(Stream &s, OpType type, const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, int peer, int tag,
          MPI_Comm comm, MPI_Status *status, MPI_Request *request, const char *func);
  // Raises (on comm) a failure a kernel recorded since the last call; else 0.
  int raise_failure(MPI_Comm comm, const char *func);

  // Launches the waits for the requests of this communicator among reqs
  // (others are skipped), in stream order; the statuses the application
  // asked for go into fills (copied by the progress thread), and what must
  // follow the waits (copies out of staging) is appended to the stream.
  int wait(const std::vector<std::shared_ptr<EnqRequest>> &reqs, const std::vector<MPI_Status *> &outs,
           std::vector<StatusFill> *fills, const char *func);

 private:
  KernelComm() = default;
  int launch_failed(MPI_Comm comm, const char *func);

  // Sends the peer pulls: *export_id, *offset, *gen filled when this one can
  // be (a nonblocking one's gen is given back by its wait).
  bool pull_ready(const void *buf, std::size_t bytes, int peer, std::uint32_t *export_id, std::uint64_t *offset,
                  std::uint32_t *gen);

  std::unique_ptr<devhandle::DeviceHandle> dev_;
  std::unique_ptr<device::StreamExec> exec_;
  std::unique_ptr<PullLinks> pull_;  // goes first: its hand-shake needs dev_'s communicator
  KeyNumbers sends_, recvs_;
  std::uint32_t next_op_ = 0;
};

}  // namespace mpix::stream

#endif
