/*
 * MPI's progress rule on handled communicators: a receive posted before the
 * receiver blocks in a call mpix does not intercept (MPI_Barrier here) must
 * still let a synchronous send, and a rendezvous-sized standard send,
 * complete on the peer. Natively MPICH progresses everything inside the
 * barrier; under mpix the liveness thread does (src/p2p/liveness.h). Without
 * it this program hangs (and the runner's time limit fails it).
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "mpix.h"
#include "mtest.h"

static void exchange(MPI_Comm comm, int rank, int count, int sync) {
  int *buf = malloc(sizeof(int) * (size_t)count);
  MPI_Request req = MPI_REQUEST_NULL;
  if (rank == 0) {
    for (int i = 0; i < count; i++) buf[i] = i ^ 0x5a5a;
    if (sync) MPI_Ssend(buf, count, MPI_INT, 1, 7, comm);
    else MPI_Send(buf, count, MPI_INT, 1, 7, comm);
  } else if (rank == 1) {
    memset(buf, 0, sizeof(int) * (size_t)count);
    MPI_Irecv(buf, count, MPI_INT, 0, 7, comm, &req);
  }
  /* The sender leaves its send only once the receiver's engine has read the
   * header, which happens while the receiver sits in this barrier. */
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) {
    MPI_Status st;
    MPI_Wait(&req, &st);
    int n = -1;
    MPI_Get_count(&st, MPI_INT, &n);
    MTEST_CHECK(n == count, "count %d, expected %d (%s)", n, count, sync ? "ssend" : "send");
    for (int i = 0; i < count; i++)
      if (buf[i] != (i ^ 0x5a5a)) {
        MTEST_CHECK(0, "element %d wrong (%s, count %d)", i, sync ? "ssend" : "send", count);
        break;
      }
  }
  free(buf);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm comm;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &comm);
  mtest_check_handled(comm, "MPIX_Comm_dup_nowildcard");
  exchange(comm, rank, 2, 1);          /* synchronous, small */
  exchange(comm, rank, 1 << 18, 0);    /* 1 MiB: rendezvous */
  exchange(comm, rank, 1 << 18, 1);
  MPI_Comm_free(&comm);
  return mtest_finalize();
}
