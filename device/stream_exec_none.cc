// Without CUDA there is no GPU to run enqueued operations: create() fails and
// stream communicators keep the host-driven path.
#include "stream_exec.h"

namespace mpix::device {

struct StreamExec::Impl {};

BufferKind buffer_kind(const void *p, const void **kernel_view) {
  *kernel_view = p;
  return BufferKind::kPageable;
}

StreamExec::StreamExec(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StreamExec::~StreamExec() = default;

std::unique_ptr<StreamExec> StreamExec::create(void *, const MPIX_Device_comm &, unsigned, Status *status) {
  *status = Status::kNoGpu;
  return nullptr;
}

Status StreamExec::send(const void *, std::size_t, int, int, std::uint32_t, std::uint32_t) {
  return Status::kNoGpu;
}
Status StreamExec::send_pull(const void *, std::size_t, int, int, std::uint32_t, std::uint32_t, std::uint32_t,
                             std::uint64_t, std::uint32_t) {
  return Status::kNoGpu;
}
Status StreamExec::isend_pull(DeviceRequest, const void *, std::size_t, int, int, std::uint32_t, std::uint32_t,
                              std::uint64_t, std::uint32_t) {
  return Status::kNoGpu;
}
Status StreamExec::recv(void *, std::size_t, int, int, std::uint32_t, std::uint32_t, ExecResult *) {
  return Status::kNoGpu;
}
Status StreamExec::isend(DeviceRequest, const void *, std::size_t, int, int, std::uint32_t) {
  return Status::kNoGpu;
}
Status StreamExec::irecv(DeviceRequest, void *, std::size_t, int, int, std::uint32_t) {
  return Status::kNoGpu;
}
Status StreamExec::wait(const std::vector<DeviceRequest> &, const std::vector<ExecResult *> &, std::uint32_t) {
  return Status::kNoGpu;
}
void StreamExec::group_receives_from(std::size_t) {}
DeviceRequest StreamExec::take_request() { return nullptr; }
void StreamExec::give_back(DeviceRequest) {}
ExecResult *StreamExec::take_result() { return nullptr; }
void StreamExec::give_back(ExecResult *) {}
void *StreamExec::stage(std::size_t) { return nullptr; }
Status StreamExec::copy(void *, const void *, std::size_t) { return Status::kNoGpu; }
void StreamExec::unstage(void *) {}
bool StreamExec::take_failure(ExecFailure *) { return false; }

StagedSlot *staged_slot_alloc() { return nullptr; }
void staged_slot_free(StagedSlot *) {}
Status stage_to_host(void *, StagedSlot *, const void *, std::size_t) { return Status::kNoGpu; }
Status stage_from_host(void *, void *, const StagedSlot *, std::size_t) { return Status::kNoGpu; }

}  // namespace mpix::device
