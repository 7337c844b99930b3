// The libfabric transport as transport.cc sees it (ofi.cc, or ofi_none.cc
// in a build without libfabric).
#ifndef MPIX_PROGRESS_OFI_H
#define MPIX_PROGRESS_OFI_H

#include <memory>
#include <mutex>

#include "progress/transport.h"

namespace mpix::progress::ofi {

bool built();
// Brings libfabric up on every rank (collective over MPI_COMM_WORLD): all
// ranks use it or none does. false with the reason in `why`.
bool start(const TransportConfig &config, char *why, std::size_t why_len);
bool running();
// The provider in use ("shm", "tcp;ofi_rxm"), empty when not running.
const char *provider();
// Collective over params.user; *out stays empty when the pmpi transport
// must carry this communicator.
int create_link(const LinkParams &params, EngineLock &lock, std::unique_ptr<Link> *out);
int poll();
bool busy();
TransportCounts counts();
void abandon();
void stop();
TransportStats stats();

}  // namespace mpix::progress::ofi

#endif
