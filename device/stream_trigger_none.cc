// Stream triggers in a build without CUDA: there is no CUDA stream to
// trigger from, so creation always fails (MPIX_Stream_create reports
// MPIX_ERR_NO_CUDA) and the other members are never reached.
#include "stream_trigger.h"

namespace mpix::device {

struct StreamTrigger::Impl {};

StreamTrigger::StreamTrigger(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StreamTrigger::~StreamTrigger() = default;

std::unique_ptr<StreamTrigger> StreamTrigger::create(void *, Status *status) {
  *status = Status::kNoCuda;
  return nullptr;
}

Status StreamTrigger::push(std::uint32_t, bool) { return Status::kNoCuda; }
std::uint32_t StreamTrigger::triggered() const { return 0; }
void StreamTrigger::complete(std::uint32_t) {}
void *StreamTrigger::cuda_stream() const { return nullptr; }
void StreamTrigger::make_current() const {}

}  // namespace mpix::device
