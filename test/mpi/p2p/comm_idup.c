/* MPI_Comm_idup and MPI_Comm_idup_with_info of a handled communicator are
 * nonblocking: rank 0 starts the idup, tests it (it cannot be complete: rank
 * 1 has not started its own), then receives a message that rank 1 sends
 * with MPI_Ssend before it starts its idup. A blocking idup (mpix made the
 * child in the call before) hangs both ranks; a watchdog turns the hang
 * into a failure. The children are handled by mpix (inherited assertions,
 * or the info's), carry traffic, and get the parent's hints. Other ranks
 * take part in the idups only. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "mpix.h"
#include "mtest.h"

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "comm_idup: still blocked after 60 s: MPI_Comm_idup is not nonblocking\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
  _exit(2);
}

static void check_child(MPI_Comm child, int rank, int round, const char *what) {
  mtest_check_handled(child, what);
  int size;
  MPI_Comm_size(child, &size);
  int v = rank * 100 + round, got = -1;
  MPI_Sendrecv(&v, 1, MPI_INT, (rank + 1) % size, round, &got, 1, MPI_INT, (rank + size - 1) % size, round, child,
               MPI_STATUS_IGNORE);
  MTEST_CHECK(got == ((rank + size - 1) % size) * 100 + round, "%s: got %d", what, got);
}

int main(int argc, char **argv) {
  int rank;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  signal(SIGALRM, on_alarm);
  alarm(60);

  MPI_Comm parent;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &parent);
  mtest_check_handled(parent, "MPIX_Comm_dup_nowildcard");
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_source", "true");
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");

#ifndef MPIX_HAVE_MPI_COMM_IDUP_WITH_INFO
  mtest_not_checked("MPI_Comm_idup_with_info, rounds 1 and 3 (MPI-4, not in this MPI library)");
#endif
  for (int round = 0; round < 4; round++) {
    const int with_info = round % 2;
#ifndef MPIX_HAVE_MPI_COMM_IDUP_WITH_INFO
    if (with_info) continue;
#endif
    /* with_info: a plain dup of MPI_COMM_WORLD made handled by the info. */
    MPI_Comm from = with_info ? MPI_COMM_WORLD : parent, child = MPI_COMM_NULL;
    MPI_Request req = MPI_REQUEST_NULL;
    int token = -1, flag = 0;
    if (rank == 1) {
      token = round;
      MPI_Ssend(&token, 1, MPI_INT, 0, round, MPI_COMM_WORLD);
    }
#ifdef MPIX_HAVE_MPI_COMM_IDUP_WITH_INFO
    if (with_info) MPI_Comm_idup_with_info(from, info, &child, &req);
    else
#endif
      MPI_Comm_idup(from, &child, &req);
    if (rank == 0) {
      MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
      MTEST_CHECK(!flag, "round %d: idup complete before rank 1 started its own", round);
      MPI_Recv(&token, 1, MPI_INT, 1, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MTEST_CHECK(token == round, "round %d: token %d", round, token);
    }
    if (round < 2) {
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
      while (!flag) MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    }
    MTEST_CHECK(req == MPI_REQUEST_NULL, "round %d: request not freed", round);
    check_child(child, rank, round, with_info ? "idup_with_info child" : "idup child");
    if (!with_info) {
      int src_asserted = -1;
      MPI_Info got;
      MPI_Comm_get_info(child, &got);
      char value[16] = "";
      MPI_Info_get(got, "mpi_assert_no_any_source", sizeof value - 1, value, &src_asserted);
      MTEST_CHECK(src_asserted && strcmp(value, "true") == 0, "idup child lost the parent's assertion");
      MPI_Info_free(&got);
    }
    MPI_Comm_free(&child);
  }
  alarm(0);
  MPI_Info_free(&info);
  MPI_Comm_free(&parent);
  return mtest_finalize();
}
