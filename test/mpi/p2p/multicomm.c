/* One pair of processes addressed through many communicators at once: a
 * no-wildcard dup of MPI_COMM_WORLD, a dup of that dup, the world in
 * reverse rank order, the even and the odd ranks, and a communicator made
 * from a group of every other rank; every rank sends to every member of
 * each (itself included) the same tags, eager and rendezvous sizes, in a
 * shuffled interleaving of communicators, and checks that each receive got
 * its own communicator's message in sending order. Then communicator churn
 * (create, exchange, free, 30 times) while a receive on another handled
 * communicator stays posted across it, and an intercommunicator between
 * the halves, which mpix passes through to the MPI library (not handled)
 * even when its assertions are set. Checks MPIX_Comm_is_handled on each. */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

#define NCOMM 6
#define PER_PEER 12 /* messages per (communicator, destination) */
#define BIG 20000   /* ints: above every eager limit */

static int rank, size;

static MPI_Comm nowildcard_dup(MPI_Comm c) {
  MPI_Comm d;
  MPIX_Comm_dup_nowildcard(c, &d);
  return d;
}

static int value(int comm, int src, int seq, int k) { return comm * 1000003 + src * 10007 + seq * 101 + k; }
static int length(int seq) { return seq % 3 == 2 ? BIG : 1 + seq % 5; }

static void check_handled(MPI_Comm c, int want, const char *what) {
  int flag = -1;
  MTEST_CHECK(MPIX_Comm_is_handled(c, &flag) == MPI_SUCCESS && flag == want, "%s: handled=%d, expected %d", what,
              flag, want);
}

