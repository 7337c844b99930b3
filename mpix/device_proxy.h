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

#include "mpix_device/proto.h"
#include "progress/thread.h"

namespace mpix::p2p {
class Request;
}

namespace mpix::devproxy {

class ProxyQueue final : public progress::Poller {
 public:
  // A queue of `slots` (power of two) descriptors for comm, its fields put
  // into *h, and the poller attached; messages up to inline_bytes (a
  // multiple of 32) go through a bounce buffer per descriptor, so the host
  // moves them as host memory. host_memory: everything in plain host
  // memory (only host threads may then post: tests without a GPU); else
  // mapped pinned memory plus a device-memory ticket counter. nullptr when
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
  void start(std::uint32_t t);
  void complete(std::uint32_t t, int status, std::uint64_t bytes);

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPIX_Device_comm h_{};
  std::uint32_t mask_ = 0;
  void *mapped_ = nullptr;                  // pq, pc, credit (GPU case)
  void *tail_dev_ = nullptr;                // ticket counter (GPU case)
  std::unique_ptr<unsigned char[]> host_;   // everything (host_memory case)
  std::uint32_t head_ = 0;                  // next ticket to start
  std::uint32_t lo_ = 0;                    // tickets below are released
  std::vector<MPI_Request> reqs_;           // per slot, MPI_REQUEST_NULL once complete
  std::vector<const p2p::Request *> ours_;  // per slot: mpix's request behind reqs_ (nullptr: MPI's own)
  std::vector<std::uint32_t> finished_;     // tickets whose operation is done (poll's scratch)
  bool attached_ = false;
};

}  // namespace mpix::devproxy

#endif
