// Stream-triggered operations, device side: two 32-bit words in host-mapped
// pinned memory shared between the progress engine and one CUDA stream.
//
//   trigger: the stream writes operation number `seq` into it when it reaches
//            the operation (cuStreamWriteValue32, after all earlier work of
//            the stream, with a memory barrier: the data it produced is
//            visible before the word is);
//   done:    the progress engine writes `seq` into it when a blocking
//            operation completed; the stream waits for it
//            (cuStreamWaitValue32, GEQ: cyclic comparison, so the 32-bit
//            numbers may wrap).
//
// No host callback sits in the stream (cudaLaunchHostFunc serialises other
// streams and blocks a driver thread); the host never synchronises the
// stream. Usable from host-only translation units; a build without CUDA gets
// the stub (stream_trigger_none.cc), whose create() always fails.
#ifndef MPIX_DEVICE_STREAM_TRIGGER_H
#define MPIX_DEVICE_STREAM_TRIGGER_H


#include <cstdint>
#include <memory>

#include "status.h"

namespace mpix::device {


class StreamTrigger {
 public:
  // For the CUDA stream `cuda_stream` (a cudaStream_t; nullptr is the legacy
  // default stream). nullptr and *status != kOk when CUDA, a GPU or stream
  // memory operations are missing.
  static std::unique_ptr<StreamTrigger> create(void *cuda_stream, Status *status);
  ~StreamTrigger();
  StreamTrigger(const StreamTrigger &) = delete;
  StreamTrigger &operator=(const StreamTrigger &) = delete;

  // Appends to the stream "trigger := seq" and, when wait, "block until
  // done >= seq". Called by the one thread using the stream, in seq order.
  Status push(std::uint32_t seq, bool wait);
  // The last seq the stream reached (acquire: what the host wrote before
  // enqueuing those operations is visible).
  std::uint32_t triggered() const;
  // Releases the stream's wait on every seq' with seq' <= seq (cyclically).
  void complete(std::uint32_t seq);
  // The cudaStream_t it pushes into.
  void *cuda_stream() const;
  // Makes the stream's device current on the calling thread (the progress
  // thread, before it moves the stream's data).
  void make_current() const;

 private:
  struct Impl;
  explicit StreamTrigger(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// a - b as a signed distance between cyclic 32-bit sequence numbers.
inline std::int32_t seq_diff(std::uint32_t a, std::uint32_t b) { return static_cast<std::int32_t>(a - b); }

}  // namespace mpix::device

#endif
