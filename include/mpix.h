/*
 * mpix: GPU-aware MPI extensions, added to any MPI library by PMPI
 * interposition (LD_PRELOAD=libmpix.so, or link -lmpix before -lmpi).
 *
 * All functions return MPI error codes and report errors through the
 * communicator's error handler, as MPI functions do. Library-specific error
 * classes (MPIX_ERR_*) are valid after MPI_Init; MPI_Error_string describes
 * them.
 */
#ifndef MPIX_H
#define MPIX_H

#include <mpi.h>
#include "mpix_version.h"

#if defined(__GNUC__) || defined(__clang__)
#define MPIX_API __attribute__((visibility("default")))
#else
#define MPIX_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- error classes (assigned by MPI_Add_error_class during MPI_Init) ---- */

/* MPI_ANY_SOURCE or MPI_ANY_TAG used where the communicator forbids them. */
extern MPIX_API int MPIX_ERR_WILDCARD;
/* Unordered region misuse (close without open, nested open, ...). */
extern MPIX_API int MPIX_ERR_REGION;
/* A device (GPU) buffer passed to a library built without CUDA. */
extern MPIX_API int MPIX_ERR_NO_CUDA;
/* Reserved: a bounded queue is full; retry after progress (nothing was
 * lost). Not raised by this version: full queues make the caller wait
 * (MPIX_STREAM_QUEUE_DEPTH, the device proxy queue) or, from device code,
 * return MPIX_DEVICE_ERR_* codes. */
extern MPIX_API int MPIX_ERR_QUEUE_FULL;
/* An invalid MPIX_Stream, or a stream (communicator) used wrongly. */
extern MPIX_API int MPIX_ERR_STREAM;
/* A progress thread is needed but the MPI library runs below
 * MPI_THREAD_MULTIPLE (see MPIX_PROGRESS_THREAD in mpix_streams(7)). */
extern MPIX_API int MPIX_ERR_NO_THREAD;

/* ---- library information (callable at any time, also before MPI_Init) ---- */

/* The version of the mpix library that is running (not of the header). */
MPIX_API int MPIX_Query_version(int *major, int *minor, int *patch);

#define MPIX_MAX_LIBRARY_VERSION_STRING 512
/* "mpix X.Y.Z (cuda: yes|no) over <MPI library version>" into version
 * (at least MPIX_MAX_LIBRARY_VERSION_STRING bytes); length in *resultlen. */
MPIX_API int MPIX_Get_library_version(char *version, int *resultlen);

/* ---- communicators ---- */

/* *flag = 1 when mpix's own matching engine carries point-to-point traffic
 * on comm (no-wildcard hints, unordered regions, MPIX_INTERCEPT=all),
 * 0 when comm passes straight through to the MPI library. */
MPIX_API int MPIX_Comm_is_handled(MPI_Comm comm, int *flag);

/* Collective: duplicates comm with the MPI-4 assertions
 * mpi_assert_no_any_source=true and mpi_assert_no_any_tag=true, so that
 * mpix matches its messages in O(1) by (source, tag). */
MPIX_API int MPIX_Comm_dup_nowildcard(MPI_Comm comm, MPI_Comm *newcomm);

/* ---- unordered regions (see MPIX_Unordered_region_open(3)) ---- */

/* Local: receives posted on comm until the matching close may be matched
 * out of order among those with equal (source, tag); wildcards are errors. */
MPIX_API int MPIX_Unordered_region_open(MPI_Comm comm);
MPIX_API int MPIX_Unordered_region_close(MPI_Comm comm);

/* ---- streams and stream-triggered operations (see mpix_streams(7)) ----
 * The names and signatures of MPICH 4.1's MPIX stream extension, so code
 * written for it works over any MPI library. An MPI library that declares
 * the extension itself (MPICH >= 4.1) keeps its own type definitions; the
 * prototypes below are then identical redeclarations. */
#ifndef MPIX_STREAM_NULL
typedef int MPIX_Stream;
#define MPIX_STREAM_NULL ((MPIX_Stream)0x3c000000)
#endif

/* Sets key in info to value_size bytes of value, hex-encoded (how a
 * cudaStream_t goes into MPIX_Stream_create's info as "value"). */
MPIX_API int MPIX_Info_set_hex(MPI_Info info, const char *key, const void *value, int value_size);

/* A local serial execution context. info MPI_INFO_NULL (or without "type"):
 * a host stream, whose *_enqueue operations run at once on the calling
 * thread; "type" = "cudaStream_t" with "value" the stream (MPIX_Info_set_hex):
 * operations run in that CUDA stream's order. */
MPIX_API int MPIX_Stream_create(MPI_Info info, MPIX_Stream *stream);
MPIX_API int MPIX_Stream_free(MPIX_Stream *stream);
/* Collective: a duplicate of comm with the local stream attached
 * (MPIX_STREAM_NULL allowed: no local stream). */
MPIX_API int MPIX_Stream_comm_create(MPI_Comm comm, MPIX_Stream stream, MPI_Comm *newcomm);
/* The local stream of comm (idx 0), MPIX_STREAM_NULL when it has none. */
MPIX_API int MPIX_Comm_get_stream(MPI_Comm comm, int idx, MPIX_Stream *stream);

/* Point-to-point in stream order, on a communicator with a local stream.
 * The call returns at once for GPU streams; the operation happens after the
 * stream's earlier work and before its later work. */
MPIX_API int MPIX_Send_enqueue(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                               MPI_Comm comm);
MPIX_API int MPIX_Recv_enqueue(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                               MPI_Comm comm, MPI_Status *status);
MPIX_API int MPIX_Isend_enqueue(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                                MPI_Comm comm, MPI_Request *request);
MPIX_API int MPIX_Irecv_enqueue(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                                MPI_Comm comm, MPI_Request *request);
/* Completes requests of MPIX_Isend_enqueue/MPIX_Irecv_enqueue in stream
 * order; the only way to complete those of a GPU stream. */
MPIX_API int MPIX_Wait_enqueue(MPI_Request *request, MPI_Status *status);
MPIX_API int MPIX_Waitall_enqueue(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]);

#ifdef __cplusplus
}
#endif

#endif /* MPIX_H */
