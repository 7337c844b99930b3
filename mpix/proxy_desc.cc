#include "proxy_desc.h"

#include <climits>
#include <cstring>

namespace mpix::devproxy {

bool decode_submission(std::uint64_t word, std::uint32_t ticket, std::uint32_t slots, std::uint32_t *slot,
                       bool *valid) {
  if (static_cast<std::uint32_t>(word >> 32) != ticket + 1) return false;
  *slot = static_cast<std::uint32_t>(word);
  *valid = *slot < slots;
  return true;
}

int decode_proxy_desc(const void *p, std::size_t n, std::uint32_t ticket, const ProxyLimits &limits, ProxyOp *out) {
  if (n < sizeof(mpixd_pdesc)) return MPIX_DEVICE_ERR_ARG;
  // One copy: the fields checked are the fields used.
  mpixd_pdesc d;
  std::memcpy(&d, p, sizeof d);
  if (d.seq != ticket + 1) return MPIX_DEVICE_ERR_ARG;
  if (d.op != MPIXD_OP_SEND && d.op != MPIXD_OP_RECV) return MPIX_DEVICE_ERR_ARG;
  if (d.peer < 0 || d.peer >= limits.size) return MPIX_DEVICE_ERR_RANK;
  if (d.tag < 0 || d.tag > limits.tag_ub) return MPIX_DEVICE_ERR_TAG;
  if (d.bytes > static_cast<std::uint64_t>(INT_MAX)) return MPIX_DEVICE_ERR_ARG;
  // As mpixd_proxy_post places the data: in the descriptor up to
  // MPIXD_INLINE bytes, in the slot's bounce buffer up to pq_inline, else
  // in the caller's buffer, named only then.
  const bool inl = d.bytes <= MPIXD_INLINE;
  const bool bounce = !inl && d.bytes <= limits.inline_bytes;
  if ((d.buf == 0) != (inl || bounce)) return MPIX_DEVICE_ERR_ARG;
  out->op = d.op;
  out->peer = d.peer;
  out->tag = d.tag;
  out->count = static_cast<int>(d.bytes);
  out->buf = d.buf;
  out->data = inl ? ProxyData::kInline : bounce ? ProxyData::kBounce : ProxyData::kUser;
  return MPIX_DEVICE_SUCCESS;
}

}  // namespace mpix::devproxy
