/* Open MPI 4.1.4 (Debian 12), no mpix: at MPI_THREAD_SERIALIZED or
 * MPI_THREAD_MULTIPLE a rendezvous message truncated into a receive that
 * MPI_Waitall completes never completes when vader's single-copy get (CMA)
 * carries it; the sender returns. Hangs every run on the 2-core CI machine;
 * MPI_THREAD_SINGLE, or OMPI_MCA_btl_vader_single_copy_mechanism=none,
 * passes. mpix initialises the library at MPI_THREAD_MULTIPLE (its own
 * threads call it), so test/mpi/p2p/truncate met this intermittently on
 * MPI_COMM_WORLD's duplicate, which Open MPI carries itself.
 *
 *   mpicc.openmpi -DLEVEL=MPI_THREAD_MULTIPLE ompi41-truncate-hang.c -o hang
 *   timeout 10 mpirun.openmpi --oversubscribe -n 2 ./hang   # exit 124 */
#include <mpi.h>
#include <stdio.h>

#ifndef LEVEL
#define LEVEL MPI_THREAD_MULTIPLE
#endif

/* What rank 1 sends, in order; rank 0's receives below take them in turn. */
static const int plan[] = {100, 50, 200000, 10, 1, 64, 200000, 8};
static char buf[400000];

int main(int argc, char **argv) {
  int provided, rank;
  MPI_Init_thread(&argc, &argv, LEVEL, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Request r[2];
  if (rank == 1) {
    for (int m = 0; m < 8; m++) MPI_Send(buf, plan[m], MPI_BYTE, 0, 1, MPI_COMM_WORLD);
  } else if (rank == 0) {
    MPI_Recv(buf, 60, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);   /* truncated */
    MPI_Recv(buf, 60, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Irecv(buf, 1000, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &r[0]);             /* truncated */
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    MPI_Recv(buf, 10, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(NULL, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);   /* truncated */
    MPI_Irecv(buf, 64, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(buf + 64, 100, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &r[1]);         /* truncated */
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);                                   /* never returns */
    MPI_Recv(buf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("completed\n");
  }
  MPI_Finalize();
  return 0;
}
