#include "ucx_wire.h"

#include <cstring>

namespace mpix::progress::ucx {

WireError decode_envelope(const void *header, std::size_t length, int world_size, Envelope *out) {
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

WireError check_link_arrival(const Envelope &e, int link_size, bool rndv, std::size_t length) {
  if (e.source < 0 || e.source >= link_size) return WireError::kBadRank;
  if (rndv != (e.h.kind == kRendezvous)) return WireError::kBadKind;
  if (rndv && length != e.h.bytes) return WireError::kBadSize;
  return WireError::kOk;
}

WireError decode_control(const void *header, std::size_t length, int world_size, Control *out) {
  if (length < sizeof(Control)) return WireError::kTruncated;
  if (length > sizeof(Control)) return WireError::kBadLength;
  Control c;
  std::memcpy(&c, header, sizeof c);
  if (c.kind != kCredit && c.kind != kSyncAck) return WireError::kBadKind;
  if (c.world < 0 || c.world >= world_size) return WireError::kBadRank;
  if (c.reserved != 0) return WireError::kBadField;
  if (c.kind == kCredit && c.cookie != 0) return WireError::kBadField;
  if (c.kind == kSyncAck && (c.credit != 0 || c.cookie == 0)) return WireError::kBadField;
  *out = c;
  return WireError::kOk;
}

}  // namespace mpix::progress::ucx
