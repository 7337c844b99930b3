// The libfabric transport's frames (ofi_fabric.h says how they are used)
// and their decoding. Pure functions, no libfabric: the unit tests and
// test/fuzz drive them alone.
//
// Every frame is one FI_MSG message into one of the receive buffers the
// process keeps posted, and starts with its kind:
//
//   message     Envelope + eager payload (or a GPU descriptor)
//   rendezvous  Envelope alone: the payload stays registered at the sender
//               (addr, key) until the receiver read it with fi_read and
//               sent rendezvous-done
//   credit, sync ack, rendezvous done: Control alone
#ifndef MPIX_PROGRESS_OFI_WIRE_H
#define MPIX_PROGRESS_OFI_WIRE_H

#include <cstddef>
#include <cstdint>

#include "progress/wire.h"

namespace mpix::progress::ofi {

enum FrameKind : std::uint32_t {
  kFrameMessage = 1,
  kFrameRendezvous = 2,
  kFrameCredit = 3,
  kFrameSyncAck = 4,
  kFrameRendezvousDone = 5,
};

struct Envelope {
  std::uint32_t frame;    // kFrameMessage or kFrameRendezvous
  std::uint32_t link;     // the receiver's id of the communicator
  std::int32_t source;    // the sender's rank in it
  std::int32_t world;     // the sender's rank in MPI_COMM_WORLD (credit, acks)
  std::uint32_t seq;      // per (communicator, sender, receiver), from 0
  std::uint32_t credit;   // eager credit the sender gives back to the receiver
  WireHeader h;
  // Message with kFlagSyncAck: what the receiver acknowledges. Rendezvous:
  // what its rendezvous-done names (never 0).
  std::uint64_t cookie;
  std::uint64_t addr;     // rendezvous: the data's address in the key's terms
  std::uint64_t key;      // rendezvous: the remote key of its registration
};
static_assert(sizeof(Envelope) == 72, "OFI envelope layout");

struct Control {
  std::uint32_t frame;    // kFrameCredit, kFrameSyncAck or kFrameRendezvousDone
  std::int32_t world;     // its sender's rank in MPI_COMM_WORLD
  std::uint32_t credit;   // kFrameCredit only
  std::uint32_t reserved;
  std::uint64_t cookie;   // acks and dones: the sender's cookie (never 0)
};
static_assert(sizeof(Control) == 24, "OFI control layout");

// A frame as decoded from a receive buffer.
struct Frame {
  std::uint32_t kind = 0;
  Envelope e{};                   // kFrameMessage, kFrameRendezvous
  Control c{};                    // the control kinds
  const char *payload = nullptr;  // kFrameMessage: the bytes after the envelope
  std::size_t payload_bytes = 0;
};

// length bytes received at buf from a sender in a world of world_size
// ranks: a known kind, at least its fixed part (nothing after it unless a
// message), the sender's ranks in range, reserved and unused fields zero, a
// cookie where its kind needs one and only there. The protocol's envelope
// itself (check_header) is checked once the link is known.
WireError decode_frame(const void *buf, std::size_t length, int world_size, Frame *out);
// Then, by the link (link_size members) the envelope names: the source is
// a member, and exactly rendezvous envelopes come as rendezvous frames.
WireError check_link_arrival(const Envelope &e, int link_size);

}  // namespace mpix::progress::ofi

#endif
