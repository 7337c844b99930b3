/* Every completion call (MPI_Wait, Waitall, Waitany, Waitsome, Test,
 * Testall, Testany, Testsome, MPI_Request_get_status) on arrays that mix
 * requests of handled communicators (MPIX_Comm_dup_nowildcard, a
 * dup_with_info with both assertions) with native ones (a plain
 * MPI_Comm_dup, MPI_Ibarrier on MPI_COMM_WORLD), MPI_REQUEST_NULL and an
 * inactive persistent request: each request completes exactly once, with its
 * own status and data; null and inactive entries give empty statuses and are
 * never returned as an index; calls on only-null arrays return
 * MPI_UNDEFINED; a receive whose message has not been sent yet is not
 * complete. Pairs (0,1), (2,3), ...; an odd last rank talks to
 * MPI_PROC_NULL. Fails unless mpix carries its
 * no-wildcard communicator (mtest_check_handled). */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

static int rank, size, partner;
static MPI_Comm hcomm, hcomm2, plain;

enum { V_WAIT, V_WAITALL, V_WAITANY, V_WAITSOME, V_TEST, V_TESTALL, V_TESTANY, V_TESTSOME, V_GETSTATUS, NVARIANTS };
static const char *vname[NVARIANTS] = {"Wait",    "Waitall", "Waitany",  "Waitsome",          "Test",
                                       "Testall", "Testany", "Testsome", "Request_get_status"};

/* The request array: what each entry is and what its completion must show. */
enum { K_RECV, K_SEND, K_NULL, K_BARRIER, K_INACTIVE };
typedef struct {
  int kind;
  int comm; /* which communicator (comm_of): an index, not an MPI_Comm, whose
               values are pointers in Open MPI */
  const char *what;
  int tag, count; /* ints */
} entry_t;

#define BIG 100000 /* ints: past every eager limit */
static const entry_t layout[] = {
    {K_RECV, 0, "recv nowildcard", 1, 1000},   {K_RECV, 2, "recv plain dup", 1, 1000},
    {K_NULL, 0, "MPI_REQUEST_NULL", 0, 0},     {K_BARRIER, 0, "Ibarrier", 0, 0},
    {K_SEND, 0, "send nowildcard", 1, 1000},   {K_SEND, 2, "send plain dup", 1, 1000},
    {K_RECV, 1, "recv info dup (large)", 2, BIG}, {K_SEND, 1, "send info dup (large)", 2, BIG},
    {K_INACTIVE, 0, "inactive persistent", 0, 0}, {K_SEND, 0, "issend nowildcard", 3, 0},
    {K_RECV, 0, "recv nowildcard zero", 3, 0},  {K_RECV, 2, "recv plain dup 2", 4, 5},
    {K_SEND, 2, "send plain dup 2", 4, 5},
};
#define NREQ ((int)(sizeof(layout) / sizeof(layout[0])))

static MPI_Comm comm_of(const entry_t *e) {
  return e->comm == 0 ? hcomm : e->comm == 1 ? hcomm2 : plain;
}
static int value(int sender, int variant, int i, int tag) { return sender * 1000000 + variant * 10000 + tag * 1000 + i; }

static int is_empty(const MPI_Status *st) {
  int n = -1;
  MPI_Get_count(st, MPI_INT, &n);
  return st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && n == 0;
}

static int *bufs[NREQ];
static MPI_Request inactive_req;

static void post(int variant, MPI_Request *reqs) {
  for (int i = 0; i < NREQ; i++) {
    const entry_t *e = &layout[i];
    switch (e->kind) {
      case K_RECV:
        for (int j = 0; j < e->count + 1; j++) bufs[i][j] = -1;
        MPI_Irecv(bufs[i], e->count + 1, MPI_INT, partner, e->tag, comm_of(e), &reqs[i]);
        break;
      case K_SEND:
        for (int j = 0; j < e->count; j++) bufs[i][j] = value(rank, variant, j, e->tag);
        if (e->count == 0) MPI_Issend(bufs[i], 0, MPI_INT, partner, e->tag, comm_of(e), &reqs[i]);
        else MPI_Isend(bufs[i], e->count, MPI_INT, partner, e->tag, comm_of(e), &reqs[i]);
        break;
      case K_NULL: reqs[i] = MPI_REQUEST_NULL; break;
      case K_BARRIER: MPI_Ibarrier(MPI_COMM_WORLD, &reqs[i]); break;
      default: reqs[i] = inactive_req; break;
    }
  }
}

