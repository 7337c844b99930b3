/* Unordered region misuse raises MPIX_ERR_REGION through the
 * communicator's error handler: open or close on a communicator mpix does
 * not handle (MPI_COMM_WORLD by default, MPI_Comm_dup of it, MPI_Comm_split,
 * MPI_Comm_create, dup_with_info without the assertions, a plain dup given
 * the assertions by MPI_Comm_set_info), close without open, open while open
 * (the region stays open: one close succeeds, the next fails); MPI_COMM_NULL
 * gives MPI_ERR_COMM. Regions are per communicator (a duplicate made inside
 * a region starts without one). Wildcards inside a
 * region are MPIX_ERR_WILDCARD even where the communicator allows them
 * (a dup_with_info with only no_any_tag allows MPI_ANY_SOURCE; under
 * MPIX_INTERCEPT=all MPI_COMM_WORLD allows both), for every receive and
 * probe call, and work again after the close. A user error handler is called
 * once per error with the code returned. mpix only. */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

static int rank, size;

static int cls(int rc) { return rc == MPI_SUCCESS ? MPI_SUCCESS : mtest_class(rc); }

static void expect_region_error(MPI_Comm comm, const char *name) {
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rc = MPIX_Unordered_region_open(comm);
  MTEST_CHECK(cls(rc) == MPIX_ERR_REGION, "open on %s: class %d, expected MPIX_ERR_REGION", name, cls(rc));
  rc = MPIX_Unordered_region_close(comm);
  MTEST_CHECK(cls(rc) == MPIX_ERR_REGION, "close on %s: class %d, expected MPIX_ERR_REGION", name, cls(rc));
}

/* Every receive/probe call with a wildcard inside a region on comm (which
 * allows the wildcard outside): MPIX_ERR_WILDCARD. Nonblocking calls first;
 * after a wrong success the blocking ones are skipped. */