static void traffic(MPI_Comm *comms) {
  int csize[NCOMM], crank[NCOMM], total_recv = 0, total_send = 0;
  for (int c = 0; c < NCOMM; c++) {
    if (comms[c] == MPI_COMM_NULL) {
      csize[c] = crank[c] = 0;
      continue;
    }
    MPI_Comm_size(comms[c], &csize[c]);
    MPI_Comm_rank(comms[c], &crank[c]);
    total_recv += csize[c] * PER_PEER;
    total_send += csize[c] * PER_PEER;
  }
  int **rbuf = malloc(sizeof(int *) * total_recv);
  MPI_Request *reqs = malloc(sizeof(MPI_Request) * (total_recv + total_send));
  int *rc = malloc(sizeof(int) * total_recv * 3);
  /* Receives first, per communicator and source in sending order. */
  int nr = 0;
  for (int c = 0; c < NCOMM; c++)
    for (int s = 0; s < csize[c]; s++)
      for (int q = 0; q < PER_PEER; q++) {
        rbuf[nr] = malloc(sizeof(int) * BIG);
        rc[3 * nr] = c, rc[3 * nr + 1] = s, rc[3 * nr + 2] = q;
        MPI_Irecv(rbuf[nr], BIG, MPI_INT, s, 7, comms[c], &reqs[nr]);
        nr++;
      }
  /* Sends: round-robin over a shuffled order of communicators, so that
   * messages of different communicators to one peer interleave. */
  int **sbuf = malloc(sizeof(int *) * total_send);
  int ns = 0;
  unsigned seed = 12345u + (unsigned)rank;
  int next[NCOMM][64] = {{0}}; /* per (comm, dest) next seq; size <= 64 */
  int remaining = total_send;
  while (remaining > 0) {
    const int c = (int)(rand_r(&seed) % NCOMM);
    if (csize[c] == 0) continue;
    const int d = (int)(rand_r(&seed) % (unsigned)csize[c]);
    if (next[c][d] == PER_PEER) continue;
    const int q = next[c][d]++;
    const int n = length(q);
    sbuf[ns] = malloc(sizeof(int) * n);
    for (int k = 0; k < n; k++) sbuf[ns][k] = value(c, crank[c], q, k);
    if (q % 4 == 3) MPI_Issend(sbuf[ns], n, MPI_INT, d, 7, comms[c], &reqs[nr + ns]);
    else MPI_Isend(sbuf[ns], n, MPI_INT, d, 7, comms[c], &reqs[nr + ns]);
    ns++;
    remaining--;
  }
  MPI_Status *st = malloc(sizeof(MPI_Status) * (nr + ns));
  MPI_Waitall(nr + ns, reqs, st);
  for (int i = 0; i < nr; i++) {
    const int c = rc[3 * i], s = rc[3 * i + 1], q = rc[3 * i + 2], n = length(q);
    int count = -1, bad = -1;
    MPI_Get_count(&st[i], MPI_INT, &count);
    for (int k = 0; k < n && bad < 0; k++)
      if (rbuf[i][k] != value(c, s, q, k)) bad = k;
    MTEST_CHECK(count == n && bad < 0 && st[i].MPI_SOURCE == s,
                "communicator %d, message %d from %d: count %d (want %d), element %d wrong (got %d)", c, q, s,
                count, n, bad, bad >= 0 ? rbuf[i][bad] : 0);
    free(rbuf[i]);
  }
  for (int i = 0; i < ns; i++) free(sbuf[i]);
  free(sbuf);
  free(st);
  free(rbuf);
  free(reqs);
  free(rc);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 64) {
    if (rank == 0) mtest_printf("skipped: at most 64 ranks\n");
    MPI_Finalize();
    return 0;
  }
  MPI_Comm comms[NCOMM], tmp;
  comms[0] = nowildcard_dup(MPI_COMM_WORLD);
  MPI_Comm_dup(comms[0], &comms[1]); /* inherits the assertions */
  MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &tmp);
  comms[2] = nowildcard_dup(tmp);
  MPI_Comm_free(&tmp);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &tmp);
  comms[3] = rank % 2 == 0 ? nowildcard_dup(tmp) : MPI_COMM_NULL;
  comms[4] = rank % 2 == 1 ? nowildcard_dup(tmp) : MPI_COMM_NULL;
  MPI_Comm_free(&tmp);
  MPI_Group world_group, every_other;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  int range[1][3] = {{0, size - 1, 2}};
  MPI_Group_range_incl(world_group, 1, range, &every_other);
  MPI_Comm_create(MPI_COMM_WORLD, every_other, &tmp);
  comms[5] = tmp == MPI_COMM_NULL ? MPI_COMM_NULL : nowildcard_dup(tmp);
  if (tmp != MPI_COMM_NULL) MPI_Comm_free(&tmp);
  MPI_Group_free(&every_other);
  MPI_Group_free(&world_group);
  for (int c = 0; c < NCOMM; c++)
    if (comms[c] != MPI_COMM_NULL) check_handled(comms[c], 1, "a no-wildcard communicator");

  for (int round = 0; round < 2; round++) traffic(comms);

  /* Churn: a receive on comms[0] stays posted while 30 communicators come
   * and go, each carrying a ring exchange. */
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int early = -1, token = rank;
  MPI_Request pending;
  MPI_Irecv(&early, 1, MPI_INT, left, 99, comms[0], &pending);
  for (int i = 0; i < 30; i++) {
    MPI_Comm c = nowildcard_dup(i % 2 ? comms[2] : MPI_COMM_WORLD);
    int c_rank, c_size, got = -1;
    MPI_Comm_rank(c, &c_rank);
    MPI_Comm_size(c, &c_size);
    const int send = c_rank * 1000 + i;
    MPI_Sendrecv(&send, 1, MPI_INT, (c_rank + 1) % c_size, i, &got, 1, MPI_INT, (c_rank + c_size - 1) % c_size, i, c,
                 MPI_STATUS_IGNORE);
    MTEST_CHECK(got == ((c_rank + c_size - 1) % c_size) * 1000 + i, "churn %d: got %d", i, got);
    MPI_Comm_free(&c);
  }
  MPI_Send(&token, 1, MPI_INT, right, 99, comms[0]);
  MPI_Wait(&pending, MPI_STATUS_IGNORE);
  MTEST_CHECK(early == left, "receive posted across the churn got %d, expected %d", early, left);

  /* An intercommunicator between the halves: passed through. */
  if (size >= 2) {
    MPI_Comm half, inter, inter_hinted;
    const int low = rank < size / 2;
    MPI_Comm_split(MPI_COMM_WORLD, low, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? size / 2 : 0, 5, &inter);
    check_handled(inter, 0, "an intercommunicator");
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_source", "true");
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    MPI_Comm_dup_with_info(inter, info, &inter_hinted);
    MPI_Info_free(&info);
    check_handled(inter_hinted, 0, "an intercommunicator with no-wildcard assertions");
    int hrank, remote;
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_remote_size(inter, &remote);
    if (hrank < remote) {
      int out = rank, in = -1;
      MPI_Sendrecv(&out, 1, MPI_INT, hrank, 3, &in, 1, MPI_INT, hrank, 3, inter_hinted, MPI_STATUS_IGNORE);
      MTEST_CHECK(in == (low ? size / 2 + hrank : hrank), "intercommunicator: got %d", in);
    }
    MPI_Comm_free(&inter_hinted);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
  }
  for (int c = 0; c < NCOMM; c++)
    if (comms[c] != MPI_COMM_NULL) MPI_Comm_free(&comms[c]);
  return mtest_finalize();
}