/* Completes all with the variant; done[i] counts completions of entry i. */
static void complete(int variant, MPI_Request *reqs, MPI_Status *sts, int *done) {
  int flag, idx, outcount, indices[NREQ];
  MPI_Status tmp[NREQ];
  for (int i = 0; i < NREQ; i++) done[i] = 0;
  switch (variant) {
    case V_WAIT:
      for (int i = 0; i < NREQ; i++) {
        MPI_Wait(&reqs[i], &sts[i]);
        done[i]++;
      }
      break;
    case V_WAITALL:
      MPI_Waitall(NREQ, reqs, sts);
      for (int i = 0; i < NREQ; i++) done[i]++;
      break;
    case V_WAITANY:
      for (;;) {
        MPI_Status st;
        MPI_Waitany(NREQ, reqs, &idx, &st);
        if (idx == MPI_UNDEFINED) {
          MTEST_CHECK(is_empty(&st), "Waitany with nothing left: status not empty");
          break;
        }
        MTEST_CHECK(idx >= 0 && idx < NREQ && reqs[idx] == MPI_REQUEST_NULL, "Waitany index %d", idx);
        sts[idx] = st;
        done[idx]++;
      }
      break;
    case V_WAITSOME:
      for (;;) {
        MPI_Waitsome(NREQ, reqs, &outcount, indices, tmp);
        if (outcount == MPI_UNDEFINED) break;
        MTEST_CHECK(outcount > 0, "Waitsome returned %d", outcount);
        for (int k = 0; k < outcount; k++) {
          sts[indices[k]] = tmp[k];
          done[indices[k]]++;
        }
      }
      break;
    case V_TEST:
      for (int i = NREQ - 1; i >= 0; i--) {
        flag = 0;
        while (!flag) MPI_Test(&reqs[i], &flag, &sts[i]);
        done[i]++;
      }
      break;
    case V_TESTALL:
      flag = 0;
      while (!flag) MPI_Testall(NREQ, reqs, &flag, sts);
      for (int i = 0; i < NREQ; i++) done[i]++;
      break;
    case V_TESTANY:
      for (;;) {
        MPI_Status st;
        flag = 0;
        MPI_Testany(NREQ, reqs, &idx, &flag, &st);
        if (!flag) {
          MTEST_CHECK(idx == MPI_UNDEFINED, "Testany without completion: index %d", idx);
          continue;
        }
        if (idx == MPI_UNDEFINED) break;
        sts[idx] = st;
        done[idx]++;
      }
      break;
    case V_TESTSOME:
      for (;;) {
        MPI_Testsome(NREQ, reqs, &outcount, indices, tmp);
        if (outcount == MPI_UNDEFINED) break;
        for (int k = 0; k < outcount; k++) {
          sts[indices[k]] = tmp[k];
          done[indices[k]]++;
        }
      }
      break;
    default: /* MPI_Request_get_status until complete, then Wait frees it */
      for (int i = 0; i < NREQ; i++) {
        flag = 0;
        while (!flag) MPI_Request_get_status(reqs[i], &flag, &sts[i]);
        if (reqs[i] != MPI_REQUEST_NULL && i != 8) {
          MPI_Status again;
          MPI_Wait(&reqs[i], &again);
          if (layout[i].kind == K_RECV)
            MTEST_CHECK(again.MPI_SOURCE == sts[i].MPI_SOURCE && again.MPI_TAG == sts[i].MPI_TAG,
                        "Request_get_status and Wait disagree on %s", layout[i].what);
        }
        done[i]++;
      }
      break;
  }
}

static void check_variant(int variant) {
  MPI_Request reqs[NREQ];
  MPI_Status sts[NREQ];
  int done[NREQ];
  post(variant, reqs);
  complete(variant, reqs, sts, done);
  const int any_style = variant == V_WAITANY || variant == V_WAITSOME || variant == V_TESTANY || variant == V_TESTSOME;
  for (int i = 0; i < NREQ; i++) {
    const entry_t *e = &layout[i];
    const int active = e->kind != K_NULL && e->kind != K_INACTIVE;
    if (any_style) {
      MTEST_CHECK(done[i] == (active ? 1 : 0), "%s: %s completed %d times", vname[variant], e->what, done[i]);
    } else if (!active) {
      MTEST_CHECK(is_empty(&sts[i]), "%s: %s status not empty (source %d tag %d)", vname[variant], e->what,
                  sts[i].MPI_SOURCE, sts[i].MPI_TAG);
    }
    if (i == 8) MTEST_CHECK(reqs[i] == inactive_req, "%s: inactive persistent request changed", vname[variant]);
    else MTEST_CHECK(reqs[i] == MPI_REQUEST_NULL, "%s: %s not freed", vname[variant], e->what);
    if (e->kind != K_RECV || done[i] != 1) continue;
    int n = -1;
    MPI_Get_count(&sts[i], MPI_INT, &n);
    if (partner == MPI_PROC_NULL) {
      MTEST_CHECK(n == 0, "%s: %s from MPI_PROC_NULL count %d", vname[variant], e->what, n);
      continue;
    }
    MTEST_CHECK(sts[i].MPI_SOURCE == partner && sts[i].MPI_TAG == e->tag && n == e->count,
                "%s: %s: source %d tag %d count %d", vname[variant], e->what, sts[i].MPI_SOURCE, sts[i].MPI_TAG, n);
    int bad = -1;
    for (int j = 0; j < e->count && bad < 0; j++)
      if (bufs[i][j] != value(partner, variant, j, e->tag)) bad = j;
    MTEST_CHECK(bad < 0 && bufs[i][e->count] == -1, "%s: %s: element %d wrong", vname[variant], e->what, bad);
  }
}

