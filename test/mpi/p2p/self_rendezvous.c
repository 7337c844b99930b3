/* Sends to oneself before any receive: many more rendezvous-size MPI_Isends
 * (and eager ones) to the own rank than the pmpi transport has landing
 * receives (MPIX_LANDING_SLOTS, 16), then the receives. MPICH holds a send
 * to self until a receive matches it, and the landing receive that would
 * match an envelope is reposted only by a later poll: a blocking envelope
 * send hung the 17th MPI_Isend (found by the soak). Every payload checked;
 * each rank talks to itself on a no-wildcard communicator. */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

#define N 48

int main(int argc, char **argv) {
  int rank;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm nw;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  mtest_check_handled(nw, "MPIX_Comm_dup_nowildcard");
  MPI_Request reqs[2 * N];
  int *sbuf[N], *rbuf[N], count[N];
  for (int i = 0; i < N; i++) {
    count[i] = i % 3 == 2 ? 16 : 25000 + i; /* ints: mostly past the eager limit */
    sbuf[i] = malloc(count[i] * sizeof(int));
    rbuf[i] = calloc(count[i], sizeof(int));
    for (int k = 0; k < count[i]; k++) sbuf[i][k] = rank * 1000003 + i * 1009 + k;
    MPI_Isend(sbuf[i], count[i], MPI_INT, rank, i % 2, nw, &reqs[i]);
  }
  for (int i = 0; i < N; i++) MPI_Irecv(rbuf[i], count[i], MPI_INT, rank, i % 2, nw, &reqs[N + i]);
  MPI_Waitall(2 * N, reqs, MPI_STATUSES_IGNORE);
  for (int i = 0; i < N; i++) {
    int bad = -1;
    for (int k = 0; k < count[i] && bad < 0; k++)
      if (rbuf[i][k] != rank * 1000003 + i * 1009 + k) bad = k;
    MTEST_CHECK(bad < 0, "message %d to self: int %d wrong", i, bad);
    free(sbuf[i]);
    free(rbuf[i]);
  }
  MPI_Comm_free(&nw);
  return mtest_finalize();
}
