// Single-copy transfers between processes of one node: the receiver reads
// the sender's buffer straight into its own with Linux cross-memory attach
// (process_vm_readv), one copy where a rendezvous through the transport's
// shared-memory queues takes two (issue 30). The protocol around it is the
// engine's (src/p2p/engine.cc, kind kSingleCopy): the sender announces its
// buffer in a synchronous eager message, the receiver reads once matched and
// acknowledges, and the send completes then.
//
// Whether it may be used is decided once, at MPI_Init, for the whole job:
// the kernel lets a process read another's memory only under ptrace's
// rules (same user, and Yama's ptrace_scope 0, or 1 with a declared
// tracer), which differ between machines and containers, so every process
// tries a read of a neighbour on its node and all must succeed.
#ifndef MPIX_PROGRESS_SINGLE_COPY_H
#define MPIX_PROGRESS_SINGLE_COPY_H

#include <cstddef>
#include <cstdint>

namespace mpix::progress {

// A process-wide identity of this node: host name and boot id (containers on
// different machines may share a host name, never a boot id).
std::uint64_t node_identity();

// MPI_Init, collective over MPI_COMM_WORLD: learns which ranks share this
// node and whether reads work (wanted: MPIX_SINGLE_COPY). Messages of at
// least min_bytes go single-copy.
void single_copy_start(bool wanted, std::size_t min_bytes, int verbose);
// Whether MPI_COMM_WORLD rank `world` runs on this node (known whether or
// not single copy is on).
bool same_node(int world);
// Whether a message of `bytes` to MPI_COMM_WORLD rank `world` goes single-copy.
bool single_copy_to(int world, std::size_t bytes);
// The smallest message that may go single-copy at all (SIZE_MAX while it
// is off): the send path's inline test before single_copy_to(), so that
// small messages pay one comparison for it.
extern std::size_t g_single_copy_floor;
inline bool single_copy_possible(std::size_t bytes) { return bytes >= g_single_copy_floor; }
// Whether MPI_COMM_WORLD rank `world`, a process of this node, has exited
// (gone, a zombie, or its pid now another process's). False where that
// cannot be known: other nodes, or single copy off (the pids may be of
// another namespace). Reads /proc: for a waiter's occasional check, not
// for every message.
bool process_exited(int world);
// Whether single-copy is in use at all, and why not (for MPIX_VERBOSE).
bool single_copy_enabled();
const char *single_copy_why_not();
std::int32_t single_copy_pid();

// Reads n bytes at address `remote` of process pid into local: 0, or the
// errno of the failure (ESRCH: the process is gone; EFAULT: the range is
// not mapped there).
// `counted`: a message's first read (false for the rest of one whose
// reading was split, so that reads stay one per message).
int single_copy_read(std::int32_t pid, std::uint64_t remote, void *local, std::size_t n, bool counted = true);
// The other way: a sender writing its part of a split transfer (kSplitAsk)
// into the receiver's buffer. The same permission as a read (ptrace's
// attach check), so it works wherever reads do.
int single_copy_write(std::int32_t pid, std::uint64_t remote, const void *local, std::size_t n);

// writes: the parts senders wrote into their receivers' buffers (split
// transfers); bytes counts both ways.
struct SingleCopyStats {
  std::uint64_t reads = 0, writes = 0, bytes = 0, failures = 0;
};
SingleCopyStats single_copy_stats();

}  // namespace mpix::progress

#endif
