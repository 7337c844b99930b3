/* MPI_Finalize with traffic still on its way, on a no-wildcard
 * communicator, every rank to its right neighbour: sends freed with
 * MPI_Request_free before they completed (eager and rendezvous sizes),
 * buffered sends (small and large) with the buffer left attached, and
 * receives posted and freed with MPI_Request_free right before
 * MPI_Finalize, for messages the left neighbour sends only then. MPI
 * requires all of it to complete by the end of MPI_Finalize: the receives'
 * data is checked after MPI_Finalize returns. The earlier messages are
 * received normally and checked before. Nothing may hang, and the
 * library's endpoints close without complaint. */
#include <stdlib.h>
#include <string.h>

#include "mpix.h"
#include "mtest.h"

#define NSMALL 40
#define NLARGE 4
#define LARGE 300000 /* ints: rendezvous on every transport */
#define NLATE 3

static int late_in[NLATE][LARGE];

static int value(int src, int msg, int k) { return src * 7919 + msg * 131 + k; }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm c;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &c);
  int handled = 0;
  MPIX_Comm_is_handled(c, &handled);
  MTEST_CHECK(handled == 1, "the communicator is not handled by mpix");
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;

  /* Freed sends: the buffers stay valid until MPI_Finalize. */
  int *small = malloc(sizeof(int) * NSMALL * 4);
  int *large = malloc(sizeof(int) * (size_t)NLARGE * LARGE);
  for (int i = 0; i < NSMALL; i++) {
    for (int k = 0; k < 4; k++) small[i * 4 + k] = value(rank, i, k);
    MPI_Request r;
    MPI_Isend(small + i * 4, 4, MPI_INT, right, i, c, &r);
    MPI_Request_free(&r);
  }
  for (int i = 0; i < NLARGE; i++) {
    for (int k = 0; k < LARGE; k++) large[(size_t)i * LARGE + k] = value(rank, 1000 + i, k);
    MPI_Request r;
    MPI_Isend(large + (size_t)i * LARGE, LARGE, MPI_INT, right, 1000 + i, c, &r);
    MPI_Request_free(&r);
  }
  /* Buffered sends, small and large; the buffer stays attached. */
  const int bsize = 8 * (LARGE * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
  void *bbuf = malloc(bsize);
  MPI_Buffer_attach(bbuf, bsize);
  int *bdata = malloc(sizeof(int) * LARGE);
  for (int i = 0; i < 4; i++) {
    const int n = i % 2 ? LARGE : 3;
    for (int k = 0; k < n; k++) bdata[k] = value(rank, 2000 + i, k);
    MPI_Bsend(bdata, n, MPI_INT, right, 2000 + i, c);
  }
  /* The receiver takes them only after everything was sent. */
  MPI_Barrier(MPI_COMM_WORLD);
  int *in = malloc(sizeof(int) * LARGE);
  for (int i = NSMALL - 1; i >= 0; i--) {
    MPI_Recv(in, 4, MPI_INT, left, i, c, MPI_STATUS_IGNORE);
    int bad = -1;
    for (int k = 0; k < 4 && bad < 0; k++)
      if (in[k] != value(left, i, k)) bad = k;
    MTEST_CHECK(bad < 0, "freed eager send %d: element %d wrong", i, bad);
  }
  for (int i = 0; i < NLARGE + 4; i++) {
    const int tag = i < NLARGE ? 1000 + i : 2000 + (i - NLARGE);
    const int n = i < NLARGE || (i - NLARGE) % 2 ? LARGE : 3;
    MPI_Status st;
    MPI_Recv(in, LARGE, MPI_INT, left, tag, c, &st);
    int count = -1, bad = -1;
    MPI_Get_count(&st, MPI_INT, &count);
    for (int k = 0; k < n && bad < 0; k++)
      if (in[k] != value(left, tag, k)) bad = k;
    MTEST_CHECK(count == n && bad < 0, "tag %d: count %d (want %d), element %d wrong", tag, count, n, bad);
  }

  /* Late traffic: receives freed at once, sends freed at once, then
   * MPI_Finalize. */
  memset(late_in, 0xff, sizeof late_in);
  for (int i = 0; i < NLATE; i++) {
    MPI_Request r;
    MPI_Irecv(late_in[i], LARGE, MPI_INT, left, 3000 + i, c, &r);
    MPI_Request_free(&r);
  }
  int *late_out = malloc(sizeof(int) * (size_t)NLATE * LARGE);
  for (int i = 0; i < NLATE; i++) {
    const int n = i == 0 ? 5 : LARGE;
    for (int k = 0; k < n; k++) late_out[(size_t)i * LARGE + k] = value(rank, 3000 + i, k);
    MPI_Request r;
    MPI_Isend(late_out + (size_t)i * LARGE, n, MPI_INT, right, 3000 + i, c, &r);
    MPI_Request_free(&r);
  }
  int total = 0;
  MPI_Allreduce(&mtest_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  /* No MPI_Comm_free, no MPI_Buffer_detach: MPI_Finalize finishes it all. */
  MPI_Finalize();

  int late_bad = 0;
  for (int i = 0; i < NLATE; i++) {
    const int n = i == 0 ? 5 : LARGE;
    for (int k = 0; k < n; k++)
      if (late_in[i][k] != value(left, 3000 + i, k)) {
        fprintf(stderr, "[rank %d] late receive %d: element %d is %d after MPI_Finalize, expected %d\n", rank, i, k,
                late_in[i][k], value(left, 3000 + i, k));
        late_bad = 1;
        break;
      }
  }
  if (rank == 0 && total == 0 && !late_bad) mtest_printf(" No Errors\n");
  else if (total != 0 && rank == 0) mtest_printf(" Found %d errors\n", total);
  free(small);
  free(large);
  free(in);
  free(bdata);
  free(late_out);
  free(bbuf);
  return total != 0 || late_bad;
}
