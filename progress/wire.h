// The protocol's envelope as it crosses the wire, and the checks every
// envelope from a peer passes before anything acts on it. Pure functions
// (no MPI, no UCX) so that unit tests and the libFuzzer targets of
// test/fuzz drive them alone: a peer's bytes are never trusted, a
// malformed or truncated message is reported and dropped, never read past
// its end or handed to the matcher (an arrival with a negative tag would
// be a wildcard there).
#ifndef MPIX_PROGRESS_WIRE_H
#define MPIX_PROGRESS_WIRE_H

#include <cstddef>
#include <cstdint>

namespace mpix::progress {

// The protocol's envelope. The transport carries it unchanged.
struct WireHeader {
  std::int32_t tag;
  std::uint32_t kind;
  std::uint64_t bytes;     // the message's size (not the payload's for GPU envelopes)
  std::int32_t data_tag;   // rendezvous: unique per (communicator, destination) in flight
  std::uint32_t flags;     // kFlagSyncAck
};
static_assert(sizeof(WireHeader) == 24, "wire header layout");

// kGpuRendezvous*: device data announced by src/p2p/gpu_path.cc (with or
// without its descriptor as payload). kSingleCopy: host data of a process
// on the receiver's node, announced by a SingleCopyRts that the receiver
// reads it through (progress/single_copy.h); always with kFlagSyncAck, which
// the receiver answers once it read the data. kGpuBuffered: the bytes of an
// earlier GPU rendezvous (same data tag) that no receive took for a while,
// sent by its sender so that it may complete without the receive (a small
// device send must not wait for its receive forever: src/p2p/gpu_path.h);
// never matched itself. kSplitAsk, kSplitDone: a single-copy transfer
// whose sender offered to help (SingleCopyRts::offer): the receiver asks it
// to write the message's second part into the receive buffer while it reads
// the first, and the sender says when its part is written; never matched.
// kGpuReply: the receiver's answer to a GPU rendezvous (data tag: the
// rendezvous's; payload: src/p2p/gpu_wire.h's GpuReply, kGpuReplyBytes),
// in band with the transport's other messages; never matched.
enum WireKind : std::uint32_t {
  kEager = 1,
  kRendezvous = 2,
  kGpuRendezvous = 3,
  kGpuRendezvousBare = 4,
  kSingleCopy = 5,
  kGpuBuffered = 6,
  kSplitAsk = 7,
  kSplitDone = 8,
  kGpuReply = 9
};
constexpr std::size_t kGpuReplyBytes = 16;
// An eager synchronous send: the receiver's engine calls Link::matched()
// once a receive took it, and only then does the send complete.
constexpr std::uint32_t kFlagSyncAck = 1;
// A chunk of a staged GPU rendezvous (src/p2p/gpu_path.h): a kRendezvous
// envelope without a tag, naming its transfer by the data tag, never
// matched; the receiver pulls chunks in the order they arrive.
constexpr std::uint32_t kFlagGpuChunk = 2;

// The payload of a kSingleCopy envelope: where the sender's bytes are.
struct SingleCopyRts {
  std::uint64_t addr;   // in the sender's address space
  std::uint64_t bytes;  // the message's size (the envelope's bytes)
  std::int32_t pid;     // the sender's process
  std::uint32_t offer;  // nonzero: the sender writes a part if asked (kSplitAsk names this)
};
static_assert(sizeof(SingleCopyRts) == 24, "single-copy descriptor layout");

// kSplitAsk's payload: write bytes [offset, offset + bytes) of the offered
// message to `dst` in process pid.
struct SplitAsk {
  std::uint64_t dst;     // in the receiver's address space
  std::uint64_t offset;  // into the message
  std::uint64_t bytes;
  std::int32_t pid;      // the receiver's process
  std::uint32_t offer;   // the sender's SingleCopyRts::offer
  std::uint32_t ask;     // the receiver's name for this transfer, echoed by kSplitDone
  std::uint32_t claim;   // which claim word of the pair's ring settles who writes (src/p2p/split_copy.cc)
};
static_assert(sizeof(SplitAsk) == 40, "split request layout");

// kSplitDone's payload: the sender's part is written (error 0) or not
// (an errno value).
struct SplitDone {
  std::uint32_t ask;
  std::int32_t error;
};
static_assert(sizeof(SplitDone) == 8, "split answer layout");

// Why a peer's message was rejected (kOk: it was not).
enum class WireError : std::uint8_t {
  kOk = 0,
  kTruncated,   // shorter than its fixed-size part
  kBadLength,   // longer than its fixed-size part where nothing may follow
  kBadKind,     // unknown kind or opcode, or one its transport cannot carry
  kBadFlags,    // unknown flag bits, or a flag the kind does not allow
  kBadTag,      // tag outside [0, MPI_TAG_UB]
  kBadDataTag,  // rendezvous data tag outside [0, MPI_TAG_UB)
  kBadSize,     // sizes that disagree with what arrived or lie outside what they describe
  kBadRank,     // a rank outside its communicator
  kBadField,    // a reserved or unused field that is not zero
};
const char *wire_error_string(WireError e);

// What a valid envelope may contain, from the receiver's side.
struct WireLimits {
  int tag_ub = 32767;                // MPI_TAG_UB
  std::size_t descriptor_bytes = 0;  // the payload of a kGpuRendezvous (src/p2p/gpu_wire.h)
};

// An envelope with payload_bytes bytes of payload after it: eager payloads
// are exactly the message, rendezvous envelopes carry nothing (or the GPU
// descriptor), tags are valid tags, only known flags.
WireError check_header_full(const WireHeader &h, std::size_t payload_bytes, const WireLimits &limits);
// Every arrival is checked here, so its commonest case (a plain or
// acknowledged eager message with a valid tag) is decided inline; anything
// else, valid or not, gets check_header_full's answer.
inline WireError check_header(const WireHeader &h, std::size_t payload_bytes, const WireLimits &limits) {
  if (h.kind == kEager && (h.flags & ~kFlagSyncAck) == 0 && h.tag >= 0 && h.tag <= limits.tag_ub)
    return payload_bytes == h.bytes ? WireError::kOk : WireError::kBadSize;
  return check_header_full(h, payload_bytes, limits);
}

// A kSingleCopy envelope's payload (n bytes) for an envelope announcing
// `bytes` bytes: sizes agree, a process id, an address range that does not
// wrap.
WireError decode_single_copy(const void *payload, std::size_t n, std::uint64_t bytes, SingleCopyRts *out);
// kSplitAsk and kSplitDone payloads: exact sizes, ranges that do not wrap,
// a process id, names that are not 0, an error that is 0 or an errno (the
// claim index is the engine's to check against its rings).
WireError decode_split_ask(const void *payload, std::size_t n, SplitAsk *out);
WireError decode_split_done(const void *payload, std::size_t n, SplitDone *out);

// The pmpi transport's landing buffer: got bytes received, envelope first.
// On success *h is the envelope and *payload_bytes what follows it.
WireError decode_landing(const void *buf, std::size_t got, WireHeader *h, std::size_t *payload_bytes);

// Reports a dropped message on stderr ("[mpix] <where>: dropped a
// malformed message from rank N: <why>") and counts it.
void report_malformed(const char *where, int source, WireError e);
// Messages dropped so far by this process.
std::uint64_t malformed_messages();

}  // namespace mpix::progress

#endif
