// libFuzzer target: the GPU rendezvous's descriptor and reply decoders
// (src/p2p/gpu_wire.h). The first byte picks the decoder; then the
// message's size (descriptor) or whether an IPC handle was offered
// (reply); the rest is the message, in a buffer of its own exact size.
// What is accepted must decode to exactly its bytes and keep the promises
// the GPU path relies on: an IPC copy stays inside the peer's allocation,
// a "done" answers an IPC offer, a chunk size is one the pipeline can use.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "src/p2p/gpu_wire.h"

namespace {

using namespace mpix::p2p;

[[noreturn]] void fail(const char *what) {
  std::fprintf(stderr, "fuzz_gpu_wire: accepted %s\n", what);
  std::abort();
}

void rts(const std::uint8_t *data, std::size_t size) {
  if (size < 8) return;
  std::uint64_t bytes = 0;
  std::memcpy(&bytes, data, sizeof bytes);
  const std::vector<std::uint8_t> msg(data + 8, data + size);
  GpuRts r{};
  if (decode_gpu_rts(msg.data(), msg.size(), bytes, &r) != WireError::kOk) return;
  if (msg.size() != sizeof r || std::memcmp(&r, msg.data(), sizeof r) != 0) fail("a descriptor that is not its bytes");
  if ((r.flags & ~kRtsIpc) != 0 || r.device < 0) fail("a descriptor with bad fields");
  // The receiver copies [offset, offset + bytes) of the mapped allocation.
  const unsigned __int128 end = static_cast<unsigned __int128>(r.offset) + bytes;
  if ((r.flags & kRtsIpc) != 0 && end > r.size) fail("an IPC copy outside the allocation");
}

void reply(const std::uint8_t *data, std::size_t size) {
  if (size < 1) return;
  const bool ipc = (data[0] & 1) != 0;
  const std::vector<std::uint8_t> msg(data + 1, data + size);
  GpuReply r{};
  if (decode_gpu_reply(msg.data(), msg.size(), ipc, &r) != WireError::kOk) return;
  if (msg.size() != sizeof r || std::memcmp(&r, msg.data(), sizeof r) != 0) fail("a reply that is not its bytes");
  if (r.mode == kReplyDone ? !ipc || r.chunk != 0 : r.mode != kReplyStage || r.chunk < kMinChunk || r.chunk > kMaxChunk)
    fail("a reply the sender cannot act on");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0) rts(data + 1, size - 1);
  else reply(data + 1, size - 1);
  return 0;
}
