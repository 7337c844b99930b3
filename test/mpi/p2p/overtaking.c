/* mpi_assert_allow_overtaking = "true" with both no-any assertions: the
 * messages of one (source, tag) may match their receives in any order, but
 * every message arrives exactly once, complete, with its own status (the
 * receive buffers are large enough for any of them). Receives posted before
 * and after the messages arrive, blocking and nonblocking, eager and
 * rendezvous sizes, probes returning some pending message. Without
 * allow_overtaking (or with it "false") the same traffic arrives in order.
 * Rank 0 receives from every other rank. Fails unless mpix carries its
 * no-wildcard communicator (mtest_check_handled). */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

static int rank, size;

#define N 32
#define CAP 70000
static int bytes_of(int seq) { return 4 * (seq + 1) + (seq % 5 == 4 ? 60000 : 0); } /* unique per seq */
static unsigned char pat(int src, int seq, int i) { return (unsigned char)(src * 11 + seq * 7 + i); }

/* Sends N messages with tag 1 to rank 0, half before and half after the
 * barrier that lets rank 0 start receiving. */
static void send_all(MPI_Comm comm) {
  MPI_Request reqs[N];
  unsigned char *bufs[N];
  for (int seq = 0; seq < N; seq++) {
    bufs[seq] = malloc(bytes_of(seq));
    memcpy(bufs[seq], &seq, sizeof(int));
    for (int i = 4; i < bytes_of(seq); i++) bufs[seq][i] = pat(rank, seq, i);
    if (seq == N / 2) MPI_Barrier(comm);
    MPI_Isend(bufs[seq], bytes_of(seq), MPI_BYTE, 0, 1, comm, &reqs[seq]);
  }
  MPI_Waitall(N, reqs, MPI_STATUSES_IGNORE);
  for (int seq = 0; seq < N; seq++) free(bufs[seq]);
}

static int check(const unsigned char *b, const MPI_Status *st, int s, const char *name) {
  int seq = -1, n = -1;
  memcpy(&seq, b, sizeof(int));
  MPI_Get_count(st, MPI_BYTE, &n);
  if (seq < 0 || seq >= N || n != bytes_of(seq) || st->MPI_SOURCE != s || st->MPI_TAG != 1) {
    MTEST_CHECK(0, "%s: from %d: seq %d count %d source %d tag %d", name, s, seq, n, st->MPI_SOURCE, st->MPI_TAG);
    return -1;
  }
  for (int i = 4; i < n; i++)
    if (b[i] != pat(s, seq, i)) {
      MTEST_CHECK(0, "%s: from %d seq %d: byte %d wrong", name, s, seq, i);
      return -1;
    }
  return seq;
}

static void run(MPI_Comm comm, const char *name, int ordered) {
  if (rank != 0) {
    send_all(comm);
    return;
  }
  enum { MAXS = 8 };
  MPI_Request reqs[MAXS][N / 2];
  MPI_Status st;
  unsigned char *rbufs[MAXS][N / 2], *buf = malloc(CAP);
  const int ns = size < MAXS ? size : MAXS;
  char got[MAXS][N];
  memset(got, 0, sizeof(got));
  int next[MAXS] = {0};
  /* First half: nonblocking receives posted before the barrier. */
  for (int s = 1; s < ns; s++)
    for (int k = 0; k < N / 2; k++) {
      rbufs[s][k] = malloc(CAP);
      MPI_Irecv(rbufs[s][k], CAP, MPI_BYTE, s, 1, comm, &reqs[s][k]);
    }
  MPI_Barrier(comm);
  for (int s = 1; s < ns; s++)
    for (int k = 0; k < N / 2; k++) {
      MPI_Wait(&reqs[s][k], &st);
      const int seq = check(rbufs[s][k], &st, s, name);
      if (seq < 0) continue;
      MTEST_CHECK(!got[s][seq], "%s: seq %d from %d twice", name, seq, s);
      got[s][seq] = 1;
      if (ordered) MTEST_CHECK(seq == next[s], "%s: receive %d from %d got seq %d (not in order)", name, k, s, seq);
      next[s]++;
      free(rbufs[s][k]);
    }
  /* Second half: probes and blocking receives, messages possibly already
   * there. A probe reports some pending message. */
  for (int s = 1; s < ns; s++)
    for (int k = N / 2; k < N; k++) {
      int n = -1, pending = 0;
      MPI_Probe(s, 1, comm, &st);
      MPI_Get_count(&st, MPI_BYTE, &n);
      for (int seq = 0; seq < N; seq++) pending |= !got[s][seq] && bytes_of(seq) == n;
      MTEST_CHECK(pending, "%s: probe reported %d bytes, no pending message has that size", name, n);
      if (ordered) MTEST_CHECK(n == bytes_of(next[s]), "%s: probe out of order", name);
      MPI_Recv(buf, CAP, MPI_BYTE, s, 1, comm, &st);
      const int seq = check(buf, &st, s, name);
      if (seq < 0) continue;
      MTEST_CHECK(!got[s][seq], "%s: seq %d from %d twice", name, seq, s);
      got[s][seq] = 1;
      if (ordered) MTEST_CHECK(seq == next[s], "%s: receive %d from %d got seq %d (not in order)", name, k, s, seq);
      next[s]++;
    }
  free(buf);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Info info;
  MPI_Comm over, over_false, nw;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_source", "true");
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPI_Info_set(info, "mpi_assert_allow_overtaking", "true");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &over);
  MPI_Info_set(info, "mpi_assert_allow_overtaking", "false");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &over_false);
  MPI_Info_free(&info);
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  mtest_check_handled(nw, "MPIX_Comm_dup_nowildcard");

  for (int rep = 0; rep < 3; rep++) run(over, "allow_overtaking", 0);
  run(over_false, "allow_overtaking=false", 1);
  run(nw, "MPIX_Comm_dup_nowildcard", 1);
  run(MPI_COMM_WORLD, "MPI_COMM_WORLD", 1);
  /* A dup of the overtaking communicator keeps the hint: a set again. */
  MPI_Comm d;
  MPI_Comm_dup(over, &d);
  run(d, "MPI_Comm_dup(allow_overtaking)", 0);
  MPI_Comm_free(&d);

  MPI_Comm_free(&over);
  MPI_Comm_free(&over_false);
  MPI_Comm_free(&nw);
  return mtest_finalize();
}
