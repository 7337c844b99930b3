// What the MPI entry points (api_*.cc) share: the tag bound.
#include "api_common.h"

namespace mpix::p2p {

int tag_ub() {
  static int ub = [] {
    int *v = nullptr, flag = 0;
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
    return flag && v != nullptr ? *v : 32767;
  }();
  return ub;
}

}  // namespace mpix::p2p
