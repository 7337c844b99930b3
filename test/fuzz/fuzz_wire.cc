// libFuzzer target: the decoders of envelopes from peers (progress/wire.h,
// progress/ucx/ucx_wire.h, progress/ofi/ofi_wire.h). The first byte picks the
// decoder (pmpi landing buffer, UCX message header, UCX control header,
// libfabric frame), the next few its
// limits; the rest is the message, each part in a buffer of its own exact
// size so that reading past it is an ASan error. What a decoder accepts is
// used as the transports and the engine use it (the eager payload copied
// out for its envelope's size) and must satisfy the documented rules, and
// it must decode to exactly the bytes it came from.
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "progress/ofi/ofi_wire.h"
#include "progress/ucx/ucx_wire.h"
#include "progress/wire.h"

namespace {

using namespace mpix::progress;
using namespace mpix::progress::ucx;

[[noreturn]] void fail(const char *what) {
  std::fprintf(stderr, "fuzz_wire: accepted %s\n", what);
  std::abort();
}

WireLimits limits_of(std::uint8_t b) {
  static const int kTagUbs[] = {0, 1, 32767, INT_MAX};
  return WireLimits{kTagUbs[b % 4], 112};
}

// What the engine does with an envelope that passed check_header.
void use(const WireHeader &h, const std::uint8_t *payload, std::size_t payload_bytes, const WireLimits &l) {
  if (h.kind < kEager || h.kind > kGpuReply) fail("an unknown kind");
  if (h.tag < 0 || h.tag > l.tag_ub) fail("a tag out of range");
  if ((h.flags & ~(kFlagSyncAck | kFlagGpuChunk)) != 0) fail("unknown flags");
  if ((h.flags & kFlagGpuChunk) != 0 && (h.kind != kRendezvous || h.tag != 0 || (h.flags & kFlagSyncAck) != 0))
    fail("a GPU chunk envelope");
  if (h.kind == kEager) {
    std::vector<std::uint8_t> copy(static_cast<std::size_t>(h.bytes));  // bounded: payload_bytes == h.bytes
    if (h.bytes > 0) std::memcpy(copy.data(), payload, static_cast<std::size_t>(h.bytes));
  } else if (h.kind == kGpuBuffered) {
    // The bytes of an earlier GPU rendezvous, kept in its envelope's place.
    if (h.flags != 0) fail("flags on buffered GPU bytes");
    if (h.data_tag < 0 || h.data_tag >= l.tag_ub) fail("a data tag out of range");
    std::vector<std::uint8_t> copy(static_cast<std::size_t>(h.bytes));  // bounded: payload_bytes == h.bytes
    if (h.bytes > 0) std::memcpy(copy.data(), payload, static_cast<std::size_t>(h.bytes));
  } else if (h.kind == kSingleCopy) {
    if ((h.flags & kFlagSyncAck) == 0) fail("a single-copy envelope nobody acknowledges");
    if (payload_bytes != sizeof(SingleCopyRts)) fail("a single-copy payload");
    SingleCopyRts d{};
    if (decode_single_copy(payload, payload_bytes, h.bytes, &d) == WireError::kOk &&
        (d.pid <= 0 || d.bytes != h.bytes || d.addr + d.bytes < d.addr))
      fail("a single-copy descriptor");
  } else if (h.kind == kGpuReply) {
    // Never matched: a data tag naming a send, one GpuReply.
    if (h.flags != 0 || h.tag != 0 || h.data_tag < 0 || h.data_tag >= l.tag_ub) fail("a GPU reply envelope");
    if (payload_bytes != kGpuReplyBytes || h.bytes != payload_bytes) fail("a GPU reply payload");
  } else if (h.kind == kSplitAsk || h.kind == kSplitDone) {
    // Never matched: the tag and data tag are unused and must be 0.
    if (h.flags != 0 || h.tag != 0 || h.data_tag != 0 || h.bytes != payload_bytes) fail("a split control envelope");
    SplitAsk a{};
    SplitDone d{};
    if (h.kind == kSplitAsk && decode_split_ask(payload, payload_bytes, &a) == WireError::kOk &&
        (a.pid <= 0 || a.offer == 0 || a.ask == 0 || a.bytes == 0 || a.offset + a.bytes < a.offset ||
         a.dst + a.bytes < a.dst))
      fail("a split request");
    if (h.kind == kSplitDone && decode_split_done(payload, payload_bytes, &d) == WireError::kOk &&
        (d.ask == 0 || d.error < 0))
      fail("a split answer");
  } else {
    if (h.data_tag < 0 || h.data_tag >= l.tag_ub) fail("a data tag out of range");
    if (payload_bytes != (h.kind == kGpuRendezvous ? l.descriptor_bytes : 0)) fail("a rendezvous payload");
  }
}

void landing(const std::uint8_t *data, std::size_t size) {
  if (size < 1) return;
  const WireLimits l = limits_of(data[0]);
  const std::vector<std::uint8_t> msg(data + 1, data + size);
  WireHeader h{};
  std::size_t payload = 0;
  if (decode_landing(msg.data(), msg.size(), &h, &payload) != WireError::kOk) return;
  if (payload + sizeof h != msg.size() || std::memcmp(&h, msg.data(), sizeof h) != 0) fail("a landing that is not its bytes");
  const WireError verdict = check_header_full(h, payload, l);
  if (check_header(h, payload, l) != verdict) fail("check_header's inline case disagreeing with check_header_full");
  if (verdict == WireError::kOk) use(h, msg.data() + sizeof h, payload, l);
}

void message(const std::uint8_t *data, std::size_t size) {
  if (size < 4) return;
  const WireLimits l = limits_of(data[0]);
  const int world_size = data[1] % 8 + 1, link_size = data[2] % 8 + 1;
  const bool rndv = (data[3] & 1) != 0;
  const std::size_t header_length = data[3] >> 1;  // 0 .. 127, around sizeof(Envelope)
  data += 4;
  size -= 4;
  if (header_length > size) return;
  const std::vector<std::uint8_t> header(data, data + header_length), body(data + header_length, data + size);
  Envelope e{};
  if (decode_envelope(header.data(), header.size(), world_size, &e) != WireError::kOk) return;
  if (header.size() != sizeof e || std::memcmp(&e, header.data(), sizeof e) != 0) fail("an envelope that is not its bytes");
  if (e.world < 0 || e.world >= world_size) fail("a world rank out of range");
  if (e.reserved != 0) fail("a reserved envelope field");
  // The receiver acknowledges a cookie: only one a synchronous send asked for.
  if (e.cookie != 0 && (e.h.flags & kFlagSyncAck) == 0) fail("a cookie without an acknowledged send");
  if (check_link_arrival(e, link_size, rndv, body.size()) != WireError::kOk) return;
  if (e.source < 0 || e.source >= link_size) fail("a source out of range");
  if (rndv != (e.h.kind == kRendezvous)) fail("rendezvous data with another kind");
  if (rndv && body.size() != e.h.bytes) fail("rendezvous data of another size than announced");
  const std::size_t payload = rndv ? 0 : body.size();
  if (check_header(e.h, payload, l) == WireError::kOk) use(e.h, body.data(), payload, l);
}

void control(const std::uint8_t *data, std::size_t size) {
  if (size < 1) return;
  const int world_size = data[0] % 8 + 1;
  const std::vector<std::uint8_t> msg(data + 1, data + size);
  Control c{};
  if (decode_control(msg.data(), msg.size(), world_size, &c) != WireError::kOk) return;
  if (msg.size() != sizeof c || std::memcmp(&c, msg.data(), sizeof c) != 0) fail("a control message that is not its bytes");
  if (c.world < 0 || c.world >= world_size) fail("a control sender out of range");
  if (c.kind == kSyncAck ? c.cookie == 0 || c.credit != 0 : c.kind != kCredit || c.cookie != 0) fail("a control message of another kind");
}

// A libfabric frame as a receive buffer holds it: the whole message.
void ofi_frame(const std::uint8_t *data, std::size_t size) {
  if (size < 2) return;
  const WireLimits l = limits_of(data[0]);
  const int world_size = data[1] % 8 + 1, link_size = data[1] / 8 % 8 + 1;
  const std::vector<std::uint8_t> msg(data + 2, data + size);
  ofi::Frame f;
  if (ofi::decode_frame(msg.data(), msg.size(), world_size, &f) != WireError::kOk) return;
  if (f.kind == ofi::kFrameMessage || f.kind == ofi::kFrameRendezvous) {
    const ofi::Envelope &e = f.e;
    if (msg.size() < sizeof e || std::memcmp(&e, msg.data(), sizeof e) != 0) fail("an OFI envelope that is not its bytes");
    if (e.frame != f.kind) fail("an OFI envelope of another kind");
    if (e.world < 0 || e.world >= world_size || e.source < 0) fail("an OFI sender out of range");
    if (e.frame == ofi::kFrameRendezvous) {
      // The receiver reads (addr, key) and names the cookie in its done.
      if (msg.size() != sizeof e || f.payload_bytes != 0) fail("an OFI rendezvous with data after it");
      if (e.cookie == 0) fail("an OFI rendezvous without a cookie");
    } else {
      if (e.addr != 0 || e.key != 0) fail("an OFI message naming remote memory");
      if (e.cookie != 0 && (e.h.flags & kFlagSyncAck) == 0) fail("an OFI cookie without an acknowledged send");
      if (f.payload != reinterpret_cast<const char *>(msg.data()) + sizeof e || f.payload_bytes != msg.size() - sizeof e)
        fail("an OFI payload that is not the bytes after the envelope");
    }
    if (ofi::check_link_arrival(e, link_size) != WireError::kOk) return;
    if (e.source >= link_size) fail("an OFI source out of range");
    if ((e.frame == ofi::kFrameRendezvous) != (e.h.kind == kRendezvous)) fail("an OFI rendezvous of another kind");
    if (check_header(e.h, f.payload_bytes, l) == WireError::kOk)
      use(e.h, reinterpret_cast<const std::uint8_t *>(f.payload), f.payload_bytes, l);
    return;
  }
  const ofi::Control &c = f.c;
  if (msg.size() != sizeof c || std::memcmp(&c, msg.data(), sizeof c) != 0) fail("an OFI control frame that is not its bytes");
  if (c.frame != f.kind || c.world < 0 || c.world >= world_size || c.reserved != 0) fail("an OFI control frame out of range");
  if (c.frame == ofi::kFrameCredit ? c.cookie != 0 : c.cookie == 0 || c.credit != 0) fail("an OFI control frame of another kind");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0) return 0;
  switch (data[0] % 4) {
    case 0: landing(data + 1, size - 1); break;
    case 1: message(data + 1, size - 1); break;
    case 2: control(data + 1, size - 1); break;
    default: ofi_frame(data + 1, size - 1); break;
  }
  return 0;
}
