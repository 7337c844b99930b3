/* MPI_ANY_SOURCE / MPI_ANY_TAG where the communicator asserts them away
 * raise MPIX_ERR_WILDCARD, for every receive and probe call: MPI_Recv,
 * Irecv, Recv_init, Sendrecv, Sendrecv_replace, Probe, Iprobe, Mprobe,
 * Improbe (and MPI-4 Isendrecv, Isendrecv_replace). With MPI_ERRORS_RETURN
 * the call returns the code and does nothing else: a message waiting for
 * the receive is still there afterwards, and the send half of a failed
 * Sendrecv is not sent. Communicators: MPIX_Comm_dup_nowildcard (both
 * wildcards are errors), dup_with_info with both, with only
 * mpi_assert_no_any_source (MPI_ANY_TAG still works) and only
 * mpi_assert_no_any_tag (MPI_ANY_SOURCE still works), MPI_Comm_dup of the
 * nowildcard one (keeps the assertions), and a plain dup given the
 * assertions by MPI_Comm_set_info (not handled, but wildcards are errors).
 * A user error handler is called once per error with the code the call
 * returns. mpix only. Pairs (0,1), (2,3), ...; an odd last rank only joins. */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

typedef struct {
  MPI_Comm comm;
  const char *name;
  int no_source, no_tag; /* asserted */
} tcomm_t;

static int rank, size, partner;

/* The nonblocking calls first: should one wrongly succeed, the blocking
 * ones are skipped, as they could wait forever. */
enum { C_IPROBE, C_IMPROBE, C_IRECV, C_RECV_INIT, C_ISENDRECV, C_ISENDRECV_REPLACE, C_RECV, C_SENDRECV,
       C_SENDRECV_REPLACE, C_PROBE, C_MPROBE, NCALLS };
#define FIRST_BLOCKING C_RECV
static const char *call_name[NCALLS] = {"MPI_Iprobe",   "MPI_Improbe",  "MPI_Irecv",
                                        "MPI_Recv_init", "MPI_Isendrecv", "MPI_Isendrecv_replace",
                                        "MPI_Recv",     "MPI_Sendrecv", "MPI_Sendrecv_replace",
                                        "MPI_Probe",    "MPI_Mprobe"};

/* Calls c with (source, tag); a "BAD" message is what the send half of the
 * sendrecv calls would send (tag 4). Returns the call's code. Should a call
 * wrongly succeed, its request or message is released so that the test goes
 * on and reports what was consumed or sent (the buffers are static). */
static int buf[4], bad[4] = {666, 666, 666, 666};
static int call(int c, int source, int tag, MPI_Comm comm) {
  int flag = 0, rc;
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Message msg = MPI_MESSAGE_NULL;
  MPI_Status st;
  switch (c) {
    case C_RECV: rc = MPI_Recv(buf, 4, MPI_INT, source, tag, comm, &st); break;
    case C_IRECV: rc = MPI_Irecv(buf, 4, MPI_INT, source, tag, comm, &req); break;
    case C_RECV_INIT: rc = MPI_Recv_init(buf, 4, MPI_INT, source, tag, comm, &req); break;
    case C_SENDRECV: rc = MPI_Sendrecv(bad, 4, MPI_INT, partner, 4, buf, 4, MPI_INT, source, tag, comm, &st); break;
    case C_SENDRECV_REPLACE: rc = MPI_Sendrecv_replace(bad, 4, MPI_INT, partner, 4, source, tag, comm, &st); break;
    case C_PROBE: rc = MPI_Probe(source, tag, comm, &st); break;
    case C_IPROBE: rc = MPI_Iprobe(source, tag, comm, &flag, &st); break;
    case C_MPROBE: rc = MPI_Mprobe(source, tag, comm, &msg, &st); break;
    case C_IMPROBE: rc = MPI_Improbe(source, tag, comm, &flag, &msg, &st); break;
#ifdef MPIX_HAVE_MPI_ISENDRECV
    case C_ISENDRECV:
      rc = MPI_Isendrecv(bad, 4, MPI_INT, partner, 4, buf, 4, MPI_INT, source, tag, comm, &req);
      break;
    default: rc = MPI_Isendrecv_replace(bad, 4, MPI_INT, partner, 4, source, tag, comm, &req); break;
#else
    default: return MPI_SUCCESS; /* MPI-4, not in this MPI library: never called (main says so) */
#endif
  }
  if (rc == MPI_SUCCESS && req != MPI_REQUEST_NULL) {
    if (c == C_IRECV || c == C_RECV_INIT) {
      MPI_Request_free(&req);
    } else { /* MPICH cannot free these: give it a second, then leave it */
      const double t0 = MPI_Wtime();
      while (!flag && MPI_Wtime() - t0 < 1.0) MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    }
  }
  if (rc == MPI_SUCCESS && msg != MPI_MESSAGE_NULL && msg != MPI_MESSAGE_NO_PROC)
    MPI_Mrecv(buf, 4, MPI_INT, &msg, MPI_STATUS_IGNORE);
  return rc;
}

