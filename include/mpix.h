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
/* A bounded queue is full; retry after progress (nothing was lost). */
extern MPIX_API int MPIX_ERR_QUEUE_FULL;

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

#ifdef __cplusplus
}
#endif

#endif /* MPIX_H */
