/* MPI's progress rule across mpix and the MPI library: rank 1 posts a
 * receive on MPI_COMM_WORLD (native unless MPIX_INTERCEPT=all) and one on a
 * no-wildcard communicator, then waits on the handled one, while rank 0
 * sends 1 MiB on MPI_COMM_WORLD with a blocking MPI_Send and only then the
 * handled message. Natively rank 1's wait progresses the world receive;
 * under mpix over UCX nothing entered the MPI library and both ranks hung
 * (found by the soak). Waits by MPI_Wait, then by an MPI_Test loop. */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

int main(int argc, char **argv) {
  int rank;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm nw;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  mtest_check_handled(nw, "MPIX_Comm_dup_nowildcard");
  const int n = 1 << 20;
  char *big = malloc(n);
  for (int how = 0; how < 2; how++) {
    int x = -1;
    if (rank == 0) {
      for (int i = 0; i < n; i++) big[i] = (char)(i * 7 + how);
      MPI_Send(big, n, MPI_BYTE, 1, how, MPI_COMM_WORLD);
      x = how;
      MPI_Send(&x, 1, MPI_INT, 1, how, nw);
    } else if (rank == 1) {
      MPI_Request r[2];
      memset(big, 0, n);
      MPI_Irecv(big, n, MPI_BYTE, 0, how, MPI_COMM_WORLD, &r[0]);
      MPI_Irecv(&x, 1, MPI_INT, 0, how, nw, &r[1]);
      if (how == 0) MPI_Wait(&r[1], MPI_STATUS_IGNORE);
      else
        for (int flag = 0; !flag;) MPI_Test(&r[1], &flag, MPI_STATUS_IGNORE);
      MPI_Wait(&r[0], MPI_STATUS_IGNORE);
      int bad = -1;
      for (int i = 0; i < n && bad < 0; i++)
        if (big[i] != (char)(i * 7 + how)) bad = i;
      MTEST_CHECK(x == how && bad < 0, "round %d: handled message %d, world message byte %d wrong", how, x, bad);
    }
  }
  free(big);
  MPI_Comm_free(&nw);
  return mtest_finalize();
}
