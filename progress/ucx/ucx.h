// The UCX transport as transport.cc sees it (ucx.cc, or ucx_none.cc in a
// build without UCX).
#ifndef MPIX_PROGRESS_UCX_H
#define MPIX_PROGRESS_UCX_H

#include <memory>
#include <mutex>

#include "progress/transport.h"

namespace mpix::progress::ucx {

bool built();
// Brings UCX up and agrees with every rank (collective over
// MPI_COMM_WORLD): all ranks use it or none does, since both ends of a
// link need the same transport. false with the reason in `why`.
bool start(const TransportConfig &config, char *why, std::size_t why_len);
bool running();
// Collective over params.user; *out stays empty when the pmpi transport
// must carry this communicator.
int create_link(const LinkParams &params, EngineLock &lock, std::unique_ptr<Link> *out);
int poll();
bool busy();
TransportCounts counts();
void abandon();
void stop();
TransportStats stats();

}  // namespace mpix::progress::ucx

#endif
