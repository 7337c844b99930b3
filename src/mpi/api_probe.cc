// Intercepted probes and matched receives: MPI_Probe/Iprobe/Mprobe/Improbe,
// MPI_Mrecv/Imrecv.
#include <cstring>
#include <type_traits>
#include <unordered_map>

#include "api_common.h"
#include "progress/immortal.h"
#include "src/p2p/staged_native.h"
#include "src/visibility.h"

using namespace mpix;
using namespace mpix::p2p;

namespace {

// MPI_Message values for messages mpix took out of its matcher. In MPICH a
// handle is an int whose two top bits give its kind and are never 00; Open
// MPI's are pointers. Either way the values below never collide with the
// MPI library's own handles, and only mpix's Mrecv/Imrecv ever see them.
struct MessageTable {
  std::unordered_map<std::uintptr_t, std::unique_ptr<Message>> taken;
  std::uint32_t next = 1;
};
MessageTable &messages() {
  static Immortal<MessageTable> t;
  return t.get();
}

template <class H>
std::uintptr_t key_of(H h) {
  std::uintptr_t k = 0;
  std::memcpy(&k, &h, sizeof h);
  return k;
}

template <class H>
H make_handle(Message *m, std::uint32_t serial) {
  if constexpr (std::is_pointer_v<H>) {
    (void)serial;
    return reinterpret_cast<H>(m);
  } else {
    (void)m;
    const std::uint32_t v = 0x0D000000u | (serial & 0x00FFFFFFu);
    H h;
    std::memcpy(&h, &v, sizeof h);
    return h;
  }
}

MPI_Message register_message(std::unique_ptr<Message> m) {
  MessageTable &t = messages();
  const MPI_Message h = make_handle<MPI_Message>(m.get(), t.next++);
  t.taken.emplace(key_of(h), std::move(m));
  return h;
}

std::unique_ptr<Message> claim_message(MPI_Message h) {
  MessageTable &t = messages();
  auto it = t.taken.find(key_of(h));
  if (it == t.taken.end()) return nullptr;
  std::unique_ptr<Message> m = std::move(it->second);
  t.taken.erase(it);
  return m;
}

void message_status(const Message &m, MPI_Status *status) {
  status_fill(status, m.source, m.tag, -1, static_cast<MPI_Count>(m.bytes), false);
}

int check_probe(MPI_Comm comm, const P2PComm &c, int source, int tag, const char *func) {
  if (int rc = check_pattern(comm, c, source, tag, func)) return rc;
  if (!c.handled()) return MPI_SUCCESS;  // the MPI underneath checks the rest
  if (c.gpu_run()) return raise_error(comm, Err::kStreamHostCall, func);
  if (source != MPI_PROC_NULL && source != MPI_ANY_SOURCE && (source < 0 || source >= c.size()))
    return raise_class(comm, MPI_ERR_RANK);
  if (tag != MPI_ANY_TAG && (tag < 0 || tag > tag_ub())) return raise_class(comm, MPI_ERR_TAG);
  return MPI_SUCCESS;
}

}  // namespace

MPIX_INTERCEPT int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
  auto c = lookup(comm);
  if (!c) return PMPI_Iprobe(source, tag, comm, flag, status);
  if (int rc = check_probe(comm, *c, source, tag, "MPI_Iprobe")) return rc;
  if (!c->handled() || source == MPI_PROC_NULL) return PMPI_Iprobe(source, tag, comm, flag, status);
  auto lock = engine_lock();
  progress_poll();
  const Message *m = c->probe(source, tag);
  *flag = m != nullptr;
  if (m) message_status(*m, status);
  return MPI_SUCCESS;
}

MPIX_INTERCEPT int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
  auto c = lookup(comm);
  if (!c) return PMPI_Probe(source, tag, comm, status);
  if (int rc = check_probe(comm, *c, source, tag, "MPI_Probe")) return rc;
  if (!c->handled() || source == MPI_PROC_NULL) return PMPI_Probe(source, tag, comm, status);
  auto lock = engine_lock();
  for (;;) {
    if (const Message *m = c->probe(source, tag)) {
      message_status(*m, status);
      return MPI_SUCCESS;
    }
    progress_wait(lock);
  }
}

