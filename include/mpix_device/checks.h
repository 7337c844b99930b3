/*
 * mpix device point-to-point: the argument checks every call makes before
 * it touches anything (the status codes in types.h). Part of proto.h.
 */
#ifndef MPIX_DEVICE_CHECKS_H
#define MPIX_DEVICE_CHECKS_H

#include "types.h"

MPIXD_HD int mpixd_check_args(const MPIX_Device_comm *h, const void *buf, size_t bytes, int peer, int tag) {
  if (h->size <= 0) return MPIX_DEVICE_ERR_ARG;
  if (h->path == MPIXD_PATH_IPC ? (h->bases == NULL || h->channels == 0 || h->buckets == 0 || h->keys == 0)
                                : (h->pq == NULL || h->pq_sq == NULL || h->pq_pool == NULL || h->pq_slots == 0))
    return MPIX_DEVICE_ERR_ARG;
  if (peer < 0 || peer >= h->size) return MPIX_DEVICE_ERR_RANK;
  if (tag < 0 || tag > h->tag_ub) return MPIX_DEVICE_ERR_TAG;
  if (buf == NULL && bytes > 0) return MPIX_DEVICE_ERR_ARG;
  if (bytes > 0xffffffffull) return MPIX_DEVICE_ERR_ARG; /* the entry's 32-bit size */
  return MPIX_DEVICE_SUCCESS;
}

MPIXD_HD int mpixd_check(const MPIX_Device_comm *h, const void *buf, size_t bytes, int peer, int tag,
                         const MPIX_Device_request *r) {
  return r == NULL ? MPIX_DEVICE_ERR_ARG : mpixd_check_args(h, buf, bytes, peer, tag);
}

#endif
