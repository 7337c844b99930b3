// The host end of the proxy path of device send/recv (the queue protocol is
// in include/mpix_device/proto.h): the descriptor queue's memory and a
// Poller on the progress thread that starts each descriptor's operation
// through MPI on the communicator itself and writes completions back.
#ifndef MPIX_MPIX_DEVICE_PROXY_H
#define MPIX_MPIX_DEVICE_PROXY_H

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "mpix_device/proxy.h"
#include "progress/thread.h"
#include "proxy_desc.h"
#include "src/p2p/request.h"

namespace mpix::devproxy {

// Per-operation cost stays flat however many operations are in flight (a
// 16384-entry queue full of them on the GPU): a poll touches only the
// submissions that arrived and the operations that finished (mpix's
// requests tell us, p2p::RequestWatcher), never every slot in flight.
class ProxyQueue final : public progress::Poller, private p2p::RequestWatcher {
 public:
  // A queue of `slots` (power of two) descriptors for comm, its fields put
  // into *h, and the poller attached; messages up to inline_bytes (a
  // multiple of 32) go through a bounce buffer per descriptor, so the host
  // moves them as host memory. host_memory: everything in plain host
  // memory (only host threads may then post: tests without a GPU); else
  // mapped pinned memory plus the ticket counter and slot bitmap in device
  // memory. nullptr when
  // the memory or the progress thread is not available.
  static std::unique_ptr<ProxyQueue> create(MPI_Comm comm, MPIX_Device_comm *h, std::uint32_t slots,
                                            std::uint32_t inline_bytes, bool host_memory);
  ProxyQueue() = default;
  ~ProxyQueue() override;
  ProxyQueue(const ProxyQueue &) = delete;
  ProxyQueue &operator=(const ProxyQueue &) = delete;

  int poll() override;
  // Never idle: a GPU cannot wake the thread, so it keeps polling (backing
  // off to sleeps of at most a few hundred microseconds) while a proxy
  // queue exists.
  bool idle() override { return false; }

 private:
  void start(std::uint32_t slot, std::uint32_t ticket);
  // The operation in `slot` finished (or MPI says so now): concludes it
  // with MPI_Test and writes its completion record; false if MPI_Test says
  // it is still running.
  bool conclude(std::uint32_t slot);
  void complete(std::uint32_t slot, int status, std::uint64_t bytes);
  void request_done(std::uint64_t slot) override;

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPIX_Device_comm h_{};
  ProxyLimits limits_;
  std::uint32_t mask_ = 0;
  void *mapped_ = nullptr;                  // pq, pc, credit, submissions, bounce buffers (GPU case)
  void *dev_ = nullptr;                     // ticket counter, slot bitmap (GPU case)
  std::unique_ptr<unsigned char[]> host_;   // everything (host_memory case)
  std::uint32_t head_ = 0;                  // next submission to take
  std::uint32_t running_ = 0;               // operations started, not concluded
  std::vector<MPI_Request> reqs_;     // per slot, MPI_REQUEST_NULL once complete
  std::vector<p2p::Request *> ours_;  // per slot: mpix's request behind reqs_ (nullptr: MPI's own)
  std::vector<std::uint32_t> tickets_;  // per slot: the ticket of its operation
  // Slots whose mpix request finished, in finishing order; filled by
  // request_done under the engine lock (from whichever thread progressed it).
  std::vector<std::uint32_t> done_;
  std::vector<std::uint32_t> finished_;  // poll's copy of done_
  // Slots whose request is MPI's own (no watcher): tested every poll.
  // Empty on a communicator mpix handles, as a device handle's always is.
  std::vector<std::uint32_t> unwatched_;
  bool attached_ = false;
};

}  // namespace mpix::devproxy

#endif
