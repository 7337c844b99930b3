#include "ofi.h"

#include "ofi_fabric.h"
#include "ofi_link.h"

namespace mpix::progress::ofi {
namespace {
std::unique_ptr<Fabric> g_ofi;
TransportStats g_final;  // after stop(), for MPIX_VERBOSE's last word
}  // namespace

bool built() { return true; }

bool start(const TransportConfig &config, char *why, std::size_t why_len) {
  auto f = std::make_unique<Fabric>();
  // Collective inside, agreed on every rank.
  if (!f->start(config, config.ofi_provider, why, why_len)) return false;
  g_ofi = std::move(f);
  g_ofi->start_rings();
  return true;
}

bool running() { return g_ofi != nullptr; }
const char *provider() { return g_ofi ? g_ofi->provider() : ""; }

int create_link(const LinkParams &params, EngineLock &lock, std::unique_ptr<Link> *out) {
  return g_ofi ? create_link(*g_ofi, params, lock, out) : MPI_SUCCESS;
}

int poll() { return g_ofi ? g_ofi->poll() : 0; }
bool busy() { return g_ofi && g_ofi->busy(); }

TransportCounts counts() { return g_ofi ? g_ofi->counts() : TransportCounts{}; }

void abandon() {
  if (g_ofi) g_ofi->abandon();
}

void stop() {
  if (!g_ofi) return;
  g_ofi->stop();
  g_final = g_ofi->stats;
  g_ofi.reset();
}

TransportStats stats() { return g_ofi ? g_ofi->stats : g_final; }

}  // namespace mpix::progress::ofi
