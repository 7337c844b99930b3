/* Helpers for mpix's MPI tests, in the manner of MPICH's test/mpi: each test
 * counts its own errors, rank 0 prints "No Errors" when all ranks had none. */
#ifndef MPIX_TEST_MTEST_H
#define MPIX_TEST_MTEST_H

#include <mpi.h>
#include <stdarg.h>
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

/* One of mpix's counter performance variables (MPI_T), which counts from
 * mtest_pvar_open on: what a test reads to see that mpix took the path it
 * tests. ok is 0 where the variable is not there (read then gives -1). */
typedef struct {
  MPI_T_pvar_session session;
  MPI_T_pvar_handle handle;
  int ok;
} mtest_pvar_t;

static inline mtest_pvar_t mtest_pvar_open(const char *name) {
  mtest_pvar_t p;
  int provided = 0, index = -1, count = 0;
  p.ok = 0;
  p.handle = MPI_T_PVAR_HANDLE_NULL;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return p;
  if (MPI_T_pvar_session_create(&p.session) != MPI_SUCCESS) return p;
  if (MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &index) != MPI_SUCCESS) return p;
  p.ok = MPI_T_pvar_handle_alloc(p.session, index, NULL, &p.handle, &count) == MPI_SUCCESS;
  return p;
}

static inline long long mtest_pvar_read(mtest_pvar_t *p) {
  unsigned long long v = 0;
  if (!p->ok || MPI_T_pvar_read(p->session, p->handle, &v) != MPI_SUCCESS) return -1;
  return (long long)v;
}

/* A line on stdout in one write. MPICH's MPI_Init leaves stdout unbuffered,
 * where printf("...\n") of a constant becomes puts(): the text and its
 * newline in two writes, and mpiexec may forward another rank's whole line
 * between them ("not checked: ... No Errors", a CI failure of lock_bias
 * under TSan). Formatted first, written by one fputs. */
static inline void mtest_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void mtest_printf(const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fputs(line, stdout);
  fflush(stdout);
}

/* A part of a test this MPI library cannot run (an MPI-4 function it lacks:
 * configure's MPIX_HAVE_MPI_* flags): said on rank 0 as a "not checked:"
 * line, which test/runtests shows beside the test's PASS, so that what was
 * left out is never silent. The rest of the test still counts. */
static inline void mtest_not_checked(const char *what) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) mtest_printf("not checked: %s\n", what);
}

/* A communicator with the no-any assertions given (1: asserted). */
static inline MPI_Comm mtest_dup_asserting(MPI_Comm comm, int no_source, int no_tag) {
  MPI_Info info;
  MPI_Comm c;
  MPI_Info_create(&info);
  if (no_source) MPI_Info_set(info, "mpi_assert_no_any_source", "true");
  if (no_tag) MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPI_Comm_dup_with_info(comm, info, &c);
  MPI_Info_free(&info);
  return c;
}

/* The communicators a point-to-point test runs over, in the manner of
 * MPICH's MTestGetIntracomm: MPI_COMM_WORLD (matched by the MPI library
 * unless MPIX_INTERCEPT=all), then each way a program gets one that mpix
 * matches. A test picks the ones it needs (MTEST_COMM_* bits, in this
 * order in the array); the wildcards each allows are said. */
typedef struct {
  MPI_Comm comm;
  const char *name;
  int any_source_ok, any_tag_ok; /* wildcards this communicator allows */
} mtest_comm_t;

enum {
  MTEST_COMM_WORLD = 1,
  MTEST_COMM_NOWILDCARD = 2,       /* MPIX_Comm_dup_nowildcard */
  MTEST_COMM_ASSERT_BOTH = 4,      /* dup_with_info(no_any_source, no_any_tag) */
  MTEST_COMM_ASSERT_SOURCE = 8,    /* dup_with_info(no_any_source) */
  MTEST_COMM_ASSERT_TAG = 16,      /* dup_with_info(no_any_tag) */
  MTEST_COMM_DUP_OF_NOWILDCARD = 32, /* MPI_Comm_dup of the no-wildcard one: inherits its assertions */
  MTEST_COMM_ALL = 63,
  MTEST_MAX_COMMS = 6
};

/* Fills c (room for MTEST_MAX_COMMS) with the chosen communicators;
 * returns how many. The no-wildcard one must be mpix's (checked). */
static inline int mtest_get_comms(unsigned which, mtest_comm_t *c) {
  int n = 0;
  MPI_Comm nw = MPI_COMM_NULL;
  if (which & MTEST_COMM_WORLD) c[n++] = (mtest_comm_t){MPI_COMM_WORLD, "MPI_COMM_WORLD", 1, 1};
  if (which & (MTEST_COMM_NOWILDCARD | MTEST_COMM_DUP_OF_NOWILDCARD)) {
    MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
    mtest_check_handled(nw, "MPIX_Comm_dup_nowildcard");
  }
  if (which & MTEST_COMM_NOWILDCARD) c[n++] = (mtest_comm_t){nw, "MPIX_Comm_dup_nowildcard", 0, 0};
  if (which & MTEST_COMM_ASSERT_BOTH)
    c[n++] = (mtest_comm_t){mtest_dup_asserting(MPI_COMM_WORLD, 1, 1), "dup_with_info(no_any_source,no_any_tag)", 0, 0};
  if (which & MTEST_COMM_ASSERT_SOURCE)
    c[n++] = (mtest_comm_t){mtest_dup_asserting(MPI_COMM_WORLD, 1, 0), "dup_with_info(no_any_source)", 0, 1};
  if (which & MTEST_COMM_ASSERT_TAG)
    c[n++] = (mtest_comm_t){mtest_dup_asserting(MPI_COMM_WORLD, 0, 1), "dup_with_info(no_any_tag)", 1, 0};
  if (which & MTEST_COMM_DUP_OF_NOWILDCARD) {
    c[n] = (mtest_comm_t){MPI_COMM_NULL, "MPI_Comm_dup(nowildcard)", 0, 0};
    MPI_Comm_dup(nw, &c[n++].comm);
    if (!(which & MTEST_COMM_NOWILDCARD)) MPI_Comm_free(&nw);
  }
  return n;
}

/* Frees what mtest_get_comms made (MPI_COMM_WORLD stays). */
static inline void mtest_free_comms(mtest_comm_t *c, int n) {
  for (int i = 0; i < n; i++)
    if (c[i].comm != MPI_COMM_WORLD) MPI_Comm_free(&c[i].comm);
}

/* Sums errors over all ranks, prints the verdict on rank 0, finalizes. */
static inline int mtest_finalize(void) {
  int total = 0, rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Allreduce(&mtest_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    if (total == 0) mtest_printf(" No Errors\n");
    else mtest_printf(" Found %d errors\n", total);
  }
  MPI_Finalize();
  return total != 0;
}

#endif
