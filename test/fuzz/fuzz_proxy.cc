// libFuzzer target: the device proxy's decoders (mpix/proxy_desc.h). The
// first bytes give the queue (slots, bounce bytes, communicator size,
// MPI_TAG_UB), the ticket and its submission word; the rest is the
// descriptor, in a buffer of its own exact size. An accepted descriptor is
// used as ProxyQueue::start uses it: its count bytes are written into the
// place its data lives (the descriptor's inline bytes or a bounce buffer of
// exactly the queue's size), so a size that overflows them is an ASan
// error; ranks and tags must be ones MPI accepts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mpix/proxy_desc.h"

namespace {

using namespace mpix::devproxy;

[[noreturn]] void fail(const char *what) {
  std::fprintf(stderr, "fuzz_proxy: accepted %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  constexpr std::size_t kHead = 16;
  if (size < kHead) return 0;
  static const int kTagUbs[] = {0, 1, 32767, 2147483647};
  ProxyLimits l;
  l.slots = 1u << (data[0] % 8);
  l.inline_bytes = 32u * (data[1] % 16);
  l.size = data[2] % 9;
  l.tag_ub = kTagUbs[data[3] % 4];
  std::uint32_t ticket = 0;
  std::uint64_t word = 0;
  std::memcpy(&ticket, data + 4, sizeof ticket);
  std::memcpy(&word, data + 8, sizeof word);
  std::uint32_t slot = 0;
  bool valid = false;
  if (decode_submission(word, ticket, l.slots, &slot, &valid)) {
    if (static_cast<std::uint32_t>(word >> 32) != static_cast<std::uint32_t>(ticket + 1u)) fail("another ticket's submission");
    if (valid && slot >= l.slots) fail("a slot that does not exist");
  }

  const std::vector<std::uint8_t> msg(data + kHead, data + size);
  ProxyOp o;
  if (decode_proxy_desc(msg.data(), msg.size(), ticket, l, &o) != MPIX_DEVICE_SUCCESS) return 0;
  mpixd_pdesc d;
  std::memcpy(&d, msg.data(), sizeof d);  // accepted: at least a whole descriptor
  if (d.seq != ticket + 1) fail("a descriptor of another ticket");
  if (o.op != MPIXD_OP_SEND && o.op != MPIXD_OP_RECV) fail("an unknown operation");
  if (o.peer < 0 || o.peer >= l.size) fail("a peer outside the communicator");
  if (o.tag < 0 || o.tag > l.tag_ub) fail("a tag out of range");
  if (o.count < 0 || static_cast<std::uint64_t>(o.count) != d.bytes) fail("a count that is not the size");
  if (o.data == ProxyData::kUser) {
    if (o.buf == 0) fail("no buffer for data that lives in one");
  } else {
    // Where start() puts or takes the data: the descriptor's (or completion
    // record's) inline bytes, or the slot's bounce buffer.
    std::vector<std::uint8_t> place(o.data == ProxyData::kInline ? MPIXD_INLINE : l.inline_bytes);
    if (o.count > 0) std::memset(place.data(), 0xab, static_cast<std::size_t>(o.count));
    if (o.buf != 0) fail("a buffer named for data that travels inline");
  }
  return 0;
}
