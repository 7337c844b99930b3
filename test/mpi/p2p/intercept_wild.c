/* Full MPI matching with wildcards, meant for MPIX_INTERCEPT=all (where
 * mpix's engine carries MPI_COMM_WORLD and every other communicator): a
 * message goes to the earliest posted receive that matches it, whether that
 * receive names the source and tag or uses MPI_ANY_SOURCE / MPI_ANY_TAG;
 * a receive gets the earliest arrived message that matches it; probes and
 * Mprobe with wildcards see the earliest; messages of one source stay in
 * order through MPI_ANY_SOURCE receives; cancelled wildcard receives take
 * nothing. Runs on MPI_COMM_WORLD, on an MPI_Comm_split and on a
 * dup_with_info with only no_any_tag (MPI_ANY_SOURCE allowed) where the
 * pattern allows. Rank 0 receives, ranks 1 and 2 send (ranks 0 and 1 alone
 * when there are 2). Plain MPI: also runs without mpix. */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

static int rank, size;

typedef struct {
  MPI_Comm comm;
  const char *name;
  int any_tag_ok;
} tcomm_t;

static void expect(const tcomm_t *tc, const char *what, int got, const MPI_Status *st, int value, int source,
                   int tag) {
  MTEST_CHECK(got == value && st->MPI_SOURCE == source && st->MPI_TAG == tag,
              "%s on %s: got %d from %d tag %d, expected %d from %d tag %d", what, tc->name, got, st->MPI_SOURCE,
              st->MPI_TAG, value, source, tag);
}

static void send_int(const tcomm_t *tc, int v, int tag) { MPI_Send(&v, 1, MPI_INT, 0, tag, tc->comm); }

