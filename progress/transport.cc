#include "transport.h"

#include "check_link.h"
#include "progress/ofi/ofi.h"
#include "progress/pmpi/pmpi_link.h"
#include "progress/shm_ring.h"
#include "progress/ucx/ucx.h"

namespace mpix::progress {
namespace {

// What the engine asks of a transport, one table per transport (as MPICH's
// netmods and UCX's uct_iface_ops): the functions of ucx.h and ofi.h, or of
// their _none.cc stand-ins in a build without the library.
struct TransportOps {
  const char *name;
  bool (*built)();
  // Collective over MPI_COMM_WORLD; false with the reason in why.
  bool (*start)(const TransportConfig &config, char *why, std::size_t why_len);
  // *out stays empty where the pmpi link must carry the communicator.
  int (*create_link)(const LinkParams &params, EngineLock &lock, std::unique_ptr<Link> *out);
  int (*poll)();
  bool (*busy)();
  TransportCounts (*counts)();
  void (*abandon)();
  void (*stop)();
  TransportStats (*stats)();
  const char *(*provider)();
};

// The MPI library underneath carries everything through PmpiLinks, which
// keep no process-wide state of their own beyond their counters (added in
// below, whichever transport is active).
bool yes() { return true; }
bool pmpi_start(const TransportConfig &, char *, std::size_t) { return true; }
int no_link(const LinkParams &, EngineLock &, std::unique_ptr<Link> *) { return MPI_SUCCESS; }
int nothing_polled() { return 0; }
bool idle() { return false; }
TransportCounts no_counts() { return {}; }
void nothing() {}
TransportStats no_stats() { return {}; }
const char *no_provider() { return ""; }

const TransportOps kPmpi{"pmpi", yes, pmpi_start, no_link, nothing_polled, idle, no_counts, nothing, nothing, no_stats,
                         no_provider};
const TransportOps kUcx{"ucx", ucx::built, ucx::start, ucx::create_link, ucx::poll, ucx::busy, ucx::counts,
                        ucx::abandon, ucx::stop, ucx::stats, no_provider};
const TransportOps kOfi{"ofi", ofi::built, ofi::start, ofi::create_link, ofi::poll, ofi::busy, ofi::counts,
                        ofi::abandon, ofi::stop, ofi::stats, ofi::provider};

TransportConfig g_config;
// The transport that started (pmpi: neither of the others). A
// communicator with members outside MPI_COMM_WORLD has a pmpi link even
// then: the pmpi counters always add in.
const TransportOps *g_active = &kPmpi;

}  // namespace

int transport_start(const TransportConfig &config, char *why, std::size_t why_len) {
  g_config = config;
  g_active = &kPmpi;
  if (why_len > 0) why[0] = '\0';
  // auto: ucx where it starts everywhere, else pmpi (which works
  // everywhere); a transport named and not started fails MPI_Init.
  const TransportOps *wanted = config.kind == TransportKind::kPmpi  ? &kPmpi
                               : config.kind == TransportKind::kOfi ? &kOfi
                                                                    : &kUcx;
  if (wanted->start(config, why, why_len)) {
    g_active = wanted;
    return MPI_SUCCESS;
  }
  return config.kind == TransportKind::kAuto ? MPI_SUCCESS : MPI_ERR_OTHER;
}

TransportCounts transport_counts() {
  TransportCounts c = g_active->counts();
  const TransportCounts p = PmpiLink::counts();
  c.sent += p.sent;
  c.arrived += p.arrived;
  c.local += p.local + CheckLink::held_everywhere();
  return c;
}

void transport_abandon() { g_active->abandon(); }
void transport_stop() { g_active->stop(); }
const char *transport_name() { return g_active->name; }
const char *transport_provider() { return g_active->provider(); }

const char *transports_built() {
  if (kUcx.built() && kOfi.built()) return "pmpi ucx ofi";
  if (kUcx.built()) return "pmpi ucx";
  if (kOfi.built()) return "pmpi ofi";
  return "pmpi";
}

int link_create(const LinkParams &params, EngineLock &lock, std::unique_ptr<Link> *out) {
  const int rc = g_active->create_link(params, lock, out);
  if (rc != MPI_SUCCESS) return rc;
  if (!*out) *out = std::make_unique<PmpiLink>(params, g_config);
  if (g_config.check_links) *out = std::make_unique<CheckLink>(std::move(*out));
  return MPI_SUCCESS;
}

int transport_poll() { return g_active->poll(); }

bool transport_busy() { return CheckLink::held_everywhere() > 0 || g_active->busy(); }

bool transport_inbound_waiting() {
  const shm::Node *rings = shm::active_node();
  return rings != nullptr && rings->inbound_waiting();
}

TransportStats transport_stats() {
  // A communicator with members outside MPI_COMM_WORLD has a pmpi link even
  // when another transport carries the rest: the two add up.
  TransportStats s = g_active->stats();
  const TransportStats p = PmpiLink::stats();
  s.eager_sent += p.eager_sent;
  s.rendezvous_sent += p.rendezvous_sent;
  s.arrivals += p.arrivals;
  return s;
}

}  // namespace mpix::progress
