// MPIX_Info_set_hex, MPIX_Stream_create/free, MPIX_Stream_comm_create,
// MPIX_Comm_get_stream: stream objects and stream communicators.
#include "stream.h"

#include <cstring>
#include <unordered_map>

#include "device/kernel_copy.h"
#include "enqueue.h"
#include "enqueue_kernel.h"
#include "progress/thread.h"
#include "src/errors.h"
#include "src/p2p/comms.h"
#include "src/p2p/engine.h"
#include "src/runtime_state.h"

using namespace mpix;
using namespace mpix::stream;

namespace mpix::stream {
namespace {

// Handles are small integers above MPIX_STREAM_NULL's bit pattern's range
// of kinds, never reused, so a stale handle is recognised as freed.
constexpr int kHandleBase = 0x44000000;

struct Table {
  std::mutex mutex;
  std::unordered_map<int, std::shared_ptr<Stream>> streams;
  int next = 1;
  // Stream communicators' attribute; read without the mutex by every
  // *_enqueue, written once (under it) by the first stream.
  std::atomic<int> keyval{MPI_KEYVAL_INVALID};
  int self_keyval = MPI_KEYVAL_INVALID;  // on MPI_COMM_SELF: finalize hook
};

Table &table() {
  static Table t;
  return t;
}

// Stream communicators carry their StreamComm as an attribute: it dies with
// the communicator whoever frees it (collectively: a GPU-run communicator's
// mailboxes go with it), and stops counting against the stream.
int delete_stream_attr(MPI_Comm, int, void *attr, void *) {
  std::unique_ptr<StreamComm> owned(static_cast<StreamComm *>(attr));
  owned->stream->comms.fetch_sub(1, std::memory_order_acq_rel);
  return MPI_SUCCESS;
}

// MPI_Finalize deletes MPI_COMM_SELF's attributes first: the streams go then
// (the progress thread is already stopped by the MPI_Finalize hook).
int delete_self_attr(MPI_Comm, int, void *, void *) {
  streams_finalize();
  return MPI_SUCCESS;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes MPIX_Info_set_hex's encoding of exactly `size` bytes.
bool decode_hex(const char *s, void *out, std::size_t size) {
  if (std::strlen(s) != 2 * size) return false;
  auto *bytes = static_cast<unsigned char *>(out);
  for (std::size_t i = 0; i < size; ++i) {
    const int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    bytes[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return true;
}

// Reads the CUDA stream out of info; *is_cuda false for a host stream.
bool parse_info(MPI_Info info, bool *is_cuda, void **cuda_stream) {
  *is_cuda = false;
  *cuda_stream = nullptr;
  if (info == MPI_INFO_NULL) return true;
  char type[MPI_MAX_INFO_VAL + 1];
  int flag = 0;
  PMPI_Info_get(info, "type", MPI_MAX_INFO_VAL, type, &flag);
  if (!flag) return true;
  if (std::strcmp(type, "cudaStream_t") != 0) return false;
  char value[MPI_MAX_INFO_VAL + 1];
  PMPI_Info_get(info, "value", MPI_MAX_INFO_VAL, value, &flag);
  if (!flag) return false;
  *is_cuda = true;
  return decode_hex(value, cuda_stream, sizeof *cuda_stream);
}

int ensure_keyvals() {
  Table &t = table();
  if (t.keyval.load(std::memory_order_acquire) != MPI_KEYVAL_INVALID) return MPI_SUCCESS;
  int keyval = MPI_KEYVAL_INVALID;
  int rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_stream_attr, &keyval, nullptr);
  if (rc == MPI_SUCCESS) rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_self_attr, &t.self_keyval, nullptr);
  if (rc == MPI_SUCCESS) rc = PMPI_Comm_set_attr(MPI_COMM_SELF, t.self_keyval, nullptr);
  if (rc == MPI_SUCCESS) t.keyval.store(keyval, std::memory_order_release);
  return rc;
}

}  // namespace

std::shared_ptr<Stream> stream_find(MPIX_Stream h) {
  Table &t = table();
  std::lock_guard<std::mutex> g(t.mutex);
  auto it = t.streams.find(h);
  return it == t.streams.end() ? nullptr : it->second;
}

StreamComm::StreamComm() = default;
StreamComm::~StreamComm() = default;

StreamComm *comm_stream(MPI_Comm comm) {
  const int keyval = table().keyval.load(std::memory_order_acquire);
  if (keyval == MPI_KEYVAL_INVALID || comm == MPI_COMM_NULL) return nullptr;
  void *attr = nullptr;
  int flag = 0;
  if (PMPI_Comm_get_attr(comm, keyval, &attr, &flag) != MPI_SUCCESS || !flag) return nullptr;
  return static_cast<StreamComm *>(attr);
}

void streams_finalize() {
  Table &t = table();
  std::unordered_map<int, std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> g(t.mutex);
    streams.swap(t.streams);
  }
  for (auto &entry : streams)
    if (entry.second->gpu()) gpu_stream_detach(entry.second.get());
  // Keyvals die with MPI; the next MPI_Init (none) would need new ones.
  t.keyval.store(MPI_KEYVAL_INVALID, std::memory_order_release);
  t.self_keyval = MPI_KEYVAL_INVALID;
}

}  // namespace mpix::stream

