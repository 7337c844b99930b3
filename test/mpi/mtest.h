/* Helpers for mpix's MPI tests, in the manner of MPICH's test/mpi: each test
 * counts its own errors, rank 0 prints "No Errors" when all ranks had none. */
#ifndef MPIX_TEST_MTEST_H
#define MPIX_TEST_MTEST_H

#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "mpix.h"

static int mtest_errors = 0;

#define MTEST_CHECK(cond, ...)                                          \
  do {                                                                  \
    if (!(cond)) {                                                      \
      int mtest_rank_ = -1;                                             \
      int mtest_init_ = 0;                                              \
      MPI_Initialized(&mtest_init_);                                    \
      if (mtest_init_) MPI_Comm_rank(MPI_COMM_WORLD, &mtest_rank_);     \
      fprintf(stderr, "[rank %d] %s:%d: check failed: %s: ", mtest_rank_, \
              __FILE__, __LINE__, #cond);                               \
      fprintf(stderr, __VA_ARGS__);                                     \
      fprintf(stderr, "\n");                                            \
      mtest_errors++;                                                   \
    }                                                                   \
  } while (0)

/* The class of an MPI error code. */
static inline int mtest_class(int code) {
  int cls = -1;
  MPI_Error_class(code, &cls);
  return cls;
}

/* A test of mpix's engine must fail where mpix does not carry its traffic
 * (natively it would pass and prove nothing): counts an error unless comm
 * is handled by mpix. */
static inline void mtest_check_handled(MPI_Comm comm, const char *name) {
  int handled = 0;
  MPIX_Comm_is_handled(comm, &handled);
  MTEST_CHECK(handled == 1, "%s is not handled by mpix", name);
}

/* A part of a test this MPI library cannot run (an MPI-4 function it lacks:
 * configure's MPIX_HAVE_MPI_* flags): said on rank 0 as a "not checked:"
 * line, which test/runtests shows beside the test's PASS, so that what was
 * left out is never silent. The rest of the test still counts. */
static inline void mtest_not_checked(const char *what) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) printf("not checked: %s\n", what);
  fflush(stdout);
}

/* Sums errors over all ranks, prints the verdict on rank 0, finalizes. */
static inline int mtest_finalize(void) {
  int total = 0, rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Allreduce(&mtest_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    if (total == 0) printf(" No Errors\n");
    else printf(" Found %d errors\n", total);
    fflush(stdout);
  }
  MPI_Finalize();
  return total != 0;
}

#endif
