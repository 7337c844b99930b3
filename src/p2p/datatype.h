// The datatype helpers of progress/datatype.h, as the point-to-point layer
// names them.
#ifndef MPIX_SRC_P2P_DATATYPE_H
#define MPIX_SRC_P2P_DATATYPE_H

#include "progress/datatype.h"

namespace mpix::p2p {
using progress::common_type_size;
using progress::dense_in_order;
using progress::is_derived;
using progress::Layout;
using progress::layout_of;
using progress::pack_bytes;
using progress::unpack_bytes;
}  // namespace mpix::p2p

#endif
