#include "transport.h"

#include "check_link.h"
#include "ofi.h"
#include "pmpi_link.h"
#include "ucx.h"

namespace mpix::progress {
namespace {
TransportConfig g_config;
// The transport that started (pmpi: neither of the others). A
// communicator with members outside MPI_COMM_WORLD has a pmpi link even
// then: the pmpi counters always add in.
TransportKind g_active = TransportKind::kPmpi;
}  // namespace

int transport_start(const TransportConfig &config, char *why, std::size_t why_len) {
  g_config = config;
  g_active = TransportKind::kPmpi;
  if (why_len > 0) why[0] = '\0';
  switch (config.kind) {
    case TransportKind::kPmpi: return MPI_SUCCESS;
    case TransportKind::kOfi:
      if (!ofi::start(config, why, why_len)) return MPI_ERR_OTHER;
      g_active = TransportKind::kOfi;
      return MPI_SUCCESS;
    case TransportKind::kUcx:
    case TransportKind::kAuto: break;
  }
  if (ucx::start(config, why, why_len)) {
    g_active = TransportKind::kUcx;
    return MPI_SUCCESS;
  }
  // auto: the pmpi transport works everywhere.
  return config.kind == TransportKind::kUcx ? MPI_ERR_OTHER : MPI_SUCCESS;
}

TransportCounts transport_counts() {
  TransportCounts c = g_active == TransportKind::kUcx   ? ucx::counts()
                      : g_active == TransportKind::kOfi ? ofi::counts()
                                                        : TransportCounts{};
  const TransportCounts p = PmpiLink::counts();
  c.sent += p.sent;
  c.arrived += p.arrived;
  c.local += p.local + CheckLink::held_everywhere();
  return c;
}

void transport_abandon() {
  if (g_active == TransportKind::kUcx) ucx::abandon();
  else if (g_active == TransportKind::kOfi) ofi::abandon();
}

void transport_stop() {
  if (g_active == TransportKind::kUcx) ucx::stop();
  else if (g_active == TransportKind::kOfi) ofi::stop();
}

const char *transport_name() {
  return g_active == TransportKind::kUcx ? "ucx" : g_active == TransportKind::kOfi ? "ofi" : "pmpi";
}

const char *transport_provider() { return g_active == TransportKind::kOfi ? ofi::provider() : ""; }

const char *transports_built() {
  if (ucx::built() && ofi::built()) return "pmpi ucx ofi";
  if (ucx::built()) return "pmpi ucx";
  if (ofi::built()) return "pmpi ofi";
  return "pmpi";
}

int link_create(const LinkParams &params, std::unique_lock<std::mutex> &lock, std::unique_ptr<Link> *out) {
  int rc = MPI_SUCCESS;
  if (g_active == TransportKind::kUcx) rc = ucx::create_link(params, lock, out);
  else if (g_active == TransportKind::kOfi) rc = ofi::create_link(params, lock, out);
  if (rc != MPI_SUCCESS) return rc;
  if (!*out) *out = std::make_unique<PmpiLink>(params, g_config);
  if (g_config.check_links) *out = std::make_unique<CheckLink>(std::move(*out));
  return MPI_SUCCESS;
}

int transport_poll() {
  if (g_active == TransportKind::kUcx) return ucx::poll();
  if (g_active == TransportKind::kOfi) return ofi::poll();
  return 0;
}

bool transport_busy() {
  if (CheckLink::held_everywhere() > 0) return true;
  if (g_active == TransportKind::kUcx) return ucx::busy();
  if (g_active == TransportKind::kOfi) return ofi::busy();
  return false;
}

TransportStats transport_stats() {
  // A communicator with members outside MPI_COMM_WORLD has a pmpi link even
  // when another transport carries the rest: the two add up.
  TransportStats s = g_active == TransportKind::kUcx   ? ucx::stats()
                     : g_active == TransportKind::kOfi ? ofi::stats()
                                                       : TransportStats{};
  const TransportStats p = PmpiLink::stats();
  s.eager_sent += p.eager_sent;
  s.rendezvous_sent += p.rendezvous_sent;
  s.arrivals += p.arrivals;
  return s;
}

}  // namespace mpix::progress
