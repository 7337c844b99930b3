#include "ucx_wire.h"

#include <cstring>

namespace mpix::progress::ucx {

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