int MPIX_Info_set_hex(MPI_Info info, const char *key, const void *value, int value_size) {
  if (!runtime_active()) return raise_error(MPI_COMM_SELF, Err::kNotInitialized, __func__);
  if (info == MPI_INFO_NULL) return raise_error(MPI_COMM_SELF, Err::kInvalidArg, __func__);
  if (key == nullptr || value_size < 0 || (value == nullptr && value_size > 0) ||
      2 * value_size > MPI_MAX_INFO_VAL)
    return raise_error(MPI_COMM_SELF, Err::kInvalidArg, __func__);
  std::vector<char> text(2 * static_cast<std::size_t>(value_size) + 1);
  const auto *bytes = static_cast<const unsigned char *>(value);
  static const char kDigits[] = "0123456789ABCDEF";
  // Byte by byte in memory order, as MPICH encodes it.
  for (int i = 0; i < value_size; ++i) {
    text[2 * i] = kDigits[bytes[i] >> 4];
    text[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  text[2 * value_size] = '\0';
  return PMPI_Info_set(info, key, text.data());
}

int MPIX_Stream_create(MPI_Info info, MPIX_Stream *stream) {
  if (!runtime_active()) return raise_error(MPI_COMM_SELF, Err::kNotInitialized, __func__);
  if (stream == nullptr) return raise_error(MPI_COMM_SELF, Err::kInvalidArg, __func__);
  bool is_cuda = false;
  void *cuda_stream = nullptr;
  if (!parse_info(info, &is_cuda, &cuda_stream)) return raise_error(MPI_COMM_SELF, Err::kStreamInfo, __func__);
  auto s = std::make_shared<Stream>();
  if (is_cuda) {
    device::Status st = device::Status::kOk;
    s->trigger = device::StreamTrigger::create(cuda_stream, &st);
    if (!s->trigger) {
      const Err e = st == device::Status::kNoCuda ? Err::kStreamNoCuda : Err::kStreamNoGpu;
      return raise_error(MPI_COMM_SELF, e, __func__);
    }
    // The progress thread calls MPI beside the application.
    if (runtime().thread_underlying != MPI_THREAD_MULTIPLE)
      return raise_error(MPI_COMM_SELF, Err::kNoThreadMultiple, __func__);
    s->queue = std::make_unique<Queue>();
    s->queue->depth = static_cast<std::size_t>(runtime().config.stream_queue_depth);
  }
  Table &t = table();
  {
    std::lock_guard<std::mutex> g(t.mutex);
    const int rc = ensure_keyvals();
    if (rc != MPI_SUCCESS) return rc;
    s->handle = kHandleBase + t.next++;
    t.streams.emplace(s->handle, s);
  }
  if (s->gpu() && !gpu_stream_attach(s)) {
    std::lock_guard<std::mutex> g(t.mutex);
    t.streams.erase(s->handle);
    return raise_error(MPI_COMM_SELF, Err::kInternal, __func__);
  }
  *stream = s->handle;
  return MPI_SUCCESS;
}

int MPIX_Stream_free(MPIX_Stream *stream) {
  if (!runtime_active()) return raise_error(MPI_COMM_SELF, Err::kNotInitialized, __func__);
  if (stream == nullptr) return raise_error(MPI_COMM_SELF, Err::kInvalidArg, __func__);
  Table &t = table();
  std::shared_ptr<Stream> s;
  Err e = Err::kCount;
  {
    std::lock_guard<std::mutex> g(t.mutex);
    auto it = t.streams.find(*stream);
    if (it == t.streams.end()) {
      e = Err::kStreamInvalid;
    } else if (it->second->comms.load(std::memory_order_acquire) > 0 ||
               (it->second->gpu() && gpu_stream_busy(it->second.get()))) {
      e = Err::kStreamInUse;
    } else {
      s = std::move(it->second);
      t.streams.erase(it);
    }
  }
  // Raised outside the lock: the error handler is user code.
  if (e != Err::kCount) return raise_error(MPI_COMM_SELF, e, __func__);
  if (s->gpu()) gpu_stream_detach(s.get());
  *stream = MPIX_STREAM_NULL;
  return MPI_SUCCESS;
}

int MPIX_Stream_comm_create(MPI_Comm comm, MPIX_Stream stream, MPI_Comm *newcomm) {
  if (!runtime_active()) return raise_error(comm, Err::kNotInitialized, __func__);
  if (comm == MPI_COMM_NULL) return raise_error(comm, Err::kInvalidComm, __func__);
  if (newcomm == nullptr) return raise_error(comm, Err::kInvalidArg, __func__);
  std::shared_ptr<Stream> s;
  if (stream != MPIX_STREAM_NULL) {
    s = stream_find(stream);
    // Collective: a rank with a bad stream still takes part in the dup, so
    // the others do not hang; it then frees its copy and reports.
  }
  // Kernels on the stream may wait for what the progress thread moves with
  // mpix's copy kernel: loaded before they run (kernel_copy.h).
  if (s) device::kernel_copy_preload();
  MPI_Comm dup = MPI_COMM_NULL;
  int rc = PMPI_Comm_dup(comm, &dup);
  if (rc != MPI_SUCCESS) return rc;
  // The progress thread's sends and receives go through mpix's engine,
  // with MPI's full matching (wildcards included).
  rc = p2p::comm_created(dup, p2p::Hints{}, /*force=*/true);
  // Collective on every rank, whatever its stream: the ranks agree whether
  // the GPU runs this communicator's operations.
  std::unique_ptr<KernelComm> kernel = KernelComm::create(dup, s.get());
  if (kernel) {
    // Matched by the device tables: no wildcards, and no host calls.
    if (auto c = p2p::p2p_find(dup)) {
      c->add_hints(p2p::Hints{true, true, false});
      c->set_gpu_run();
    }
  }
  if (rc == MPI_SUCCESS && s) {
    {
      std::lock_guard<std::mutex> g(table().mutex);
      rc = ensure_keyvals();
    }
    if (rc == MPI_SUCCESS) {
      auto sc = std::make_unique<StreamComm>();
      sc->stream = s.get();
      sc->kernel = std::move(kernel);
      s->comms.fetch_add(1, std::memory_order_acq_rel);
      rc = PMPI_Comm_set_attr(dup, table().keyval.load(std::memory_order_acquire), sc.get());
      if (rc == MPI_SUCCESS) sc.release();
      else s->comms.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
  if (rc == MPI_SUCCESS && stream != MPIX_STREAM_NULL && !s) {
    MPI_Comm_free(&dup);  // intercepted: detaches the engine too
    return raise_error(comm, Err::kStreamInvalid, __func__);
  }
  if (rc != MPI_SUCCESS) return rc;
  *newcomm = dup;
  return MPI_SUCCESS;
}

int MPIX_Comm_get_stream(MPI_Comm comm, int idx, MPIX_Stream *stream) {
  if (!runtime_active()) return raise_error(comm, Err::kNotInitialized, __func__);
  if (comm == MPI_COMM_NULL) return raise_error(comm, Err::kInvalidComm, __func__);
  if (stream == nullptr) return raise_error(comm, Err::kInvalidArg, __func__);
  StreamComm *sc = comm_stream(comm);
  // One local stream per communicator: index 0 (MPICH also accepts -1 for
  // "the only one").
  if (sc != nullptr && idx != 0 && idx != -1) return raise_error(comm, Err::kInvalidArg, __func__);
  *stream = sc != nullptr ? sc->stream->handle : MPIX_STREAM_NULL;
  return MPI_SUCCESS;
}