static int is_wildcard_error(int rc) { return rc != MPI_SUCCESS && mtest_class(rc) == MPIX_ERR_WILDCARD; }

static void check_comm(const tcomm_t *tc) {
  MPI_Comm comm = tc->comm;
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  if (partner == MPI_PROC_NULL) {
    MPI_Barrier(comm);
    return;
  }
  /* A message waits for us (tag 3) before the failing calls. */
  int m = rank * 10 + 1, got = -1;
  MPI_Status st;
  MPI_Send(&m, 1, MPI_INT, partner, 3, comm);
  MPI_Probe(partner, 3, comm, &st);

  const int patterns[3][2] = {{MPI_ANY_SOURCE, 3}, {-1, MPI_ANY_TAG}, {MPI_ANY_SOURCE, MPI_ANY_TAG}};
  for (int p = 0; p < 3; p++) {
    const int source = patterns[p][0] == -1 ? partner : patterns[p][0];
    const int tag = patterns[p][1];
    const int forbidden = (source == MPI_ANY_SOURCE && tc->no_source) || (tag == MPI_ANY_TAG && tc->no_tag);
    if (!forbidden) continue;
    for (int c = 0; c < NCALLS; c++) {
      if (c >= FIRST_BLOCKING && mtest_errors > 0) break;
#ifndef MPIX_HAVE_MPI_ISENDRECV
      if (c == C_ISENDRECV || c == C_ISENDRECV_REPLACE) continue;
#endif
      int rc = call(c, source, tag, comm);
      MTEST_CHECK(is_wildcard_error(rc), "%s(%s, %s) on %s: rc %d class %d, expected MPIX_ERR_WILDCARD (%d)",
                  call_name[c], source == MPI_ANY_SOURCE ? "MPI_ANY_SOURCE" : "rank",
                  tag == MPI_ANY_TAG ? "MPI_ANY_TAG" : "tag", tc->name, rc, mtest_class(rc), MPIX_ERR_WILDCARD);
    }
  }

  /* Allowed wildcards still work: the waiting message is found by them. */
  if (!tc->no_tag) {
    MPI_Probe(partner, MPI_ANY_TAG, comm, &st);
    MTEST_CHECK(st.MPI_TAG == 3, "Probe(rank, MPI_ANY_TAG) on %s: tag %d", tc->name, st.MPI_TAG);
  }
  if (!tc->no_source) {
    MPI_Probe(MPI_ANY_SOURCE, 3, comm, &st);
    MTEST_CHECK(st.MPI_SOURCE == partner, "Probe(MPI_ANY_SOURCE, 3) on %s: source %d", tc->name, st.MPI_SOURCE);
  }
  /* Nothing was consumed: the message is still there. */
  MPI_Recv(&got, 1, MPI_INT, partner, 3, comm, &st);
  MTEST_CHECK(got == partner * 10 + 1, "waiting message lost on %s: got %d", tc->name, got);
  /* Nothing was sent: the first tag-4 message is the one sent now. */
  m = rank * 10 + 2;
  MPI_Sendrecv(&m, 1, MPI_INT, partner, 4, &got, 1, MPI_INT, partner, 4, comm, &st);
  MTEST_CHECK(got == partner * 10 + 2, "a failed sendrecv sent its message on %s (got %d)", tc->name, got);
  int flag = 1;
  MPI_Barrier(comm);
  MPI_Iprobe(partner, 4, comm, &flag, &st);
  MTEST_CHECK(!flag, "a tag-4 message is left over on %s", tc->name);
}

