/* Which communicators mpix handles, and the hints MPI_Comm_get_info reports:
 * handled are MPIX_Comm_dup_nowildcard, MPI_Comm_dup_with_info /
 * MPI_Comm_idup_with_info / MPI_Comm_split_type / MPI_Comm_create_from_group
 * with mpi_assert_no_any_source and/or mpi_assert_no_any_tag = "true", and
 * MPI_Comm_dup / MPI_Comm_idup of a handled communicator (hints kept); not
 * handled are MPI_COMM_WORLD, MPI_COMM_SELF, MPI_Comm_split, MPI_Comm_create,
 * a dup_with_info whose info lacks the assertions (or says "false"), and a
 * communicator given the assertions later by MPI_Comm_set_info (which
 * MPI_Comm_get_info reports all the same). Under MPIX_INTERCEPT=all every
 * communicator is handled and the reported hints are unchanged. Handled
 * communicators report their assertions (and mpi_assert_allow_overtaking)
 * with value "true". Every communicator carries a ring exchange. Also
 * MPIX_Comm_dup_nowildcard's own errors and its use on a split communicator.
 * mpix only. */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

static int rank, size, all;

/* 1: the key is "true"; 0: absent or "false"; -1: something else. */
static int hint(MPI_Comm comm, const char *key) {
  MPI_Info info;
  char value[MPI_MAX_INFO_VAL + 1];
  int flag = 0;
  MPI_Comm_get_info(comm, &info);
  MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
  MPI_Info_free(&info);
  if (!flag || strcmp(value, "false") == 0) return 0;
  return strcmp(value, "true") == 0 ? 1 : -1;
}

/* Checks handledness (want_handled, or 1 under MPIX_INTERCEPT=all), the two
 * reported assertions, and a ring exchange. */
static void expect(MPI_Comm comm, const char *name, int want_handled, int want_src, int want_tag) {
  int flag = -1, r, n;
  MPIX_Comm_is_handled(comm, &flag);
  MTEST_CHECK(flag == (want_handled || all), "%s: MPIX_Comm_is_handled %d, expected %d", name, flag,
              want_handled || all);
  int src = hint(comm, "mpi_assert_no_any_source"), tag = hint(comm, "mpi_assert_no_any_tag");
  MTEST_CHECK(src == want_src && tag == want_tag, "%s: MPI_Comm_get_info no_any_source %d no_any_tag %d, expected %d %d",
              name, src, tag, want_src, want_tag);
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &n);
  int out[3] = {r, 17, -r}, in[3] = {-1, -1, -1};
  MPI_Status st;
  MPI_Sendrecv(out, 3, MPI_INT, (r + 1) % n, 4, in, 3, MPI_INT, (r + n - 1) % n, 4, comm, &st);
  MTEST_CHECK(in[0] == (r + n - 1) % n && in[1] == 17 && in[2] == -in[0] && st.MPI_SOURCE == (r + n - 1) % n,
              "%s: ring exchange got %d %d %d", name, in[0], in[1], in[2]);
}

static MPI_Info make_info(const char *src, const char *tag, const char *overtake) {
  MPI_Info info;
  MPI_Info_create(&info);
  if (src) MPI_Info_set(info, "mpi_assert_no_any_source", src);
  if (tag) MPI_Info_set(info, "mpi_assert_no_any_tag", tag);
  if (overtake) MPI_Info_set(info, "mpi_assert_allow_overtaking", overtake);
  return info;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *v = getenv("MPIX_INTERCEPT");
  all = v && strcmp(v, "all") == 0;
  MPI_Info both = make_info("true", "true", NULL), src = make_info("true", NULL, NULL),
           tag = make_info(NULL, "true", NULL), no = make_info("false", "false", NULL),
           other = make_info(NULL, NULL, NULL);
  MPI_Info_set(other, "mpi_assert_exact_length", "false");
  MPI_Comm c, nw, d;
  MPI_Request req;

  expect(MPI_COMM_WORLD, "MPI_COMM_WORLD", 0, 0, 0);
  expect(MPI_COMM_SELF, "MPI_COMM_SELF", 0, 0, 0);

  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  expect(nw, "MPIX_Comm_dup_nowildcard", 1, 1, 1);
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, both, &c);
  expect(c, "dup_with_info(both)", 1, 1, 1);
  MPI_Comm_free(&c);
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, src, &c);
  expect(c, "dup_with_info(no_any_source)", 1, 1, 0);
  /* MPI_Comm_set_info adds an assertion to a handled communicator. */
  MPI_Comm_set_info(c, tag);
  expect(c, "dup_with_info(no_any_source) + set_info(no_any_tag)", 1, 1, 1);
  MPI_Comm_free(&c);
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, tag, &c);
  expect(c, "dup_with_info(no_any_tag)", 1, 0, 1);
  MPI_Comm_free(&c);
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, no, &c);
  expect(c, "dup_with_info(\"false\")", 0, 0, 0);
  MPI_Comm_free(&c);
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &c);
  expect(c, "dup_with_info(MPI_INFO_NULL)", 0, 0, 0);
  MPI_Comm_free(&c);

  /* Children of a handled communicator. */
  MPI_Comm_dup(nw, &c);
  expect(c, "MPI_Comm_dup(nowildcard)", 1, 1, 1);
  MPI_Comm_dup(c, &d);
  expect(d, "MPI_Comm_dup(MPI_Comm_dup(nowildcard))", 1, 1, 1);
  MPI_Comm_free(&d);
  MPI_Comm_free(&c);
  MPI_Comm_idup(nw, &c, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  expect(c, "MPI_Comm_idup(nowildcard)", 1, 1, 1);
  MPI_Comm_free(&c);
  MPI_Comm_dup_with_info(nw, other, &c);
  expect(c, "dup_with_info(nowildcard, info without assertions)", 0, 0, 0);
  MPI_Comm_free(&c);
  MPI_Comm_split(nw, 0, size - rank, &c);
  expect(c, "MPI_Comm_split(nowildcard)", 0, 0, 0);
  MPI_Comm_free(&c);
  MPI_Group g;
  MPI_Comm_group(nw, &g);
  MPI_Comm_create(nw, g, &c);
  expect(c, "MPI_Comm_create(nowildcard)", 0, 0, 0);
  MPI_Comm_free(&c);
  MPI_Group_free(&g);

  /* Other constructors with the assertions. */
#ifdef MPIX_HAVE_MPI_COMM_IDUP_WITH_INFO
  MPI_Comm_idup_with_info(MPI_COMM_WORLD, both, &c, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  expect(c, "MPI_Comm_idup_with_info(both)", 1, 1, 1);
  MPI_Comm_free(&c);
#else
  mtest_not_checked("MPI_Comm_idup_with_info (MPI-4, not in this MPI library)");
#endif
  MPI_Comm_idup(MPI_COMM_WORLD, &c, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  expect(c, "MPI_Comm_idup(MPI_COMM_WORLD)", 0, 0, 0);
  MPI_Comm_free(&c);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, both, &c);
  expect(c, "MPI_Comm_split_type(shared, both)", 1, 1, 1);
  MPI_Comm_free(&c);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, src, &c);
  expect(c, "MPI_Comm_split_type(shared, no_any_source)", 1, 1, 0);
  MPI_Comm_free(&c);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &c);
  expect(c, "MPI_Comm_split_type(shared, MPI_INFO_NULL)", 0, 0, 0);
  MPI_Comm_free(&c);

  /* MPI-4 sessions: MPI_Comm_create_from_group with and without them. */
