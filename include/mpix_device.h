/*
 * mpix device-callable point-to-point: two-sided, tag-matched send and
 * receive from inside CUDA kernels (see MPIX_Comm_device_handle(3)).
 *
 * Host: MPIX_Comm_device_handle turns a no-wildcard communicator mpix
 * handles into an MPIX_Device_comm, a struct passed to kernels by value
 * (the device calls take it by reference). Device (when compiled by nvcc;
 * header-only, no -rdc):
 *   MPIX_Isend, MPIX_Irecv, MPIX_Test, MPIX_Wait, MPIX_Send, MPIX_Recv,
 *   MPIX_Send_block, MPIX_Recv_block.
 * Device calls return an int status (MPIX_DEVICE_* in mpix_device/proto.h):
 *   MPIX_DEVICE_SUCCESS  0   done / started
 *   MPIX_DEVICE_PENDING  1   MPIX_Test: not complete yet
 *   MPIX_DEVICE_AGAIN    2   proxy path: descriptor queue full, nothing
 *                            was done, retry
 *   MPIX_DEVICE_ERR_RANK -1  peer outside [0, size) (no MPI_ANY_SOURCE)
 *   MPIX_DEVICE_ERR_TAG  -2  tag outside [0, MPI_TAG_UB] (no MPI_ANY_TAG)
 *   MPIX_DEVICE_ERR_ARG  -3  null request, null buffer with bytes > 0,
 *                            uninitialised handle, message >= 4 GiB
 *   MPIX_DEVICE_ERR_TRUNCATE -4 message longer than the receive buffer
 *   MPIX_DEVICE_ERR_REQUEST  -5 MPIX_Test/MPIX_Wait on an inactive request
 *   MPIX_DEVICE_ERR_KEYS -6  more (peer, tag) pairs than MPIX_DEVICE_KEYS
 * Two paths (mpix_device(7)): ranks on one node talk through CUDA-IPC
 * mailboxes with no CPU involved, matched by hash tables without locks;
 * elsewhere, or with
 * MPIX_DEVICE_PATH=proxy, descriptors go to the progress thread, which
 * runs them through MPI on the communicator, so host MPI_Send/MPI_Recv on it
 * interoperate with device calls (proxy path only).
 */
#ifndef MPIX_DEVICE_H
#define MPIX_DEVICE_H

#include "mpix.h"
#include "mpix_device/calls.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over comm. Fills *handle for use in kernels on this rank's
 * current GPU; the resources live until comm is freed. */
MPIX_API int MPIX_Comm_device_handle(MPI_Comm comm, MPIX_Device_comm *handle);

#ifdef __cplusplus
}
#endif

#if defined(__CUDACC__)
#include "mpix_device/ops.cuh"
#endif

#endif
