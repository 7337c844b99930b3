#include "transport.h"

#include "pmpi_link.h"
#include "ucx.h"

namespace mpix::progress {
namespace {
TransportConfig g_config;
}  // namespace

int transport_start(const TransportConfig &config, char *why, std::size_t why_len) {
  g_config = config;
  if (why_len > 0) why[0] = '\0';
  if (config.kind == TransportKind::kPmpi) return MPI_SUCCESS;
  if (ucx::start(config, why, why_len)) return MPI_SUCCESS;
  // auto: the pmpi transport works everywhere.
  return config.kind == TransportKind::kUcx ? MPI_ERR_OTHER : MPI_SUCCESS;
}

TransportCounts transport_counts() {
  TransportCounts c = ucx::counts();
  const TransportCounts p = PmpiLink::counts();
  c.sent += p.sent;
  c.arrived += p.arrived;
  c.local += p.local;
  return c;
}

void transport_abandon() { ucx::abandon(); }
void transport_stop() { ucx::stop(); }

const char *transport_name() { return ucx::running() ? "ucx" : "pmpi"; }
const char *transports_built() { return ucx::built() ? "pmpi ucx" : "pmpi"; }

int link_create(const LinkParams &params, std::unique_lock<std::mutex> &lock, std::unique_ptr<Link> *out) {
  const int rc = ucx::create_link(params, lock, out);
  if (rc != MPI_SUCCESS || *out) return rc;
  *out = std::make_unique<PmpiLink>(params, g_config);
  return MPI_SUCCESS;
}

int transport_poll() { return ucx::poll(); }
bool transport_busy() { return ucx::busy(); }
TransportStats transport_stats() {
  // A communicator with members outside MPI_COMM_WORLD has a pmpi link even
  // when UCX carries the rest: the two add up.
  TransportStats s = ucx::stats();
  const TransportStats p = PmpiLink::stats();
  s.eager_sent += p.eager_sent;
  s.rendezvous_sent += p.rendezvous_sent;
  s.arrivals += p.arrivals;
  return s;
}

}  // namespace mpix::progress
