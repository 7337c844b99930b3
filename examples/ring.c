/* An ordinary MPI program that knows nothing of mpix: a token ring, a
 * non-blocking neighbour exchange and an allreduce. `make demo` runs it
 * unmodified under LD_PRELOAD=libmpix.so and relinked with -lmpix. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int errors = 0;

  /* Token ring: each rank adds its rank. */
  int token = 0;
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  if (size > 1) {
    if (rank == 0) {
      MPI_Send(&token, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
      MPI_Recv(&token, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (token != size * (size - 1) / 2) errors++;
    } else {
      MPI_Recv(&token, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      token += rank;
      MPI_Send(&token, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
    }
  }

  /* Non-blocking exchange with both neighbours. */
  enum { N = 1 << 16 };
  int *out = malloc(N * sizeof(int)), *left = malloc(N * sizeof(int)), *right = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++) out[i] = rank * N + i;
  MPI_Request req[4];
  MPI_Irecv(left, N, MPI_INT, prev, 1, MPI_COMM_WORLD, &req[0]);
  MPI_Irecv(right, N, MPI_INT, next, 2, MPI_COMM_WORLD, &req[1]);
  MPI_Isend(out, N, MPI_INT, next, 1, MPI_COMM_WORLD, &req[2]);
  MPI_Isend(out, N, MPI_INT, prev, 2, MPI_COMM_WORLD, &req[3]);
  MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
  for (int i = 0; i < N; i++)
    if (left[i] != prev * N + i || right[i] != next * N + i) errors++;

  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("ring of %d ranks: token %d, exchange of %d ints with neighbours\n", size, token, N);
    printf(total == 0 ? " No Errors\n" : " Found %d errors\n", total);
  }
  free(out);
  free(left);
  free(right);
  MPI_Finalize();
  return total != 0;
}