static void check_patterns(const tcomm_t *tc) {
  MPI_Comm comm = tc->comm;
  MPI_Request r[4];
  MPI_Status st[4];
  int v[4];
  const int anytag = tc->any_tag_ok;

  /* 1. Posted wildcard before specific: the first message goes to the
   *    wildcard receive, the second to the specific one. */
  if (rank == 0) {
    MPI_Irecv(&v[0], 1, MPI_INT, MPI_ANY_SOURCE, 1, comm, &r[0]);
    MPI_Irecv(&v[1], 1, MPI_INT, 1, 1, comm, &r[1]);
    if (anytag) MPI_Irecv(&v[2], 1, MPI_INT, 1, MPI_ANY_TAG, comm, &r[2]);
    MPI_Barrier(comm);
    MPI_Waitall(anytag ? 3 : 2, r, st);
    expect(tc, "ANY_SOURCE posted first", v[0], &st[0], 100, 1, 1);
    expect(tc, "specific posted second", v[1], &st[1], 101, 1, 1);
    if (anytag) expect(tc, "ANY_TAG posted third", v[2], &st[2], 102, 1, 1);
  } else {
    MPI_Barrier(comm);
    if (rank == 1)
      for (int i = 0; i < (anytag ? 3 : 2); i++) send_int(tc, 100 + i, 1);
  }

  /* 2. Specific before wildcard, and a message only the wildcard takes. */
  if (rank == 0) {
    MPI_Irecv(&v[0], 1, MPI_INT, 1, 2, comm, &r[0]);
    MPI_Irecv(&v[1], 1, MPI_INT, MPI_ANY_SOURCE, 2, comm, &r[1]);
    MPI_Barrier(comm);
    MPI_Waitall(2, r, st);
    expect(tc, "specific posted first", v[0], &st[0], 200, 1, 2);
    MTEST_CHECK((v[1] == 201 && st[1].MPI_SOURCE == 1) || (size > 2 && v[1] == 202 && st[1].MPI_SOURCE == 2),
                "ANY_SOURCE posted second on %s: got %d from %d", tc->name, v[1], st[1].MPI_SOURCE);
    /* What the wildcard did not take is still there for a specific one. */
    if (size > 2) {
      const int other = v[1] == 201 ? 2 : 1;
      MPI_Recv(&v[2], 1, MPI_INT, other, 2, comm, &st[2]);
      expect(tc, "left by ANY_SOURCE", v[2], &st[2], other == 1 ? 201 : 202, other, 2);
    }
  } else {
    MPI_Barrier(comm);
    if (rank == 1) {
      send_int(tc, 200, 2);
      send_int(tc, 201, 2);
    }
    if (rank == 2) send_int(tc, 202, 2);
  }

  /* 3. Interleaved: (1,3), (ANY,ANY), (1,4) posted; rank 1 sends tag 4, then
   *    tag 3, then tag 4: the first goes to the (ANY,ANY) receive posted
   *    before (1,4); tag 3 to (1,3); the last tag 4 to (1,4). */
  if (anytag) {
    if (rank == 0) {
      MPI_Irecv(&v[0], 1, MPI_INT, 1, 3, comm, &r[0]);
      MPI_Irecv(&v[1], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &r[1]);
      MPI_Irecv(&v[2], 1, MPI_INT, 1, 4, comm, &r[2]);
      MPI_Barrier(comm);
      MPI_Waitall(3, r, st);
      expect(tc, "(1,3)", v[0], &st[0], 301, 1, 3);
      expect(tc, "(ANY,ANY) between", v[1], &st[1], 300, 1, 4);
      expect(tc, "(1,4) posted last", v[2], &st[2], 302, 1, 4);
    } else {
      MPI_Barrier(comm);
      if (rank == 1) {
        send_int(tc, 300, 4);
        send_int(tc, 301, 3);
        send_int(tc, 302, 4);
      }
    }
  }

  /* 4. Unexpected messages: a wildcard receive gets the earliest that
   *    matches; probes with wildcards see it first. */
  if (rank == 1) {
    int out[3] = {400, 401, 402};
    MPI_Isend(&out[0], 1, MPI_INT, 0, 7, comm, &r[0]);
    MPI_Isend(&out[1], 1, MPI_INT, 0, 8, comm, &r[1]);
    MPI_Isend(&out[2], 1, MPI_INT, 0, 7, comm, &r[2]);
    MPI_Barrier(comm);
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
  } else if (rank == 0) {
    MPI_Barrier(comm);
    MPI_Status ps;
    MPI_Message msg;
    if (anytag) {
      MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &ps);
      MTEST_CHECK(ps.MPI_TAG == 7 && ps.MPI_SOURCE == 1, "Probe(ANY,ANY) on %s: tag %d", tc->name, ps.MPI_TAG);
      MPI_Recv(&v[0], 1, MPI_INT, 1, MPI_ANY_TAG, comm, &st[0]);
      expect(tc, "Recv(1, ANY_TAG) of unexpected", v[0], &st[0], 400, 1, 7);
      MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &msg, &ps);
      MPI_Mrecv(&v[1], 1, MPI_INT, &msg, &st[1]);
      expect(tc, "Mprobe(ANY,ANY)", v[1], &st[1], 401, 1, 8);
    } else {
      MPI_Recv(&v[0], 1, MPI_INT, MPI_ANY_SOURCE, 7, comm, &st[0]);
      expect(tc, "Recv(ANY_SOURCE, 7) of unexpected", v[0], &st[0], 400, 1, 7);
      MPI_Recv(&v[1], 1, MPI_INT, 1, 8, comm, &st[1]);
    }
    int flag = 0;
    while (!flag) MPI_Iprobe(MPI_ANY_SOURCE, 7, comm, &flag, &ps);
    MPI_Recv(&v[2], 1, MPI_INT, ps.MPI_SOURCE, ps.MPI_TAG, comm, &st[2]);
    expect(tc, "Iprobe(ANY_SOURCE, 7) then Recv", v[2], &st[2], 402, 1, 7);
    MPI_Iprobe(MPI_ANY_SOURCE, 7, comm, &flag, &ps);
    MTEST_CHECK(!flag, "Iprobe(ANY_SOURCE, 7) found a message on %s after all were received", tc->name);
  } else {
    MPI_Barrier(comm);
  }

  /* 5. Per-source order through ANY_SOURCE from several senders. */
  enum { M = 20 };
  if (rank == 0) {
    int next[3] = {0, 0, 0};
    const int senders = size > 2 ? 2 : 1;
    MPI_Barrier(comm);
    for (int i = 0; i < M * senders; i++) {
      MPI_Recv(&v[0], 1, MPI_INT, MPI_ANY_SOURCE, 9, comm, &st[0]);
      const int s = st[0].MPI_SOURCE;
      MTEST_CHECK(s >= 1 && s <= senders && v[0] == s * 1000 + next[s],
                  "ANY_SOURCE stream on %s: got %d from %d, expected %d", tc->name, v[0], s, s * 1000 + next[s]);
      if (s >= 1 && s <= senders) next[s]++;
    }
  } else {
    MPI_Barrier(comm);
    if (rank <= 2)
      for (int i = 0; i < M; i++) send_int(tc, rank * 1000 + i, 9);
  }

  /* 6. A cancelled wildcard receive takes nothing. */
  if (rank == 0) {
    MPI_Irecv(&v[0], 1, MPI_INT, MPI_ANY_SOURCE, 10, comm, &r[0]);
    MPI_Cancel(&r[0]);
    MPI_Wait(&r[0], &st[0]);
    int cancelled = 0;
    MPI_Test_cancelled(&st[0], &cancelled);
    MTEST_CHECK(cancelled, "ANY_SOURCE receive not cancelled on %s", tc->name);
    MPI_Barrier(comm);
    MPI_Recv(&v[1], 1, MPI_INT, MPI_ANY_SOURCE, 10, comm, &st[1]);
    expect(tc, "after a cancelled wildcard receive", v[1], &st[1], 600, 1, 10);
  } else {
    MPI_Barrier(comm);
    if (rank == 1) send_int(tc, 600, 10);
  }
  MPI_Barrier(comm);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  tcomm_t comms[3];
  MPI_Info info;
  MPI_Comm split, anysrc;
  MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &split);
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &anysrc);
  MPI_Info_free(&info);
  comms[0] = (tcomm_t){MPI_COMM_WORLD, "MPI_COMM_WORLD", 1};
  comms[1] = (tcomm_t){split, "MPI_Comm_split", 1};
  comms[2] = (tcomm_t){anysrc, "dup_with_info(no_any_tag)", 0};
  for (int i = 0; i < 3; i++) check_patterns(&comms[i]);
  MPI_Comm_free(&split);
  MPI_Comm_free(&anysrc);
  return mtest_finalize();
}
