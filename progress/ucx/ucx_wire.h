// The UCX transport's two active-message headers (ucx_worker.h says how
// they are used) and their decoding. Pure functions, no UCX: the unit
// tests and test/fuzz drive them alone.
#ifndef MPIX_PROGRESS_UCX_WIRE_H
#define MPIX_PROGRESS_UCX_WIRE_H

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "progress/wire.h"

namespace mpix::progress::ucx {

struct Envelope {
  std::uint32_t link;     // the receiver's id of the communicator
  std::int32_t source;    // the sender's rank in it
  std::int32_t world;     // the sender's rank in MPI_COMM_WORLD (credit, acks)
  std::uint32_t seq;      // per (communicator, sender, receiver), from 0
  std::uint32_t credit;   // eager credit the sender gives back to the receiver
  std::uint32_t reserved;
  WireHeader h;
  std::uint64_t cookie;   // kFlagSyncAck: what the receiver acknowledges
};
static_assert(sizeof(Envelope) == 56, "UCX envelope layout");

enum ControlKind : std::uint32_t { kCredit = 1, kSyncAck = 2 };
struct Control {
  std::uint32_t kind;
  std::int32_t world;
  std::uint32_t credit;
  std::uint32_t reserved;
  std::uint64_t cookie;
};
static_assert(sizeof(Control) == 24, "UCX control layout");

// A message's header as the handler got it, world_size ranks in
// MPI_COMM_WORLD: routing fields in range (the sender's ranks index the
// worker's peers), a cookie only on acknowledged sends. The envelope
// itself (check_header) is checked once the link is known.
// Inline: every message of the transport passes here.
inline WireError decode_envelope(const void *header, std::size_t length, int world_size, Envelope *out) {
  if (length < sizeof(Envelope)) return WireError::kTruncated;
  if (length > sizeof(Envelope)) return WireError::kBadLength;
  Envelope e;
  std::memcpy(&e, header, sizeof e);
  if (e.world < 0 || e.world >= world_size || e.source < 0) return WireError::kBadRank;
  if (e.reserved != 0) return WireError::kBadField;
  if (e.cookie != 0 && (e.h.flags & kFlagSyncAck) == 0) return WireError::kBadField;
  *out = e;
  return WireError::kOk;
}
// Then, by the link (link_size members) the envelope names: the source is
// a member, UCX rendezvous data comes exactly with rendezvous envelopes
// and is exactly the message (a pull allocates what the envelope says).
inline WireError check_link_arrival(const Envelope &e, int link_size, bool rndv, std::size_t length) {
  if (e.source < 0 || e.source >= link_size) return WireError::kBadRank;
  if (rndv != (e.h.kind == kRendezvous)) return WireError::kBadKind;
  if (rndv && length != e.h.bytes) return WireError::kBadSize;
  return WireError::kOk;
}
// A control message: a known kind, a sender in range, credit only on
// kCredit, a cookie (never 0, the first is 1) only on kSyncAck.
WireError decode_control(const void *header, std::size_t length, int world_size, Control *out);

}  // namespace mpix::progress::ucx

#endif
