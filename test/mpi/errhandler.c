/* Errors from MPIX calls go through the communicator's error handler exactly
 * as MPI's own do: MPI_ERRORS_RETURN returns the code, a user handler is
 * called with it, and invalid communicators report on MPI_COMM_SELF. */
#include "mpix.h"
#include "mtest.h"

static int handler_calls = 0;
static int handler_code = MPI_SUCCESS;
static MPI_Comm handler_comm = MPI_COMM_NULL;

static void record(MPI_Comm *comm, int *code, ...) {
  handler_calls++;
  handler_code = *code;
  handler_comm = *comm;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  char text[MPI_MAX_ERROR_STRING];
  int len = 0, flag = 0;

  /* MPI_ERRORS_RETURN: the code comes back, with its class and text. */
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  int rc = MPIX_Comm_is_handled(MPI_COMM_NULL, &flag);
  MTEST_CHECK(rc != MPI_SUCCESS && mtest_class(rc) == MPI_ERR_COMM, "rc %d class %d", rc, mtest_class(rc));
  MPI_Error_string(rc, text, &len);
  /* Either mpix's own text or, where the MPI library cannot attach texts to
   * codes of predefined classes (MPICH 4.0), MPI's text for the class. */
  MTEST_CHECK(strstr(text, "nvalid communicator") != NULL, "text \"%s\"", text);

  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  rc = MPIX_Comm_is_handled(MPI_COMM_WORLD, NULL);
  MTEST_CHECK(mtest_class(rc) == MPI_ERR_ARG, "null flag: rc %d class %d", rc, mtest_class(rc));

  /* A user handler on the communicator sees the same code. */
  MPI_Errhandler eh;
  MPI_Comm_create_errhandler(record, &eh);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_set_errhandler(dup, eh);
  rc = MPIX_Comm_is_handled(dup, NULL);
  MTEST_CHECK(handler_calls == 1, "handler called %d times", handler_calls);
  MTEST_CHECK(handler_code == rc && mtest_class(rc) == MPI_ERR_ARG, "handler code %d, returned %d",
              handler_code, rc);
  int same = MPI_UNEQUAL;
  MPI_Comm_compare(handler_comm, dup, &same);
  MTEST_CHECK(same == MPI_IDENT, "handler got another communicator");

  /* ... and on MPI_COMM_SELF for an invalid communicator. */
  MPI_Comm_set_errhandler(MPI_COMM_SELF, eh);
  rc = MPIX_Comm_is_handled(MPI_COMM_NULL, &flag);
  MTEST_CHECK(handler_calls == 2 && handler_code == rc, "self handler calls %d", handler_calls);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

  MPI_Errhandler_free(&eh);
  MPI_Comm_free(&dup);
  return mtest_finalize();
}
