// Tags of rendezvous transfers: each transfer to a peer gets a data tag (its
// payload or chunks on the data channel; P2PComm::next_data_tag numbers
// them for host and GPU rendezvous alike) and a GPU rendezvous also a reply
// tag (the receiver's answers on the control channel, where tag 0 is taken
// by eager landing receives). Both must be valid tags (0 .. MPI_TAG_UB) and
// the pairing one to one, or two transfers in flight to one peer could take
// each other's replies.
#ifndef MPIX_SRC_P2P_GPU_TAGS_H
#define MPIX_SRC_P2P_GPU_TAGS_H

namespace mpix::p2p {

// Data tags run 0 .. tag_ub - 1, then wrap.
inline int next_gpu_data_tag(int current, int tag_ub) { return current >= tag_ub - 1 ? 0 : current + 1; }

// 1 .. tag_ub.
inline int gpu_reply_tag(int data_tag) { return data_tag + 1; }

}  // namespace mpix::p2p

#endif
