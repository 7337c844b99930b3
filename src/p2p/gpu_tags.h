// Tags of rendezvous transfers: each transfer to a peer gets a data tag (its
// payload or chunks on the data channel; P2PComm::next_data_tag numbers
// them for host and GPU rendezvous alike), which the receiver's kGpuReply
// names. A valid tag (0 .. MPI_TAG_UB - 1), unique among one peer's
// transfers in flight, or two of them could take each other's chunks or
// replies.
#ifndef MPIX_SRC_P2P_GPU_TAGS_H
#define MPIX_SRC_P2P_GPU_TAGS_H

namespace mpix::p2p {

// Data tags run 0 .. tag_ub - 1, then wrap.
inline int next_gpu_data_tag(int current, int tag_ub) { return current >= tag_ub - 1 ? 0 : current + 1; }

}  // namespace mpix::p2p

#endif
