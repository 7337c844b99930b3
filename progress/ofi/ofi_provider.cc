#include "ofi_provider.h"

namespace mpix::progress::ofi {
namespace {

// "tcp;ofi_rxm" -> "tcp": the provider underneath a utility one.
std::string core_of(const std::string &name) { return name.substr(0, name.find(';')); }

bool last_resort(const std::string &name) {
  const std::string core = core_of(name);
  return core == "sockets" || core == "udp" || core == "net";
}

}  // namespace

int choose_provider(const std::vector<std::string> &names, const std::string &requested, bool single_node) {
  const int n = static_cast<int>(names.size());
  if (!requested.empty() && requested != "auto") {
    for (int i = 0; i < n; ++i)
      if (names[static_cast<std::size_t>(i)] == requested) return i;
    // A core provider named alone: the first entry built on it.
    if (requested.find(';') == std::string::npos)
      for (int i = 0; i < n; ++i)
        if (core_of(names[static_cast<std::size_t>(i)]) == requested) return i;
    return -1;
  }
  if (single_node)
    for (int i = 0; i < n; ++i)
      if (names[static_cast<std::size_t>(i)] == "shm") return i;
  // shm reaches only this node's processes.
  for (int i = 0; i < n; ++i) {
    const std::string &name = names[static_cast<std::size_t>(i)];
    if (name != "shm" && !last_resort(name)) return i;
  }
  for (int i = 0; i < n; ++i)
    if (names[static_cast<std::size_t>(i)] != "shm") return i;
  return -1;
}

}  // namespace mpix::progress::ofi