static int handler_calls = 0, handler_code = MPI_SUCCESS;
static void on_error(MPI_Comm *comm, int *code, ...) {
  (void)comm;
  handler_calls++;
  handler_code = *code;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
#ifndef MPIX_HAVE_MPI_ISENDRECV
  mtest_not_checked("MPI_Isendrecv, MPI_Isendrecv_replace (MPI-4, not in this MPI library)");
#endif
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  partner = (rank ^ 1) < size ? (rank ^ 1) : MPI_PROC_NULL;

  tcomm_t comms[6];
  MPI_Info both, src, tag;
  MPI_Info_create(&both);
  MPI_Info_set(both, "mpi_assert_no_any_source", "true");
  MPI_Info_set(both, "mpi_assert_no_any_tag", "true");
  MPI_Info_create(&src);
  MPI_Info_set(src, "mpi_assert_no_any_source", "true");
  MPI_Info_create(&tag);
  MPI_Info_set(tag, "mpi_assert_no_any_tag", "true");
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &comms[0].comm);
  comms[0].name = "MPIX_Comm_dup_nowildcard";
  comms[0].no_source = comms[0].no_tag = 1;
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, both, &comms[1].comm);
  comms[1].name = "dup_with_info(no_any_source,no_any_tag)";
  comms[1].no_source = comms[1].no_tag = 1;
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, src, &comms[2].comm);
  comms[2].name = "dup_with_info(no_any_source)";
  comms[2].no_source = 1;
  comms[2].no_tag = 0;
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, tag, &comms[3].comm);
  comms[3].name = "dup_with_info(no_any_tag)";
  comms[3].no_source = 0;
  comms[3].no_tag = 1;
  MPI_Comm_dup(comms[0].comm, &comms[4].comm);
  comms[4].name = "MPI_Comm_dup(nowildcard)";
  comms[4].no_source = comms[4].no_tag = 1;
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[5].comm);
  MPI_Comm_set_info(comms[5].comm, both);
  comms[5].name = "MPI_Comm_set_info(plain dup)";
  comms[5].no_source = comms[5].no_tag = 1;
  MPI_Info_free(&both);
  MPI_Info_free(&src);
  MPI_Info_free(&tag);

  for (int i = 0; i < 6; i++) check_comm(&comms[i]);

  /* A user error handler: called once per failing call, with the code the
   * call returns. */
  MPI_Errhandler eh;
  MPI_Comm_create_errhandler(on_error, &eh);
  for (int i = 0; i < 6; i += 5) {
    MPI_Comm_set_errhandler(comms[i].comm, eh);
    for (int c = 0; c < NCALLS; c++) {
      if (c >= FIRST_BLOCKING && mtest_errors > 0) break;
#ifndef MPIX_HAVE_MPI_ISENDRECV
      if (c == C_ISENDRECV || c == C_ISENDRECV_REPLACE) continue;
#endif
      handler_calls = 0;
      handler_code = MPI_SUCCESS;
      const int source = c % 2 ? MPI_ANY_SOURCE : (partner == MPI_PROC_NULL ? 0 : partner);
      const int tag = c % 2 ? 5 : MPI_ANY_TAG;
      int rc = call(c, source, tag, comms[i].comm);
      MTEST_CHECK(is_wildcard_error(rc) && handler_calls == 1 && handler_code == rc,
                  "%s with a user handler on %s: rc class %d, %d handler calls, handler code %d vs rc %d",
                  call_name[c], comms[i].name, mtest_class(rc), handler_calls, handler_code, rc);
    }
  }
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(handler_code, text, &len);
  MTEST_CHECK(len > 0, "MPI_Error_string of the wildcard error is empty");

  for (int i = 0; i < 6; i++) MPI_Comm_free(&comms[i].comm);
  MPI_Errhandler_free(&eh);
  return mtest_finalize();
}
