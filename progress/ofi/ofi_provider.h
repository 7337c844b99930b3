// Which libfabric provider the transport uses, from the providers
// fi_getinfo offers (in libfabric's order of preference, already filtered
// by FI_PROVIDER). Pure: the unit tests drive it alone.
#ifndef MPIX_PROGRESS_OFI_PROVIDER_H
#define MPIX_PROGRESS_OFI_PROVIDER_H

#include <string>
#include <vector>

namespace mpix::progress::ofi {

// requested: MPIX_OFI_PROVIDER ("auto", or a name as fi_info prints it:
// "shm", "tcp;ofi_rxm", or a core provider alone, "tcp", which matches
// "tcp;ofi_rxm" as FI_PROVIDER=tcp does). auto: shm when every rank is on
// this node (single_node), else the first provider that is not shm and not
// one of libfabric's development providers (sockets, udp, and net, the
// experimental TCP one of 1.17), else the first that is not shm. Returns
// an index into names, -1 if none fits.
int choose_provider(const std::vector<std::string> &names, const std::string &requested, bool single_node);

}  // namespace mpix::progress::ofi

#endif
