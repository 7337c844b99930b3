// The hosts' part of pulled sends on a GPU-run stream communicator
// (include/mpix_device/pull.h): a sender exports the allocation holding a
// large send buffer to a peer once, by CUDA IPC; the peer's host maps it and
// writes the address into its own mailbox, then confirms; from then on the
// sender's kernels name the buffer by (export, offset) and the receiving
// kernel copies straight out of it.
//
// The hand-shake runs on the device handle's private communicator, polled
// by the enqueuing thread (PullLinks::poll) rather than waited for: until a
// peer has confirmed, sends of that buffer go by the ring, so a peer that
// never polls (its enqueues all done) only costs the second copy, never a
// hang.
#ifndef MPIX_MPIX_STREAM_PULL_H
#define MPIX_MPIX_STREAM_PULL_H

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "mpix_device/proto.h"

namespace mpix::stream {

class PullLinks {
 public:
  // For the mailbox of `h` (this rank's, on `device`); `sync` is the device
  // handle's private communicator (it outlives this object).
  PullLinks(MPI_Comm sync, const MPIX_Device_comm &h, int device);
  // Collective over sync: takes every hand-shake message still on its way,
  // then unmaps what this rank imported.
  ~PullLinks();
  PullLinks(const PullLinks &) = delete;
  PullLinks &operator=(const PullLinks &) = delete;

  // Where a pulled send of device buffer `buf` to `peer` starts: true with
  // the export and the offset within it once the peer has mapped the
  // buffer's allocation; otherwise false (the send goes by the ring), and
  // the allocation is offered to the peer if it was not yet.
  bool ready(const void *buf, int peer, std::uint32_t *export_id, std::uint64_t *offset);
  // The number a pulled send to peer signals on: its low bits pick a done
  // word no pulled send still in flight to peer uses. False when all
  // MPIXD_PULL_DONE are (the send then goes by the ring). A blocking send
  // gives it back at once (the stream runs it to completion before anything
  // later), a nonblocking one when its wait is enqueued.
  bool take_gen(int peer, std::uint32_t *gen);
  void give_gen(int peer, std::uint32_t gen);
  // Takes the hand-shake messages that have arrived (offers: mapped and
  // confirmed; confirmations: recorded). Never waits.
  void poll();

 private:
  enum : std::uint8_t { kNone = 0, kOffered, kMapped, kRefused };
  struct Export {
    std::uint32_t id;
    std::uintptr_t base;
    std::size_t size;
    std::vector<std::uint8_t> peers;  // kNone .. kRefused, by rank
  };
  struct Outgoing {
    MPI_Request req;
    std::unique_ptr<unsigned char[]> data;
  };
  void send(int peer, int tag, const void *data, int bytes);
  void take(const MPI_Status &st, bool map);
  void reap();

  MPI_Comm sync_;
  MPIX_Device_comm h_;
  int device_;
  std::unordered_map<std::uint64_t, Export> exports_;  // by CUDA buffer id
  std::uint32_t next_export_ = 0;
  std::vector<Export *> by_id_;                      // exports_ by export id
  std::vector<std::vector<void *>> imports_;         // what each peer exported to this rank, mapped here
  std::vector<std::unordered_map<std::uint64_t, std::uint32_t>> import_bases_;  // by the peer's address: export id
  std::vector<std::uint32_t> gens_;                   // pulled sends numbered, by peer
  std::vector<std::uint64_t> busy_;                   // done words in use, by peer
  std::vector<int> sent_, received_;                 // hand-shake messages, by peer
  std::deque<Outgoing> outgoing_;
};

}  // namespace mpix::stream

#endif
