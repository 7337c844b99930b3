#include "ofi_wire.h"

#include <cstring>

namespace mpix::progress::ofi {
namespace {

WireError decode_envelope(const char *buf, std::size_t length, int world_size, Frame *out) {
  if (length < sizeof(Envelope)) return WireError::kTruncated;
  Envelope e;
  std::memcpy(&e, buf, sizeof e);
  if (e.world < 0 || e.world >= world_size || e.source < 0) return WireError::kBadRank;
  if (e.frame == kFrameRendezvous) {
    // Its data stays at the sender: nothing may follow the envelope.
    if (length > sizeof(Envelope)) return WireError::kBadLength;
    if (e.cookie == 0) return WireError::kBadField;
  } else {
    if (e.addr != 0 || e.key != 0) return WireError::kBadField;
    if (e.cookie != 0 && (e.h.flags & kFlagSyncAck) == 0) return WireError::kBadField;
    out->payload = buf + sizeof(Envelope);
    out->payload_bytes = length - sizeof(Envelope);
  }
  out->e = e;
  return WireError::kOk;
}

WireError decode_control(const char *buf, std::size_t length, int world_size, Frame *out) {
  if (length < sizeof(Control)) return WireError::kTruncated;
  if (length > sizeof(Control)) return WireError::kBadLength;
  Control c;
  std::memcpy(&c, buf, sizeof c);
  if (c.world < 0 || c.world >= world_size) return WireError::kBadRank;
  if (c.reserved != 0) return WireError::kBadField;
  if (c.frame == kFrameCredit ? c.cookie != 0 : c.credit != 0 || c.cookie == 0) return WireError::kBadField;
  out->c = c;
  return WireError::kOk;
}

}  // namespace

WireError decode_frame(const void *buf, std::size_t length, int world_size, Frame *out) {
  std::uint32_t kind = 0;
  if (length < sizeof kind) return WireError::kTruncated;
  std::memcpy(&kind, buf, sizeof kind);
  Frame f;
  f.kind = kind;
  WireError err = WireError::kBadKind;
  const char *p = static_cast<const char *>(buf);
  switch (kind) {
    case kFrameMessage:
    case kFrameRendezvous: err = decode_envelope(p, length, world_size, &f); break;
    case kFrameCredit:
    case kFrameSyncAck:
    case kFrameRendezvousDone: err = decode_control(p, length, world_size, &f); break;
    default: break;
  }
  if (err == WireError::kOk) *out = f;
  return err;
}

WireError check_link_arrival(const Envelope &e, int link_size) {
  if (e.source < 0 || e.source >= link_size) return WireError::kBadRank;
  if ((e.frame == kFrameRendezvous) != (e.h.kind == kRendezvous)) return WireError::kBadKind;
  return WireError::kOk;
}

}  // namespace mpix::progress::ofi
