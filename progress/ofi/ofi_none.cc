// A build without libfabric: no ofi transport.
#include <cstdio>

#include "ofi.h"

namespace mpix::progress::ofi {

bool built() { return false; }

bool start(const TransportConfig &, char *why, std::size_t why_len) {
  std::snprintf(why, why_len, "this mpix was built without libfabric (configure --with-ofi; Debian: libfabric-dev)");
  return false;
}

bool running() { return false; }
const char *provider() { return ""; }
int create_link(const LinkParams &, EngineLock &, std::unique_ptr<Link> *) { return MPI_SUCCESS; }
int poll() { return 0; }
bool busy() { return false; }
TransportCounts counts() { return {}; }
void abandon() {}
void stop() {}
TransportStats stats() { return {}; }

}  // namespace mpix::progress::ofi
