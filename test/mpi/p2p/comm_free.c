/* MPI_Comm_free of handled communicators: right after traffic completed
 * (40 create/exchange/free cycles, which also reuse context ids), with
 * receives and sends still pending (MPI_Comm_free does not wait; the
 * operations complete normally afterwards, eager and rendezvous sizes), a
 * parent freed while its MPI_Comm_dup child is in use, and 16 communicators
 * live at once with interleaved traffic, freed in a shuffled order. Messages
 * never cross between communicators. Pairs (0,1), (2,3), ...; an odd last
 * rank talks to MPI_PROC_NULL. Fails unless mpix carries its
 * no-wildcard communicator (mtest_check_handled). */
#include <stdlib.h>
#include <unistd.h>

#include "mpix.h"
#include "mtest.h"

static int rank, size, partner;

static MPI_Comm make_handled(int i) {
  MPI_Comm c;
  if (i % 2 == 0) {
    MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &c);
    mtest_check_handled(c, "MPIX_Comm_dup_nowildcard");
  } else {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_source", "true");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
    MPI_Info_free(&info);
  }
  return c;
}

static void expect_from_partner(const char *what, const int *buf, int n, int tag, int salt, const MPI_Status *st) {
  if (partner == MPI_PROC_NULL) return;
  int count = -1, bad = -1;
  MPI_Get_count(st, MPI_INT, &count);
  for (int i = 0; i < n && bad < 0; i++)
    if (buf[i] != partner * 100000 + salt + i) bad = i;
  MTEST_CHECK(st->MPI_SOURCE == partner && st->MPI_TAG == tag && count == n && bad < 0,
              "%s: source %d tag %d count %d (expected %d), element %d wrong", what, st->MPI_SOURCE, st->MPI_TAG,
              count, n, bad);
}

static void fill(int *buf, int n, int salt) {
  for (int i = 0; i < n; i++) buf[i] = rank * 100000 + salt + i;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  partner = (rank ^ 1) < size ? (rank ^ 1) : MPI_PROC_NULL;
  enum { BIGN = 60000 }; /* ints: past every eager limit */
  int *out = malloc(BIGN * sizeof(int)), *in = malloc(BIGN * sizeof(int));
  MPI_Status st;

  /* 1. Create, exchange, free: 40 cycles. */
  for (int cycle = 0; cycle < 40; cycle++) {
    MPI_Comm c = make_handled(cycle);
    const int n = cycle % 10 == 9 ? BIGN : cycle % 7;
    fill(out, n, cycle);
    MPI_Sendrecv(out, n, MPI_INT, partner, cycle, in, n, MPI_INT, partner, cycle, c, &st);
    expect_from_partner("create/free cycle", in, n, cycle, cycle, &st);
    MPI_Comm_free(&c);
    MTEST_CHECK(c == MPI_COMM_NULL, "MPI_Comm_free did not set MPI_COMM_NULL");
  }

  /* 2. Free with operations pending: each side starts its receive and its
   *    send, frees the communicator, then waits. The senders of the second
   *    pair of rounds start late, so that the receives are surely pending. */
  for (int k = 0; k < 4; k++) {
    const int n = k % 2 == 0 ? 10 : BIGN;
    MPI_Comm c = make_handled(k);
    MPI_Request reqs[2];
    if (k >= 2 && rank % 2 == 0) usleep(20000);
    MPI_Irecv(in, n, MPI_INT, partner, 5, c, &reqs[0]);
    fill(out, n, 1000 * k);
    MPI_Isend(out, n, MPI_INT, partner, 5, c, &reqs[1]);
    MPI_Comm_free(&c);
    MPI_Wait(&reqs[0], &st);
    MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
    expect_from_partner("operations pending at MPI_Comm_free", in, n, 5, 1000 * k, &st);
  }

  /* 3. A parent freed while the child (MPI_Comm_dup of it) carries traffic. */
  {
    MPI_Comm parent = make_handled(0), child;
    MPI_Comm_dup(parent, &child);
    MPI_Comm_free(&parent);
    fill(out, 100, 7);
    MPI_Sendrecv(out, 100, MPI_INT, partner, 3, in, 100, MPI_INT, partner, 3, child, &st);
    expect_from_partner("child of a freed parent", in, 100, 3, 7, &st);
    MPI_Comm_free(&child);
  }

  /* 4. 16 live communicators; every one sends its index as tag 1, receives
   *    posted in reverse order, freed in a shuffled order. */
  {
    enum { NC = 16 };
    MPI_Comm cs[NC];
    MPI_Request reqs[2 * NC];
    int vals[NC], got[NC];
    for (int i = 0; i < NC; i++) cs[i] = make_handled(i);
    for (int i = NC - 1; i >= 0; i--) {
      got[i] = -1;
      MPI_Irecv(&got[i], 1, MPI_INT, partner, 1, cs[i], &reqs[i]);
    }
    for (int i = 0; i < NC; i++) {
      vals[i] = rank * 1000 + i;
      MPI_Isend(&vals[i], 1, MPI_INT, partner, 1, cs[i], &reqs[NC + i]);
    }
    MPI_Waitall(2 * NC, reqs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < NC && partner != MPI_PROC_NULL; i++)
      MTEST_CHECK(got[i] == partner * 1000 + i, "communicator %d got %d (crossed communicators?)", i, got[i]);
    static const int order[NC] = {5, 0, 15, 9, 2, 11, 7, 3, 14, 1, 8, 12, 4, 10, 6, 13};
    for (int i = 0; i < NC; i++) MPI_Comm_free(&cs[order[i]]);
  }

  /* 5. After all that, a fresh handled communicator still works. */
  MPI_Comm c = make_handled(0);
  fill(out, BIGN, 9);
  MPI_Sendrecv(out, BIGN, MPI_INT, partner, 9, in, BIGN, MPI_INT, partner, 9, c, &st);
  expect_from_partner("fresh communicator", in, BIGN, 9, 9, &st);
  MPI_Comm_free(&c);

  free(out);
  free(in);
  return mtest_finalize();
}
