// The proxy path's descriptors as the host reads them: what a GPU thread
// wrote into host memory (include/mpix_device/proxy.h), decoded before the
// progress thread turns it into an MPI call. Pure (no MPI, no CUDA) so the
// unit tests and test/fuzz drive it alone. A kernel with a stray write, or
// a descriptor read before it was written, must not make the host post a
// receive into memory past a bounce buffer or abort the job through
// MPI_ERRORS_ARE_FATAL: such a descriptor completes with an error status
// instead.
#ifndef MPIX_MPIX_PROXY_DESC_H
#define MPIX_MPIX_PROXY_DESC_H

#include <cstddef>
#include <cstdint>

#include "mpix_device/proxy.h"

namespace mpix::devproxy {

// The queue and communicator a descriptor belongs to.
struct ProxyLimits {
  std::uint32_t slots = 0;         // pq_slots (a power of two)
  std::uint32_t inline_bytes = 0;  // pq_inline: bounce buffer bytes per slot
  int size = 0;                    // communicator size
  int tag_ub = 0;                  // MPI_TAG_UB
};

// Where a decoded operation's data lives.
enum class ProxyData : std::uint8_t { kUser, kInline, kBounce };

struct ProxyOp {
  std::uint32_t op = 0;  // MPIXD_OP_SEND or MPIXD_OP_RECV
  int peer = 0, tag = 0;
  int count = 0;         // bytes, as MPI's count
  std::uint64_t buf = 0; // kUser: the buffer's address
  ProxyData data = ProxyData::kInline;
};

// The submission word for `ticket`: false while it is not there yet
// (another ticket's word); else *slot is the slot it names and *valid
// whether that slot exists.
bool decode_submission(std::uint64_t word, std::uint32_t ticket, std::uint32_t slots, std::uint32_t *slot,
                       bool *valid);

// n bytes of the descriptor submitted under `ticket`: MPIX_DEVICE_SUCCESS
// and *out, or the status its completion reports (MPIX_DEVICE_ERR_ARG for
// a truncated or stale descriptor, an unknown operation, a size MPI cannot
// take or that disagrees with where the data is; MPIX_DEVICE_ERR_RANK,
// MPIX_DEVICE_ERR_TAG as mpixd_check reports them on the device).
int decode_proxy_desc(const void *p, std::size_t n, std::uint32_t ticket, const ProxyLimits &limits, ProxyOp *out);

}  // namespace mpix::devproxy

#endif
