/* MPI_ERR_TRUNCATE on each communicator under test (MPI_ERRORS_RETURN):
 * MPI_Recv, Irecv+Wait, Sendrecv, Mrecv, Imrecv, persistent receives; in
 * Waitall, Testall, Waitsome and Testsome as MPI_ERR_IN_STATUS with the
 * per-status MPI_ERROR of the truncated receive MPI_ERR_TRUNCATE and of the
 * others MPI_SUCCESS (or MPI_ERR_PENDING from Testall); in Waitany as the call's code. Eager and rendezvous
 * sizes, a message into a zero-size buffer. The truncated message is
 * consumed: the next message of the same (source, tag) goes to the next
 * receive; the sends all succeed. One run with a user error handler counts
 * its calls. Rank 1 sends to rank 0; other ranks only join. Plain MPI: also
 * runs without mpix. */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

typedef struct {
  MPI_Comm comm;
  const char *name;
} tcomm_t;

static int rank, size;
static int handler_calls = 0, handler_class = MPI_SUCCESS;

static void on_error(MPI_Comm *comm, int *code, ...) {
  (void)comm;
  handler_calls++;
  handler_class = mtest_class(*code);
}

static int is_truncate(int code) { return code != MPI_SUCCESS && mtest_class(code) == MPI_ERR_TRUNCATE; }

#define BIG 200000 /* bytes: past every eager limit */
/* What rank 1 sends, in order, all with tag 1 unless said. */
static const int plan[] = {100, 50, BIG, 10, 1, 64, BIG, 8, 100, 4, 100, 4, 30, 30, 30, 30, 2, 1000};
#define NPLAN ((int)(sizeof(plan) / sizeof(plan[0])))

static int byte_of(int msg, int i) { return (msg * 31 + i) & 0xff; }
static int intact(const unsigned char *buf, int msg, int n) {
  for (int i = 0; i < n; i++)
    if (buf[i] != byte_of(msg, i)) return 0;
  return 1;
}

/* A truncated receive may write its buffer only: the receive buffer is
 * followed by SLACK bytes of a pattern, checked after each truncated
 * rendezvous receive (the whole message written would stay inside the
 * allocation). Open MPI 4.1 writes the whole message of a truncated
 * rendezvous over shared memory (its single-copy get, CMA), natively: on
 * communicators Open MPI carries that is said ("not checked"), on those
 * mpix carries it fails. */
#define SLACK BIG
static void guard_fill(unsigned char *buf, int from) { memset(buf + from, 0xa5, BIG + SLACK - from); }
static void guard_check(const unsigned char *buf, int from, const char *what, const tcomm_t *tc) {
  int bad = -1;
  for (int i = from; i < BIG + SLACK && bad < 0; i++)
    if (buf[i] != 0xa5) bad = i;
  if (bad < 0) return;
  int handled = 0;
  MPIX_Comm_is_handled(tc->comm, &handled);
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
  if (!handled) {
    static int said = 0;
    if (!said++)
      mtest_printf("not checked: that a truncated rendezvous receive where Open MPI carries it writes only its buffer "
             "(Open MPI 4.1 writes the whole message over vader's single-copy get)\n");
    return;
  }
#endif
  MTEST_CHECK(0, "%s on %s wrote past its receive buffer (byte %d of the buffer, %d after its end)", what, tc->name,
              bad, bad - from);
}

