// MPIX streams inside mpix: the stream objects, the communicators they are
// attached to, and the queue of operations a GPU stream has not yet
// reached.
//
// A host stream (no CUDA stream) runs each *_enqueue at once on the calling
// thread. A GPU stream defers it: the calling thread appends an Op to the
// stream's queue and pushes "write trigger := seq" (and, for blocking
// operations, "wait for done >= seq") into the CUDA stream; the progress
// thread starts the operation when it sees the trigger word reach seq, and
// writes the done word when a blocking operation has completed.
#ifndef MPIX_MPIX_STREAM_H
#define MPIX_MPIX_STREAM_H

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "device/stream_exec.h"
#include "device/stream_trigger.h"
#include "mpix.h"

namespace mpix::stream {

struct Stream;
class KernelComm;

// What an MPIX_Isend_enqueue/MPIX_Irecv_enqueue handle of a GPU stream
// stands for. The handle is a generalized request (a valid MPI_Request that
// can never collide with the MPI library's) until MPIX_Wait*_enqueue takes
// it; the operation itself starts later, on the progress thread.
struct EnqRequest {
  MPI_Request handle = MPI_REQUEST_NULL;
  Stream *stream = nullptr;
  // Run by the GPU (KernelComm): the device request, and what the wait
  // must do after it. Enqueuing thread only.
  KernelComm *kernel = nullptr;
  device::DeviceRequest dreq = nullptr;
  bool recv = false;
  int peer = MPI_PROC_NULL, tag = 0;
  std::size_t capacity = 0;      // receive buffer bytes
  void *staged = nullptr;        // device staging of a pageable buffer
  void *user_buf = nullptr;      // the pageable receive buffer staged for
  std::uint32_t pull_gen = 0;    // a pulled send's number (0: not pulled), given back by its wait
  // Host-driven: a small device message's pinned slot (the receive's data
  // is copied out of it on the stream after the wait).
  device::StagedSlot *slot = nullptr;
  // Progress thread only, from here on.
  MPI_Request inner = MPI_REQUEST_NULL;  // the started send/receive
  bool done = false;
  MPI_Status status{};
};

enum class OpType : std::uint8_t { kSend, kRecv, kIsend, kIrecv, kWait, kStatus, kRelease };

// A status a GPU-run operation left in host-mapped memory, copied into the
// application's MPI_Status by the progress thread (kStatus).
struct StatusFill {
  device::ExecResult *result = nullptr;  // null: an empty status (sends, MPI_PROC_NULL)
  MPI_Status *out = nullptr;
  int source = MPI_PROC_NULL, tag = MPI_ANY_TAG;
  std::size_t capacity = 0;
  device::StreamExec *exec = nullptr;  // takes the result back
};

// One deferred operation of a GPU stream. Written by the enqueuing thread
// before it is queued; afterwards only the progress thread touches it.
struct Op {
  std::uint32_t seq = 0;
  OpType type = OpType::kSend;
  const char *func = "";  // the MPIX_ call that made it (error messages)
  const void *sbuf = nullptr;
  void *rbuf = nullptr;
  int count = 0;
  MPI_Datatype dtype = MPI_DATATYPE_NULL;
  bool dtype_owned = false;  // a dup of a derived type, freed once started
  int peer = MPI_PROC_NULL;
  int tag = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Status *status_out = MPI_STATUS_IGNORE;  // kRecv, kWait
  std::shared_ptr<EnqRequest> req;               // kIsend, kIrecv
  std::vector<std::shared_ptr<EnqRequest>> waits;  // kWait (nullptr: was MPI_REQUEST_NULL)
  MPI_Status *statuses_out = MPI_STATUSES_IGNORE;  // kWait from Waitall
  bool waitall = false;
  std::vector<StatusFill> fills;                   // kStatus
  device::StagedSlot *slot = nullptr;                 // kSend, kRecv: staged small device message
  std::vector<device::StagedSlot *> release;          // kRelease: slots the stream is done with
  // Progress thread state.
  bool started = false;
  bool finished = false;
  MPI_Request inner = MPI_REQUEST_NULL;  // kSend, kRecv
};

// Staging slots of a GPU stream's host-driven small device messages: taken
// by the enqueuing thread, given back by the progress thread.
class StagePool {
 public:
  StagePool() = default;
  ~StagePool();
  StagePool(const StagePool &) = delete;
  StagePool &operator=(const StagePool &) = delete;
  device::StagedSlot *take();  // nullptr: pinned memory ran out
  void give(device::StagedSlot *s);

 private:
  std::mutex mutex_;
  std::vector<device::StagedSlot *> free_, all_;
};

// Operations of one GPU stream not yet retired, in stream order.
struct Queue {
  std::mutex mutex;                       // guards ops (append vs. retire)
  std::condition_variable room;           // signalled when ops are retired
  std::deque<std::unique_ptr<Op>> ops;
  std::size_t depth = 1024;               // MPIX_STREAM_QUEUE_DEPTH
  std::uint32_t next_seq = 0;             // enqueuing thread only
  // Progress thread only: started I*_enqueue requests not yet complete.
  std::vector<std::shared_ptr<EnqRequest>> running;
  std::atomic<std::size_t> running_count{0};  // running.size(), for other threads
  StagePool stage;
};

struct Stream {
  MPIX_Stream handle = MPIX_STREAM_NULL;
  std::unique_ptr<device::StreamTrigger> trigger;  // nullptr: a host stream
  std::unique_ptr<Queue> queue;                 // GPU streams
  std::atomic<int> comms{0};                    // stream communicators using it
  std::atomic<bool> in_use{false};              // an MPIX call runs on it now
  // The first host-driven operation that failed (its MPI error code; 0:
  // none): reported by the next call on the stream, then cleared.
  std::atomic<int> failed{0};
  bool gpu() const { return trigger != nullptr; }
};

// What a stream communicator carries (its attribute): its local stream and,
// when its operations run on the GPU, their state.
struct StreamComm {
  Stream *stream = nullptr;
  std::unique_ptr<KernelComm> kernel;
  StreamComm();
  ~StreamComm();
};

// The live stream behind h, or nullptr (never created, freed, NULL).
std::shared_ptr<Stream> stream_find(MPIX_Stream h);
// The stream side of comm (a stream communicator), or nullptr.
StreamComm *comm_stream(MPI_Comm comm);

// Claims s for one MPIX call: a stream is a serial context, and two threads
// inside it at once is an error we can detect cheaply.
class StreamClaim {
 public:
  explicit StreamClaim(Stream *s) : s_(s), ok_(!s->in_use.exchange(true, std::memory_order_acquire)) {}
  ~StreamClaim() {
    if (ok_) s_->in_use.store(false, std::memory_order_release);
  }
  StreamClaim(const StreamClaim &) = delete;
  StreamClaim &operator=(const StreamClaim &) = delete;
  bool ok() const { return ok_; }

 private:
  Stream *s_;
  bool ok_;
};

// MPI_Finalize: drops every stream and outstanding handle.
void streams_finalize();

}  // namespace mpix::stream

#endif
