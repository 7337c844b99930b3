/* MPI_Cancel of receives on each communicator under test: an unmatched
 * receive is cancelled (MPI_Test_cancelled true) and takes no message, so a
 * later receive gets it; cancelling a completed receive changes nothing
 * (flag false, data there); a persistent receive can be cancelled and
 * started again; cancelled receives complete in Waitall/Waitany/Test beside
 * others; a cancelled receive in front of others of the same (source, tag)
 * does not disturb their order. Pairs (0,1), (2,3), ...; plain MPI. Fails
 * unless mpix carries its no-wildcard communicator (mtest_check_handled). */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

typedef mtest_comm_t tcomm_t;

static int rank, size;

static int cancelled(const MPI_Status *st) {
  int flag = -1;
  MPI_Test_cancelled(st, &flag);
  return flag;
}

static void check_cancel(const tcomm_t *tc) {
  MPI_Comm comm = tc->comm;
  const int partner = rank ^ 1;
  MPI_Status st;
  MPI_Request req;
  int buf[1000], out[1000];
  if (partner >= size) { /* odd rank count: the last rank only joins barriers */
    for (int i = 0; i < 5; i++) MPI_Barrier(comm);
    return;
  }
  const int recv_side = rank & 1;
  for (int i = 0; i < 1000; i++) out[i] = rank * 100000 + i;

  /* 1. Cancel an unmatched receive; the message sent afterwards goes to the
   *    next receive. Blocking Wait, then Test. */
  if (recv_side) {
    MPI_Irecv(buf, 1000, MPI_INT, partner, 5, comm, &req);
    MPI_Cancel(&req);
    MPI_Wait(&req, &st);
    MTEST_CHECK(cancelled(&st) == 1, "unmatched receive not cancelled on %s", tc->name);
    MTEST_CHECK(req == MPI_REQUEST_NULL, "cancelled request not freed by Wait");
    int flag = 0;
    MPI_Irecv(buf, 1000, MPI_INT, partner, 5, comm, &req);
    MPI_Cancel(&req);
    while (!flag) MPI_Test(&req, &flag, &st);
    MTEST_CHECK(cancelled(&st) == 1, "unmatched receive (Test) not cancelled on %s", tc->name);
  }
  MPI_Barrier(comm);
  if (!recv_side) {
    MPI_Send(out, 1000, MPI_INT, partner, 5, comm);
    MPI_Send(out, 10, MPI_INT, partner, 5, comm);
  } else {
    MPI_Recv(buf, 1000, MPI_INT, partner, 5, comm, &st);
    int n = -1;
    MPI_Get_count(&st, MPI_INT, &n);
    MTEST_CHECK(!cancelled(&st) && n == 1000 && buf[999] == partner * 100000 + 999,
                "message after cancelled receives lost on %s (count %d)", tc->name, n);
    MPI_Recv(buf, 1000, MPI_INT, partner, 5, comm, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    MTEST_CHECK(n == 10, "second message count %d on %s", n, tc->name);
  }

  /* 2. Cancel after completion: no effect. MPI_Request_get_status waits for
   *    completion without freeing the request. */
  if (recv_side) {
    int flag = 0;
    MPI_Irecv(buf, 1000, MPI_INT, partner, 6, comm, &req);
    MPI_Barrier(comm);
    while (!flag) MPI_Request_get_status(req, &flag, &st);
    MPI_Cancel(&req);
    MPI_Wait(&req, &st);
    MTEST_CHECK(cancelled(&st) == 0, "completed receive reported cancelled on %s", tc->name);
    MTEST_CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == 6 && buf[3] == partner * 100000 + 3,
                "completed receive lost its data on %s", tc->name);
  } else {
    MPI_Barrier(comm);
    MPI_Send(out, 4, MPI_INT, partner, 6, comm);
  }

  /* 3. Persistent receive: cancel, restart, receive. */
  if (recv_side) {
    MPI_Recv_init(buf, 1000, MPI_INT, partner, 7, comm, &req);
    MPI_Start(&req);
    MPI_Cancel(&req);
    MPI_Wait(&req, &st);
    MTEST_CHECK(cancelled(&st) == 1, "persistent receive not cancelled on %s", tc->name);
    MTEST_CHECK(req != MPI_REQUEST_NULL, "persistent request freed by Wait");
    MPI_Start(&req);
    MPI_Barrier(comm);
    MPI_Wait(&req, &st);
    MTEST_CHECK(!cancelled(&st) && st.MPI_TAG == 7 && buf[0] == partner * 100000,
                "restarted persistent receive on %s", tc->name);
    MPI_Request_free(&req);
  } else {
    MPI_Barrier(comm);
    MPI_Send(out, 1, MPI_INT, partner, 7, comm);
  }

  /* 4. Cancelled receives among others of the same key, in Waitall and
   *    Waitany: the uncancelled ones get the messages in order. */
  if (recv_side) {
    MPI_Request reqs[6];
    MPI_Status sts[6];
    int bufs[6][4];
    for (int i = 0; i < 6; i++) MPI_Irecv(bufs[i], 4, MPI_INT, partner, 8, comm, &reqs[i]);
    MPI_Cancel(&reqs[0]);
    MPI_Cancel(&reqs[3]);
    /* The cancelled ones complete without any message. */
    int idx = -1;
    MPI_Waitany(1, &reqs[0], &idx, &sts[0]);
    MTEST_CHECK(idx == 0 && cancelled(&sts[0]) == 1, "Waitany on a cancelled receive on %s", tc->name);
    MPI_Barrier(comm);
    MPI_Waitall(5, &reqs[1], &sts[1]);
    MTEST_CHECK(cancelled(&sts[3]) == 1, "cancel of a pending receive in Waitall lost on %s", tc->name);
    const int order[4] = {1, 2, 4, 5};
    for (int k = 0; k < 4; k++) {
      const int i = order[k];
      MTEST_CHECK(!cancelled(&sts[i]) && bufs[i][0] == k, "receive %d got message %d on %s", i, bufs[i][0],
                  tc->name);
    }
  } else {
    MPI_Barrier(comm);
    for (int k = 0; k < 4; k++) MPI_Send(&k, 1, MPI_INT, partner, 8, comm);
  }
  MPI_Barrier(comm);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  tcomm_t comms[MTEST_MAX_COMMS];
  const int n = mtest_get_comms(MTEST_COMM_WORLD | MTEST_COMM_NOWILDCARD | MTEST_COMM_ASSERT_BOTH | MTEST_COMM_ASSERT_TAG, comms);
  for (int i = 0; i < n; i++) check_cancel(&comms[i]);
  mtest_free_comms(comms, n);
  return mtest_finalize();
}
