// What the MPI entry points (api_*.cc) share: the tag bound, datatype
// references held by pending requests, a request's common fields.
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

void hold_datatype(Request *r, MPI_Datatype dtype) {
  if (r->dtype_owned) PMPI_Type_free(&r->dtype);
  r->dtype = dtype;
  r->dtype_owned = false;
  if (dtype != MPI_DATATYPE_NULL && is_derived(dtype)) {
    PMPI_Type_dup(dtype, &r->dtype);
    r->dtype_owned = true;
  }
}

void init_request(Request *r, const std::shared_ptr<P2PComm> &c, const void *sbuf, void *rbuf, int count,
                  MPI_Datatype dtype, int peer, int tag) {
  r->comm = c;
  r->sbuf = sbuf;
  r->rbuf = rbuf;
  r->count = count;
  r->peer = peer;
  r->tag = tag;
  hold_datatype(r, dtype);
}

}  // namespace mpix::p2p