MPIX_INTERCEPT int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                               MPI_Status *status) {
  auto c = lookup(comm);
  if (!c) return PMPI_Improbe(source, tag, comm, flag, message, status);
  if (int rc = check_probe(comm, *c, source, tag, "MPI_Improbe")) return rc;
  if (!c->handled() || source == MPI_PROC_NULL) return PMPI_Improbe(source, tag, comm, flag, message, status);
  auto lock = engine_lock();
  progress_poll();
  std::unique_ptr<Message> m = c->take(source, tag);
  *flag = m != nullptr;
  if (m) {
    message_status(*m, status);
    *message = register_message(std::move(m));
  }
  return MPI_SUCCESS;
}

MPIX_INTERCEPT int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status) {
  auto c = lookup(comm);
  if (!c) return PMPI_Mprobe(source, tag, comm, message, status);
  if (int rc = check_probe(comm, *c, source, tag, "MPI_Mprobe")) return rc;
  if (!c->handled() || source == MPI_PROC_NULL) return PMPI_Mprobe(source, tag, comm, message, status);
  auto lock = engine_lock();
  for (;;) {
    if (std::unique_ptr<Message> m = c->take(source, tag)) {
      message_status(*m, status);
      *message = register_message(std::move(m));
      return MPI_SUCCESS;
    }
    progress_wait(lock);
  }
}

namespace {

// Messages of the MPI library: straight to it, device buffers staged
// (staged_native.h).
int pass_mrecv(void *buf, int count, MPI_Datatype dtype, MPI_Message *message, MPI_Status *status) {
  if (staged_buffer(buf, count, dtype)) return staged_mrecv(buf, count, dtype, message, status);
  return PMPI_Mrecv(buf, count, dtype, message, status);
}

int pass_imrecv(void *buf, int count, MPI_Datatype dtype, MPI_Message *message, MPI_Request *request) {
  if (staged_buffer(buf, count, dtype)) return staged_imrecv(buf, count, dtype, message, request);
  return PMPI_Imrecv(buf, count, dtype, message, request);
}

// Starts the delivery of a message taken by Mprobe into r: a pooled request
// holds the communicator; one on the caller's stack (keep set) borrows it,
// *keep holding it until the caller is done.
int start_matched(Request *r, Message &m, std::shared_ptr<P2PComm> *keep = nullptr) {
  auto c = m.comm.lock();
  if (!c) return MPI_ERR_COMM;
  if (keep != nullptr) {
    r->comm.borrow(c.get());
    *keep = c;
  } else {
    r->comm.hold(c.get());
  }
  c->classify_receive(r);
  c->op_started();
  c->deliver(r, m);
  return MPI_SUCCESS;
}

}  // namespace

MPIX_INTERCEPT int MPI_Mrecv(void *buf, int count, MPI_Datatype dtype, MPI_Message *message, MPI_Status *status) {
  if (message == nullptr || CommTable::empty()) return pass_mrecv(buf, count, dtype, message, status);
  auto lock = engine_lock();
  std::unique_ptr<Message> m = claim_message(*message);
  if (!m) {
    lock.unlock();
    return pass_mrecv(buf, count, dtype, message, status);
  }
  *message = MPI_MESSAGE_NULL;
  std::shared_ptr<P2PComm> keep;  // the communicator r borrows: outlives r
  Request r;
  r.kind = ReqKind::kRecv;
  r.rbuf = buf;
  r.count = count;
  r.dtype = dtype;
  int rc = start_matched(&r, *m, &keep);
  if (rc == MPI_SUCCESS) {
    while (!r.complete || r.inner_busy) progress_wait(lock);
    r.write_status(status);
    rc = r.st_error;
  }
  lock.unlock();
  if (rc != MPI_SUCCESS && r.comm) return raise_class(r.comm->user(), rc);
  return rc;
}

MPIX_INTERCEPT int MPI_Imrecv(void *buf, int count, MPI_Datatype dtype, MPI_Message *message,
                              MPI_Request *request) {
  if (message == nullptr || CommTable::empty()) return pass_imrecv(buf, count, dtype, message, request);
  auto lock = engine_lock();
  std::unique_ptr<Message> m = claim_message(*message);
  if (!m) {
    lock.unlock();
    return pass_imrecv(buf, count, dtype, message, request);
  }
  *message = MPI_MESSAGE_NULL;
  Request *r = request_create(ReqKind::kRecv);
  init_request(r, nullptr, nullptr, buf, count, dtype, m->source, m->tag);
  r->active = true;
  *request = r->handle;
  return start_matched(r, *m);
}
