/* MPIX_Comm_device_handle from a C program (mpix_device.h is C-clean), its
 * errors through the communicator's error handler: a communicator that
 * allows wildcards (not handled, or only one assertion) -> MPIX_ERR_WILDCARD,
 * MPI_COMM_NULL -> MPI_ERR_COMM, NULL handle -> MPI_ERR_ARG; on a
 * no-wildcard communicator either a handle (GPU present) or, on every rank
 * alike, MPIX_ERR_NO_CUDA (no GPU, or built without CUDA). */
#include <mpi.h>

#include "mpix_device.h"
#include "mtest.h"

static int handler_calls = 0;
static void count_errors(MPI_Comm *comm, int *code, ...) {
  (void)comm;
  (void)code;
  handler_calls++;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, rc;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPIX_Device_comm h;

  MPI_Comm plain;
  MPI_Comm_dup(MPI_COMM_WORLD, &plain);
  MPI_Errhandler eh;
  MPI_Comm_create_errhandler(count_errors, &eh);
  MPI_Comm_set_errhandler(plain, eh);
  rc = MPIX_Comm_device_handle(plain, &h);
  MTEST_CHECK(mtest_class(rc) == MPIX_ERR_WILDCARD, "plain comm: class %d", mtest_class(rc));
  MTEST_CHECK(handler_calls == 1, "the comm's handler ran %d times", handler_calls);
  rc = MPIX_Comm_device_handle(plain, NULL);
  MTEST_CHECK(mtest_class(rc) == MPIX_ERR_WILDCARD || mtest_class(rc) == MPI_ERR_ARG, "NULL handle: class %d",
              mtest_class(rc));
  MPI_Comm_free(&plain);

  /* Only one of the two assertions: wildcards still possible. */
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_source", "true");
  MPI_Comm half;
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &half);
  MPI_Info_free(&info);
  MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
  rc = MPIX_Comm_device_handle(half, &h);
  MTEST_CHECK(mtest_class(rc) == MPIX_ERR_WILDCARD, "half-asserted comm: class %d", mtest_class(rc));
  MPI_Comm_free(&half);

  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  rc = MPIX_Comm_device_handle(MPI_COMM_NULL, &h);
  MTEST_CHECK(mtest_class(rc) == MPI_ERR_COMM, "MPI_COMM_NULL: class %d", mtest_class(rc));

  MPI_Comm nw;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  MPI_Comm_set_errhandler(nw, MPI_ERRORS_RETURN);
  rc = MPIX_Comm_device_handle(nw, NULL);
  MTEST_CHECK(mtest_class(rc) == MPI_ERR_ARG, "NULL handle: class %d", mtest_class(rc));
  rc = MPIX_Comm_device_handle(nw, &h);
  int ok = rc == MPI_SUCCESS, all_ok = 0, any_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  MPI_Allreduce(&ok, &any_ok, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  MTEST_CHECK(all_ok == any_ok, "ranks disagree on the outcome");
  if (ok) {
    MTEST_CHECK(h.rank == rank && h.size == size && h.channels > 0 && h.slots > 0, "handle fields");
    MPIX_Device_comm again;
    MPIX_Comm_device_handle(nw, &again);
    MTEST_CHECK(again.local == h.local, "one mailbox per communicator");
  } else {
    MTEST_CHECK(mtest_class(rc) == MPIX_ERR_NO_CUDA, "no GPU: class %d", mtest_class(rc));
  }
  MPI_Comm_free(&nw);
  MPI_Errhandler_free(&eh);
  return mtest_finalize();
}