static int rbuf[4], sbuf[4] = {7, 7, 7, 7};
static void expect_wildcards_refused(MPI_Comm comm, const char *name, int source, int tag, int peer) {
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Message msg = MPI_MESSAGE_NULL;
  MPI_Status st;
  int flag = 0;
  const char *what[11] = {"Iprobe", "Improbe", "Irecv", "Recv_init", "Isendrecv", "Isendrecv_replace", "Recv",
                          "Sendrecv", "Sendrecv_replace", "Probe", "Mprobe"};
  for (int c = 0; c < 11; c++) {
    int rc;
    if (c >= 6 && mtest_errors > 0) break;
    switch (c) {
      case 0: rc = MPI_Iprobe(source, tag, comm, &flag, &st); break;
      case 1: rc = MPI_Improbe(source, tag, comm, &flag, &msg, &st); break;
      case 2: rc = MPI_Irecv(rbuf, 4, MPI_INT, source, tag, comm, &req); break;
      case 3: rc = MPI_Recv_init(rbuf, 4, MPI_INT, source, tag, comm, &req); break;
#ifdef MPIX_HAVE_MPI_ISENDRECV
      case 4: rc = MPI_Isendrecv(sbuf, 4, MPI_INT, peer, 1, rbuf, 4, MPI_INT, source, tag, comm, &req); break;
      case 5: rc = MPI_Isendrecv_replace(rbuf, 4, MPI_INT, peer, 1, source, tag, comm, &req); break;
#else
      case 4: case 5: continue; /* MPI-4, not in this MPI library (main says so) */
#endif
      case 6: rc = MPI_Recv(rbuf, 4, MPI_INT, source, tag, comm, &st); break;
      case 7: rc = MPI_Sendrecv(sbuf, 4, MPI_INT, peer, 1, rbuf, 4, MPI_INT, source, tag, comm, &st); break;
      case 8: rc = MPI_Sendrecv_replace(rbuf, 4, MPI_INT, peer, 1, source, tag, comm, &st); break;
      case 9: rc = MPI_Probe(source, tag, comm, &st); break;
      default: rc = MPI_Mprobe(source, tag, comm, &msg, &st); break;
    }
    MTEST_CHECK(cls(rc) == MPIX_ERR_WILDCARD, "MPI_%s(%s, %s) in a region on %s: class %d, expected MPIX_ERR_WILDCARD",
                what[c], source == MPI_ANY_SOURCE ? "MPI_ANY_SOURCE" : "rank",
                tag == MPI_ANY_TAG ? "MPI_ANY_TAG" : "tag", name, cls(rc));
    if (rc == MPI_SUCCESS && (c == 2 || c == 3)) MPI_Request_free(&req);
    req = MPI_REQUEST_NULL;
  }
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
  const int peer = (rank + 1) % size;
  int world_handled = 0;
  MPIX_Comm_is_handled(MPI_COMM_WORLD, &world_handled);

  /* Communicators mpix does not handle (unless MPIX_INTERCEPT=all). */
  if (!world_handled) {
    MPI_Comm c;
    MPI_Group g;
    MPI_Info info;
    expect_region_error(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    expect_region_error(c, "MPI_Comm_dup(MPI_COMM_WORLD)");
    MPI_Comm_free(&c);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &c);
    expect_region_error(c, "MPI_Comm_split");
    MPI_Comm_free(&c);
    MPI_Comm_group(MPI_COMM_WORLD, &g);
    MPI_Comm_create(MPI_COMM_WORLD, g, &c);
    expect_region_error(c, "MPI_Comm_create");
    MPI_Comm_free(&c);
    MPI_Group_free(&g);
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_exact_length", "true");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
    expect_region_error(c, "dup_with_info without the assertions");
    MPI_Comm_free(&c);
    MPI_Info_set(info, "mpi_assert_no_any_source", "true");
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_info(c, info);
    expect_region_error(c, "MPI_Comm_set_info(plain dup)");
    MPI_Comm_free(&c);
    MPI_Info_free(&info);
  }

  /* MPI_COMM_NULL: MPI_ERR_COMM, raised on MPI_COMM_SELF. */
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  int rc = MPIX_Unordered_region_open(MPI_COMM_NULL);
  MTEST_CHECK(cls(rc) == MPI_ERR_COMM, "open(MPI_COMM_NULL): class %d", cls(rc));
  rc = MPIX_Unordered_region_close(MPI_COMM_NULL);
  MTEST_CHECK(cls(rc) == MPI_ERR_COMM, "close(MPI_COMM_NULL): class %d", cls(rc));

  /* Misuse on a handled communicator; regions are per communicator. */
  MPI_Comm nw, nw2;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw2);
  MPI_Comm_set_errhandler(nw, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(nw2, MPI_ERRORS_RETURN);
  rc = MPIX_Unordered_region_close(nw);
  MTEST_CHECK(cls(rc) == MPIX_ERR_REGION, "close without open: class %d", cls(rc));
  rc = MPIX_Unordered_region_open(nw);
  MTEST_CHECK(rc == MPI_SUCCESS, "open: rc %d", rc);
  rc = MPIX_Unordered_region_open(nw);
  MTEST_CHECK(cls(rc) == MPIX_ERR_REGION, "open while open: class %d", cls(rc));
  rc = MPIX_Unordered_region_close(nw2);
  MTEST_CHECK(cls(rc) == MPIX_ERR_REGION, "close on a communicator whose sibling has a region: class %d", cls(rc));
  rc = MPIX_Unordered_region_open(nw2);
  MTEST_CHECK(rc == MPI_SUCCESS, "open on a second communicator: rc %d", rc);
  rc = MPIX_Unordered_region_close(nw);
  MTEST_CHECK(rc == MPI_SUCCESS, "close after a failed second open: rc %d", rc);
  rc = MPIX_Unordered_region_close(nw);
  MTEST_CHECK(cls(rc) == MPIX_ERR_REGION, "second close: class %d", cls(rc));
  rc = MPIX_Unordered_region_close(nw2);
  MTEST_CHECK(rc == MPI_SUCCESS, "close on the second communicator: rc %d", rc);
  /* A duplicate made while a region is open starts without one. */
  MPIX_Unordered_region_open(nw);
  MPI_Comm dup;
  MPI_Comm_dup(nw, &dup);
  rc = MPIX_Unordered_region_close(dup);
  MTEST_CHECK(cls(rc) == MPIX_ERR_REGION, "close on a dup made inside a region: class %d", cls(rc));
  rc = MPIX_Unordered_region_close(nw);
  MTEST_CHECK(rc == MPI_SUCCESS, "close after the dup: rc %d", rc);
  MPI_Comm_free(&dup);
  /* Region state is local: only even ranks open one, traffic still flows. */
  if (rank % 2 == 0) MPIX_Unordered_region_open(nw);
  int x = rank, y = -1;
  MPI_Sendrecv(&x, 1, MPI_INT, peer, 2, &y, 1, MPI_INT, (rank + size - 1) % size, 2, nw, MPI_STATUS_IGNORE);
  MTEST_CHECK(y == (rank + size - 1) % size, "traffic with a region open on some ranks: got %d", y);
  if (rank % 2 == 0) MPIX_Unordered_region_close(nw);

  /* A user error handler sees each misuse once. */
  MPI_Errhandler eh;
  MPI_Comm_create_errhandler(on_error, &eh);
  MPI_Comm_set_errhandler(nw, eh);
  handler_calls = 0;
  rc = MPIX_Unordered_region_close(nw);
  MTEST_CHECK(cls(rc) == MPIX_ERR_REGION && handler_calls == 1 && handler_code == rc,
              "close without open, user handler: class %d, %d calls, code %d vs %d", cls(rc), handler_calls,
              handler_code, rc);
  MPIX_Unordered_region_open(nw);
  handler_calls = 0;
  rc = MPIX_Unordered_region_open(nw);
  MTEST_CHECK(cls(rc) == MPIX_ERR_REGION && handler_calls == 1 && handler_code == rc,
              "open while open, user handler: class %d, %d calls", cls(rc), handler_calls);
  /* ... and a wildcard inside the region. */
  handler_calls = 0;
  rc = MPI_Iprobe(peer, MPI_ANY_TAG, nw, &x, MPI_STATUS_IGNORE);
  MTEST_CHECK(cls(rc) == MPIX_ERR_WILDCARD && handler_calls == 1 && handler_code == rc,
              "wildcard in a region, user handler: class %d, %d calls", cls(rc), handler_calls);
  MPIX_Unordered_region_close(nw);

  /* Wildcards that the communicator allows are refused inside a region. */
  MPI_Info info;
  MPI_Comm anysrc;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &anysrc);
  MPI_Info_free(&info);
  MPI_Comm_set_errhandler(anysrc, MPI_ERRORS_RETURN);
  MPIX_Unordered_region_open(anysrc);
  expect_wildcards_refused(anysrc, "dup_with_info(no_any_tag)", MPI_ANY_SOURCE, 3, peer);
  MPIX_Unordered_region_close(anysrc);
  if (world_handled) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPIX_Unordered_region_open(MPI_COMM_WORLD);
    expect_wildcards_refused(MPI_COMM_WORLD, "MPI_COMM_WORLD (MPIX_INTERCEPT=all)", MPI_ANY_SOURCE, 3, peer);
    expect_wildcards_refused(MPI_COMM_WORLD, "MPI_COMM_WORLD (MPIX_INTERCEPT=all)", peer, MPI_ANY_TAG, peer);
    expect_wildcards_refused(MPI_COMM_WORLD, "MPI_COMM_WORLD (MPIX_INTERCEPT=all)", MPI_ANY_SOURCE, MPI_ANY_TAG,
                             peer);
    MPIX_Unordered_region_close(MPI_COMM_WORLD);
  }
  /* Nothing was sent by the refused sendrecv calls, and after the close the
   * wildcards work again: the first tag-1 message is this one. */
  MPI_Status st;
  x = 1000 + rank;
  MPI_Send(&x, 1, MPI_INT, peer, 1, anysrc);
  MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, 1, anysrc, &st);
  MTEST_CHECK(y == 1000 + (rank + size - 1) % size && st.MPI_SOURCE == (rank + size - 1) % size,
              "after the close: MPI_ANY_SOURCE got %d from %d", y, st.MPI_SOURCE);
  if (world_handled) {
    MPI_Send(&x, 1, MPI_INT, peer, 1, MPI_COMM_WORLD);
    MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    MTEST_CHECK(y == 1000 + (rank + size - 1) % size && st.MPI_TAG == 1,
                "after the close on MPI_COMM_WORLD: got %d tag %d", y, st.MPI_TAG);
  }

  MPI_Errhandler_free(&eh);
  MPI_Comm_free(&anysrc);
  MPI_Comm_free(&nw);
  MPI_Comm_free(&nw2);
  return mtest_finalize();
}
