#include "ucx.h"

#include <cstdio>

#include "ucx_link.h"
#include "ucx_worker.h"

namespace mpix::progress::ucx {
namespace {
std::unique_ptr<Worker> g_ucx;
TransportStats g_final;  // after stop(), for MPIX_VERBOSE's last word
}  // namespace

bool built() { return true; }

bool start(const TransportConfig &config, char *why, std::size_t why_len) {
  auto w = std::make_unique<Worker>();
  const int ok = w->start(config, why, why_len) ? 1 : 0;
  int all = 0;
  PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (ok && !all) std::snprintf(why, why_len, "UCX is not usable on another rank");
  if (all) {
    g_ucx = std::move(w);
    g_ucx->start_rings();
  }
  return all != 0;
}

bool running() { return g_ucx != nullptr; }

int create_link(const LinkParams &params, EngineLock &lock, std::unique_ptr<Link> *out) {
  return g_ucx ? create_link(*g_ucx, params, lock, out) : MPI_SUCCESS;
}

int poll() { return g_ucx ? g_ucx->poll() : 0; }
bool busy() { return g_ucx && g_ucx->busy(); }

TransportCounts counts() { return g_ucx ? g_ucx->counts() : TransportCounts{}; }

void abandon() {
  if (g_ucx) g_ucx->abandon();
}

void stop() {
  if (!g_ucx) return;
  g_ucx->stop();
  g_final = g_ucx->stats;
  g_ucx.reset();
}

TransportStats stats() { return g_ucx ? g_ucx->stats : g_final; }

}  // namespace mpix::progress::ucx