#ifdef MPIX_HAVE_MPI_SESSIONS
  {
    MPI_Session session;
    MPI_Group wg;
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &session);
    MPI_Group_from_session_pset(session, "mpi://WORLD", &wg);
    MPI_Comm_create_from_group(wg, "mpix.test.p2p.comm_hints.1", both, MPI_ERRORS_ARE_FATAL, &c);
    expect(c, "MPI_Comm_create_from_group(both)", 1, 1, 1);
    MPI_Comm_free(&c);
    MPI_Comm_create_from_group(wg, "mpix.test.p2p.comm_hints.2", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &c);
    expect(c, "MPI_Comm_create_from_group(MPI_INFO_NULL)", 0, 0, 0);
    MPI_Comm_free(&c);
    MPI_Group_free(&wg);
    MPI_Session_finalize(&session);
  }
#else
  mtest_not_checked("MPI_Comm_create_from_group (MPI-4 sessions, not in this MPI library)");
#endif

  /* MPI_Comm_set_info on a plain communicator: reported, not switched. */
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_info(c, both);
  expect(c, "MPI_Comm_set_info(plain dup, both)", 0, 1, 1);
  MPI_Comm_free(&c);

  /* allow_overtaking is reported with the assertions. */
  MPI_Info ov = make_info("true", "true", "true");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, ov, &c);
  expect(c, "dup_with_info(both, allow_overtaking)", 1, 1, 1);
  MTEST_CHECK(hint(c, "mpi_assert_allow_overtaking") == 1, "allow_overtaking not reported as \"true\"");
  MPI_Comm_free(&c);
  MPI_Info_free(&ov);

  /* MPIX_Comm_dup_nowildcard on a sub-communicator. */
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &c);
  MPIX_Comm_dup_nowildcard(c, &d);
  expect(d, "MPIX_Comm_dup_nowildcard(MPI_Comm_split)", 1, 1, 1);
  int dr = -1, cr = -2;
  MPI_Comm_rank(d, &dr);
  MPI_Comm_rank(c, &cr);
  MTEST_CHECK(dr == cr, "rank %d in the dup, %d in its parent", dr, cr);
  MPI_Comm_free(&d);
  MPI_Comm_free(&c);

  /* MPIX_Comm_dup_nowildcard's errors. */
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rc = MPIX_Comm_dup_nowildcard(MPI_COMM_NULL, &c);
  MTEST_CHECK(rc != MPI_SUCCESS && mtest_class(rc) == MPI_ERR_COMM, "dup_nowildcard(MPI_COMM_NULL): class %d",
              rc == MPI_SUCCESS ? 0 : mtest_class(rc));
  rc = MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, NULL);
  MTEST_CHECK(rc != MPI_SUCCESS && mtest_class(rc) == MPI_ERR_ARG, "dup_nowildcard(newcomm NULL): class %d",
              rc == MPI_SUCCESS ? 0 : mtest_class(rc));
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

  MPI_Comm_free(&nw);
  MPI_Info_free(&both);
  MPI_Info_free(&src);
  MPI_Info_free(&tag);
  MPI_Info_free(&no);
  MPI_Info_free(&other);
  return mtest_finalize();
}
