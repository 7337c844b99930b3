// The GPU rendezvous's messages between peers (gpu_path.h describes the
// protocol): the descriptor after a kGpuRendezvous envelope and the
// receiver's reply. Their decoding is pure (no MPI, no CUDA) so the unit
// tests and test/fuzz drive it alone: a descriptor from a peer decides
// which of the peer's memory the receiver maps and copies from, a reply
// how the sender cuts its data, so neither is trusted.
#ifndef MPIX_SRC_P2P_GPU_WIRE_H
#define MPIX_SRC_P2P_GPU_WIRE_H

#include <cstddef>
#include <cstdint>

#include "device/ipc.h"
#include "progress/wire.h"

namespace mpix::p2p {

using progress::WireError;

// Follows the WireHeader of a kGpuRendezvous envelope.
struct GpuRts {
  std::uint64_t host;       // node identity (hostname and boot id)
  std::int32_t pid;
  std::int32_t device;      // sender's GPU ordinal
  std::uint64_t base;       // allocation base in the sender's address space
  std::uint64_t size;       // allocation size (the receiver's cache: which addresses it occupies)
  std::uint64_t offset;     // where the data starts in the allocation
  std::uint32_t flags;      // kRtsIpc: handle valid (contiguous data, exportable)
  std::uint32_t reserved;
  unsigned char handle[device::kIpcHandleBytes];
};
static_assert(sizeof(GpuRts) == 112, "GPU rendezvous descriptor layout");
constexpr std::uint32_t kRtsIpc = 1;

// The receiver's answer to a GPU rendezvous.
struct GpuReply {
  std::uint32_t mode;       // kReplyDone or kReplyStage
  std::uint32_t reserved;
  std::uint64_t chunk;      // kReplyStage: chunk size the receiver posts
};
static_assert(sizeof(GpuReply) == progress::kGpuReplyBytes, "GPU rendezvous reply layout");
constexpr std::uint32_t kReplyDone = 1;
constexpr std::uint32_t kReplyStage = 2;
// Chunk sizes a receiver may ask for (gpu_start raises MPIX_GPU_CHUNK to
// the minimum; chunks travel as int counts).
constexpr std::uint64_t kMinChunk = 4096;
constexpr std::uint64_t kMaxChunk = 2147483647;

// The descriptor of a message of `bytes` bytes: exactly one GpuRts, known
// flags, a device ordinal, and with an IPC handle data that lies inside the
// allocation it names (the receiver copies [offset, offset + bytes) of the
// mapping).
WireError decode_gpu_rts(const void *p, std::size_t n, std::uint64_t bytes, GpuRts *out);
// A reply of n bytes to a sender that offered an IPC handle or not:
// "done" only after an IPC offer (else no data would ever move), "stage"
// with a chunk size in [kMinChunk, kMaxChunk].
WireError decode_gpu_reply(const void *p, std::size_t n, bool ipc_offered, GpuReply *out);

}  // namespace mpix::p2p

#endif