/* Calls on arrays of only null (and inactive) requests, and on a receive
 * whose message is held back until after the calls. */
static void check_nothing_to_do(void) {
  MPI_Request reqs[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Status sts[3], st;
  int idx = 0, flag = 0, outcount = 0, indices[3];
  reqs[1] = inactive_req;
  MPI_Waitall(3, reqs, sts);
  for (int i = 0; i < 3; i++) MTEST_CHECK(is_empty(&sts[i]), "Waitall on null/inactive: status %d not empty", i);
  MPI_Waitall(0, NULL, MPI_STATUSES_IGNORE);
  MPI_Waitany(3, reqs, &idx, &st);
  MTEST_CHECK(idx == MPI_UNDEFINED && is_empty(&st), "Waitany on null/inactive: index %d", idx);
  MPI_Testany(3, reqs, &idx, &flag, &st);
  MTEST_CHECK(flag && idx == MPI_UNDEFINED && is_empty(&st), "Testany on null/inactive: flag %d index %d", flag, idx);
  MPI_Waitsome(3, reqs, &outcount, indices, sts);
  MTEST_CHECK(outcount == MPI_UNDEFINED, "Waitsome on null/inactive: outcount %d", outcount);
  MPI_Testsome(3, reqs, &outcount, indices, sts);
  MTEST_CHECK(outcount == MPI_UNDEFINED, "Testsome on null/inactive: outcount %d", outcount);
  flag = 0;
  MPI_Testall(3, reqs, &flag, sts);
  MTEST_CHECK(flag, "Testall on null/inactive: flag 0");
  flag = 0;
  MPI_Test(&reqs[0], &flag, &st);
  MTEST_CHECK(flag && is_empty(&st), "Test on MPI_REQUEST_NULL");
  flag = 0;
  MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st);
  MTEST_CHECK(flag && is_empty(&st), "Request_get_status on MPI_REQUEST_NULL");

  /* Not complete until the partner sends (after the barrier). */
  if (partner == MPI_PROC_NULL) {
    MPI_Barrier(MPI_COMM_WORLD);
    return;
  }
  /* Separate buffers: the two receives complete on different threads
   * (mpix's progress thread, the MPI library's), so an overlap would be a
   * data race (TSan saw one). */
  int in[3] = {0, 0, 0}, out[2] = {rank, 42};
  MPI_Request r[2];
  MPI_Irecv(in, 2, MPI_INT, partner, 9, hcomm, &r[0]);
  MPI_Irecv(in + 2, 1, MPI_INT, partner, 9, plain, &r[1]);
  for (int rep = 0; rep < 3; rep++) {
    MPI_Test(&r[0], &flag, &st);
    MTEST_CHECK(!flag, "Test completed a receive without a message");
    MPI_Testall(2, r, &flag, MPI_STATUSES_IGNORE);
    MTEST_CHECK(!flag, "Testall completed receives without messages");
    MPI_Testany(2, r, &idx, &flag, &st);
    MTEST_CHECK(!flag && idx == MPI_UNDEFINED, "Testany: flag %d index %d without messages", flag, idx);
    MPI_Testsome(2, r, &outcount, indices, sts);
    MTEST_CHECK(outcount == 0, "Testsome: outcount %d without messages", outcount);
    MPI_Request_get_status(r[0], &flag, &st);
    MTEST_CHECK(!flag, "Request_get_status complete without a message");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Send(out, 2, MPI_INT, partner, 9, hcomm);
  MPI_Send(out + 1, 1, MPI_INT, partner, 9, plain);
  MPI_Waitall(2, r, sts);
  MTEST_CHECK(in[0] == partner && in[1] == 42 && in[2] == 42, "late messages: %d %d %d", in[0], in[1], in[2]);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  partner = (rank ^ 1) < size ? (rank ^ 1) : MPI_PROC_NULL;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_source", "true");
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &hcomm);
  mtest_check_handled(hcomm, "MPIX_Comm_dup_nowildcard");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &hcomm2);
  MPI_Info_free(&info);
  MPI_Comm_dup(MPI_COMM_WORLD, &plain);
  for (int i = 0; i < NREQ; i++) bufs[i] = malloc((layout[i].count + 1) * sizeof(int));
  int dummy;
  MPI_Recv_init(&dummy, 1, MPI_INT, partner, 99, hcomm, &inactive_req);

  for (int v = 0; v < NVARIANTS; v++) check_variant(v);
  check_nothing_to_do();

  MPI_Request_free(&inactive_req);
  for (int i = 0; i < NREQ; i++) free(bufs[i]);
  MPI_Comm_free(&hcomm);
  MPI_Comm_free(&hcomm2);
  MPI_Comm_free(&plain);
  return mtest_finalize();
}
