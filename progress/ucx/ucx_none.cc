// A build without UCX: the pmpi transport only.
#include <cstdio>

#include "ucx.h"

namespace mpix::progress::ucx {

bool built() { return false; }

bool start(const TransportConfig &, char *why, std::size_t why_len) {
  std::snprintf(why, why_len, "this mpix was built without UCX (configure --with-ucx; Debian: libucx-dev)");
  return false;
}

bool running() { return false; }
int create_link(const LinkParams &, EngineLock &, std::unique_ptr<Link> *) { return MPI_SUCCESS; }
int poll() { return 0; }
bool busy() { return false; }
TransportCounts counts() { return {}; }
void abandon() {}
void stop() {}
TransportStats stats() { return {}; }

}  // namespace mpix::progress::ucx