static void check_truncation(const tcomm_t *tc) {
  MPI_Comm comm = tc->comm;
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  if (rank == 1) {
    MPI_Barrier(comm);
    for (int m = 0; m < NPLAN; m++) {
      unsigned char *out = malloc(plan[m]);
      for (int i = 0; i < plan[m]; i++) out[i] = (unsigned char)byte_of(m, i);
      int rc = MPI_Send(out, plan[m], MPI_BYTE, 0, 1, comm);
      MTEST_CHECK(rc == MPI_SUCCESS, "send %d of a truncated pair failed on %s", m, tc->name);
      free(out);
    }
    /* Sendrecv: the peer's receive part truncates */
    char c[8] = {0};
    int rc = MPI_Sendrecv(c, 8, MPI_CHAR, 0, 2, c, 8, MPI_CHAR, 0, 2, comm, MPI_STATUS_IGNORE);
    MTEST_CHECK(rc == MPI_SUCCESS, "Sendrecv of the sender side failed on %s", tc->name);
    MPI_Barrier(comm);
    return;
  }
  if (rank != 0) {
    MPI_Barrier(comm);
    MPI_Barrier(comm);
    return;
  }
  unsigned char *buf = malloc(BIG + SLACK);
  MPI_Status st, sts[4];
  MPI_Request reqs[4];
  int rc, n, m = 0;
  MPI_Barrier(comm);

  /* 0,1: Recv truncated (100 into 60), the next one fits */
  rc = MPI_Recv(buf, 60, MPI_BYTE, 1, 1, comm, &st);
  MTEST_CHECK(is_truncate(rc), "Recv: rc class %d on %s", mtest_class(rc), tc->name);
  MTEST_CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 1, "Recv truncated: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
  rc = MPI_Recv(buf, 60, MPI_BYTE, 1, 1, comm, &st);
  MPI_Get_count(&st, MPI_BYTE, &n);
  MTEST_CHECK(rc == MPI_SUCCESS && n == 50 && intact(buf, 1, 50), "message after truncation on %s: rc %d count %d",
              tc->name, rc, n);
  m = 2;
  /* 2: rendezvous into a small buffer via Irecv+Wait; 3 follows */
  guard_fill(buf, 1000);
  MPI_Irecv(buf, 1000, MPI_BYTE, 1, 1, comm, &reqs[0]);
  rc = MPI_Wait(&reqs[0], &st);
  MTEST_CHECK(is_truncate(rc), "Irecv+Wait (rendezvous): rc class %d on %s", mtest_class(rc), tc->name);
  guard_check(buf, 1000, "Irecv+Wait (rendezvous, 200000 bytes into 1000)", tc);
  rc = MPI_Recv(buf, 10, MPI_BYTE, 1, 1, comm, &st);
  MTEST_CHECK(rc == MPI_SUCCESS && intact(buf, 3, 10), "message after rendezvous truncation on %s", tc->name);
  /* 4: one byte into a zero-size buffer */
  rc = MPI_Recv(NULL, 0, MPI_BYTE, 1, 1, comm, &st);
  MTEST_CHECK(is_truncate(rc), "1 byte into 0: rc class %d on %s", mtest_class(rc), tc->name);
  /* 5,6: Waitall with one fitting and one truncated (rendezvous) receive */
  guard_fill(buf, 164);
  MPI_Irecv(buf, 64, MPI_BYTE, 1, 1, comm, &reqs[0]);
  MPI_Irecv(buf + 64, 100, MPI_BYTE, 1, 1, comm, &reqs[1]);
  rc = MPI_Waitall(2, reqs, sts);
  guard_check(buf, 164, "Waitall (rendezvous, 200000 bytes into 100)", tc);
  MTEST_CHECK(rc != MPI_SUCCESS && mtest_class(rc) == MPI_ERR_IN_STATUS, "Waitall: rc class %d on %s",
              mtest_class(rc), tc->name);
  MTEST_CHECK(sts[0].MPI_ERROR == MPI_SUCCESS && is_truncate(sts[1].MPI_ERROR),
              "Waitall statuses on %s: MPI_ERROR %d, %d (class %d)", tc->name, sts[0].MPI_ERROR, sts[1].MPI_ERROR,
              mtest_class(sts[1].MPI_ERROR));
  MTEST_CHECK(intact(buf, 5, 64), "Waitall: untruncated message wrong on %s", tc->name);
  MTEST_CHECK(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL, "Waitall left requests");
  /* 7,8: Testall, truncated first */
  MPI_Irecv(buf, 4, MPI_BYTE, 1, 1, comm, &reqs[0]);
  MPI_Irecv(buf + 4, 100, MPI_BYTE, 1, 1, comm, &reqs[1]);
  int flag = 0;
  rc = MPI_SUCCESS;
  while (!flag && rc == MPI_SUCCESS) rc = MPI_Testall(2, reqs, &flag, sts);
  /* The other one is complete (MPI_SUCCESS) or still pending
   * (MPI_ERR_PENDING, then still active). */
  MTEST_CHECK(mtest_class(rc) == MPI_ERR_IN_STATUS && is_truncate(sts[0].MPI_ERROR) &&
                  (sts[1].MPI_ERROR == MPI_SUCCESS || sts[1].MPI_ERROR == MPI_ERR_PENDING),
              "Testall on %s: rc class %d, MPI_ERROR classes %d %d", tc->name, mtest_class(rc),
              mtest_class(sts[0].MPI_ERROR), mtest_class(sts[1].MPI_ERROR));
  if (sts[1].MPI_ERROR == MPI_ERR_PENDING) {
    rc = MPI_Wait(&reqs[1], &st);
    MTEST_CHECK(rc == MPI_SUCCESS, "Testall: the pending receive failed later on %s", tc->name);
  }
  MTEST_CHECK(intact(buf + 4, 8, 100), "Testall: untruncated message wrong on %s", tc->name);
  /* 9,10: Waitany returns the truncation as its code */
  MPI_Irecv(buf, 4, MPI_BYTE, 1, 1, comm, &reqs[0]);
  MPI_Irecv(buf + 4, 50, MPI_BYTE, 1, 1, comm, &reqs[1]);
  int truncs = 0, oks = 0;
  for (int k = 0; k < 2; k++) {
    int idx = -1;
    rc = MPI_Waitany(2, reqs, &idx, &st);
    if (idx == 1) truncs += is_truncate(rc);
    if (idx == 0) oks += rc == MPI_SUCCESS;
  }
  MTEST_CHECK(truncs == 1 && oks == 1, "Waitany on %s: %d truncations, %d successes", tc->name, truncs, oks);
  /* 11..15: Waitsome / Testsome, messages 12 and 14 truncated */
  for (int pass = 0; pass < 2; pass++) {
    const int first = pass == 0 ? 11 : 13;
    MPI_Irecv(buf, plan[first], MPI_BYTE, 1, 1, comm, &reqs[0]);
    MPI_Irecv(buf + 100, 20, MPI_BYTE, 1, 1, comm, &reqs[1]);
    int got = 0, errs_seen = 0;
    while (got < 2) {
      int outcount = 0, idx[2];
      rc = pass == 0 ? MPI_Waitsome(2, reqs, &outcount, idx, sts) : MPI_Testsome(2, reqs, &outcount, idx, sts);
      if (outcount == MPI_UNDEFINED) break;
      for (int k = 0; k < outcount; k++) {
        if (idx[k] == 1) {
          errs_seen += mtest_class(rc) == MPI_ERR_IN_STATUS && is_truncate(sts[k].MPI_ERROR);
        } else if (rc != MPI_SUCCESS) {
          MTEST_CHECK(sts[k].MPI_ERROR == MPI_SUCCESS, "%s: good receive has MPI_ERROR %d",
                      pass == 0 ? "Waitsome" : "Testsome", sts[k].MPI_ERROR);
        }
      }
      got += outcount;
    }
    MTEST_CHECK(errs_seen == 1, "%s on %s: truncation not reported in status", pass == 0 ? "Waitsome" : "Testsome",
                tc->name);
  }
  /* 15: Mprobe + Mrecv truncated (30 into 10) */
  MPI_Message msg;
  MPI_Mprobe(1, 1, comm, &msg, &st);
  MPI_Get_count(&st, MPI_BYTE, &n);
  MTEST_CHECK(n == 30, "Mprobe count %d", n);
  rc = MPI_Mrecv(buf, 10, MPI_BYTE, &msg, &st);
  MTEST_CHECK(is_truncate(rc), "Mrecv: rc class %d on %s", mtest_class(rc), tc->name);
  /* 16: Improbe + Imrecv truncated (2 into 1) */
  flag = 0;
  while (!flag) MPI_Improbe(1, 1, comm, &flag, &msg, &st);
  MPI_Imrecv(buf, 1, MPI_BYTE, &msg, &reqs[0]);
  rc = MPI_Wait(&reqs[0], &st);
  MTEST_CHECK(is_truncate(rc), "Imrecv: rc class %d on %s", mtest_class(rc), tc->name);
  /* 17: persistent receive truncated, with a user error handler */
  MPI_Errhandler eh;
  MPI_Comm_create_errhandler(on_error, &eh);
  MPI_Comm_set_errhandler(comm, eh);
  handler_calls = 0;
  MPI_Recv_init(buf, 999, MPI_BYTE, 1, 1, comm, &reqs[0]);
  MPI_Start(&reqs[0]);
  rc = MPI_Wait(&reqs[0], &st);
  MTEST_CHECK(is_truncate(rc), "persistent receive: rc class %d on %s", mtest_class(rc), tc->name);
  /* MPI raises it on the request's communicator; MPICH 4.0 raises errors of
   * completion calls on MPI_COMM_WORLD instead: checked where mpix carries
   * the traffic. */
  int handled = 0;
  MPIX_Comm_is_handled(comm, &handled);
  if (handled)
    MTEST_CHECK(handler_calls == 1 && handler_class == MPI_ERR_TRUNCATE,
                "persistent receive with a user handler on %s: %d handler calls, class %d", tc->name, handler_calls,
                handler_class);
  MPI_Request_free(&reqs[0]);
  /* Sendrecv whose receive part truncates (8 into 4) */
  handler_calls = 0;
  rc = MPI_Sendrecv(buf, 8, MPI_CHAR, 1, 2, buf + 8, 4, MPI_CHAR, 1, 2, comm, &st);
  MTEST_CHECK(is_truncate(rc) && handler_calls == 1, "Sendrecv on %s: rc class %d, %d handler calls", tc->name,
              mtest_class(rc), handler_calls);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Errhandler_free(&eh);
  (void)m;

  /* Nothing is left over. */
  MPI_Iprobe(1, 1, comm, &flag, &st);
  MTEST_CHECK(!flag, "a message is left over on %s", tc->name);
  MPI_Barrier(comm);
  free(buf);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  /* MPICH 4.0 raises errors of completion calls on MPI_COMM_WORLD. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  tcomm_t comms[3];
  MPI_Comm nw, info_dup, world;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_source", "true");
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &info_dup);
  MPI_Info_free(&info);
  MPI_Comm_dup(MPI_COMM_WORLD, &world); /* handled under MPIX_INTERCEPT=all */
  comms[0] = (tcomm_t){world, "MPI_Comm_dup(MPI_COMM_WORLD)"};
  comms[1] = (tcomm_t){nw, "MPIX_Comm_dup_nowildcard"};
  comms[2] = (tcomm_t){info_dup, "dup_with_info(no_any_source,no_any_tag)"};
  for (int i = 0; i < 3; i++) check_truncation(&comms[i]);
  for (int i = 0; i < 3; i++) MPI_Comm_free(&comms[i].comm);
  return mtest_finalize();
}
