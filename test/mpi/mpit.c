/* MPI_T through mpix (src/mpi/mpit.cc): mpix's control variables (the MPIX_*
 * settings) and performance variables are listed after the MPI library's,
 * read what the environment set and what the traffic did, and the library's
 * own variables still enumerate and read; bad indices and handles get
 * MPI_T's errors. Two ranks; run with MPIX_EAGER_LIMIT, MPIX_GPU=off and
 * a setting of the library's (MPICH's MPIR_CVAR_BCAST_SHORT_MSG_SIZE, Open
 * MPI's coll_tuned_bcast_algorithm_segmentsize) set (test/mpi/testlist). */
#include <stdlib.h>
#include <string.h>

#include "mtest.h"

enum { kEager = 10, kRendezvous = 3, kHeld = 5 };

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* Open MPI 4.1 keeps the variables of components it closed at MPI_Init in
 * its MPI_T list: their get_info fails with MPI_T_ERR_INVALID_INDEX, and
 * reading some of them crashes it, natively too (the control variable
 * opal_common_ucx_verbose; with pml ucx, a handle of the psm2 MTL's
 * performance variables). There the library's variables are compared with
 * what the library itself (PMPI_T_*) says, and only the one the test set is
 * read. */
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
#define READ_EVERY_LIBRARY_VAR 0
#else
#define READ_EVERY_LIBRARY_VAR 1
#endif

/* Every control variable by index: mpix's (MPIX_*) must all come after the
 * library's, and the library's must say what the library itself says
 * (index by index, holes included) and allocate and read as before. */
static void enumerate_cvars(int *first_mpix, int *n_mpix) {
  int num = 0, n_lib = 0, lib_num = 0;
  MTEST_CHECK(MPI_T_cvar_get_num(&num) == MPI_SUCCESS, "cvar_get_num");
  PMPI_T_cvar_get_num(&lib_num);
  *first_mpix = -1;
  *n_mpix = 0;
  if (!READ_EVERY_LIBRARY_VAR)
    mtest_not_checked("reading every MPI_T variable of Open MPI 4.1 (it crashes on some natively)");
  for (int i = 0; i < num; i++) {
    char name[256], desc[2048], lib_name[256];
    int name_len = sizeof name, desc_len = sizeof desc, lib_name_len = sizeof lib_name, verbosity, bind, scope;
    MPI_Datatype dt;
    MPI_T_enum et;
    int rc = MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &dt, &et, desc, &desc_len, &bind, &scope);
    if (i < lib_num) {
      /* The library's index: passed through, answered as the library does. */
      const int lib_rc = PMPI_T_cvar_get_info(i, lib_name, &lib_name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
      MTEST_CHECK(rc == lib_rc, "cvar_get_info(%d) = %d, the library says %d", i, rc, lib_rc);
      if (rc != MPI_SUCCESS) continue; /* a hole in the library's own list */
      MTEST_CHECK(strcmp(name, lib_name) == 0, "cvar %d is %s, the library says %s", i, name, lib_name);
    }
    MTEST_CHECK(rc == MPI_SUCCESS, "cvar_get_info(%d) = %d", i, rc);
    if (rc != MPI_SUCCESS) continue;
    if (starts_with(name, "MPIX_")) {
      if (*first_mpix < 0) *first_mpix = i;
      ++*n_mpix;
      MTEST_CHECK(dt == MPI_UNSIGNED_LONG_LONG || dt == MPI_CHAR, "%s: datatype", name);
      MTEST_CHECK(bind == MPI_T_BIND_NO_OBJECT && scope == MPI_T_SCOPE_READONLY, "%s: bind %d scope %d", name,
                  bind, scope);
      MTEST_CHECK(desc_len > 1, "%s has no description", name);
      continue;
    }
    MTEST_CHECK(*first_mpix < 0, "library cvar %s (%d) after mpix's from %d", name, i, *first_mpix);
    ++n_lib;
    if (bind != MPI_T_BIND_NO_OBJECT || !READ_EVERY_LIBRARY_VAR) continue;
    /* Pass-through: the library's own handle, read. */
    MPI_T_cvar_handle h;
    int count = 0;
    rc = MPI_T_cvar_handle_alloc(i, NULL, &h, &count);
    MTEST_CHECK(rc == MPI_SUCCESS, "library cvar %s: handle_alloc = %d", name, rc);
    if (rc != MPI_SUCCESS) continue;
    void *buf = calloc((size_t)(count > 0 ? count : 1), 16);
    rc = MPI_T_cvar_read(h, buf);
    MTEST_CHECK(rc == MPI_SUCCESS, "library cvar %s: read = %d", name, rc);
    free(buf);
    MTEST_CHECK(MPI_T_cvar_handle_free(&h) == MPI_SUCCESS && h == MPI_T_CVAR_HANDLE_NULL, "library cvar %s: free",
                name);
  }
  MTEST_CHECK(n_lib > 0, "no control variable of the MPI library enumerated");
  MTEST_CHECK(*n_mpix >= 20, "%d MPIX_* control variables", *n_mpix);
  MTEST_CHECK(*first_mpix == num - *n_mpix, "mpix's cvars from %d of %d, %d of them", *first_mpix, num, *n_mpix);
}

static int cvar_index(const char *name) {
  int index = -1;
  int rc = MPI_T_cvar_get_index(name, &index);
  MTEST_CHECK(rc == MPI_SUCCESS, "cvar_get_index(%s) = %d", name, rc);
  return rc == MPI_SUCCESS ? index : -1;
}

static void check_cvar_number(const char *name, unsigned long long expect, MPI_Datatype expect_type) {
  const int i = cvar_index(name);
  if (i < 0) return;
  MPI_Datatype dt = MPI_DATATYPE_NULL;
  int len = 0;
  MTEST_CHECK(MPI_T_cvar_get_info(i, NULL, &len, NULL, &dt, NULL, NULL, NULL, NULL, NULL) == MPI_SUCCESS, "%s info",
              name);
  MTEST_CHECK(len == (int)strlen(name) + 1, "%s: name length %d", name, len);
  MTEST_CHECK(dt == expect_type, "%s: datatype", name);
  MPI_T_cvar_handle h;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(i, NULL, &h, &count) != MPI_SUCCESS) {
    MTEST_CHECK(0, "%s: handle_alloc", name);
    return;
  }
  MTEST_CHECK(count == 1, "%s: count %d", name, count);
  unsigned long long v = 0;
  int iv = 0;
  MTEST_CHECK(MPI_T_cvar_read(h, expect_type == MPI_INT ? (void *)&iv : (void *)&v) == MPI_SUCCESS, "%s read",
              name);
  if (expect_type == MPI_INT) v = (unsigned long long)iv;
  MTEST_CHECK(v == expect, "%s reads %llu, the environment set %llu", name, v, expect);
  MPI_T_cvar_handle stale = h;
  MTEST_CHECK(MPI_T_cvar_handle_free(&h) == MPI_SUCCESS && h == MPI_T_CVAR_HANDLE_NULL, "%s free", name);
  if (expect_type == MPI_INT) return;
  /* mpix's freed handle is recognised, not handed to the library. */
  MTEST_CHECK(MPI_T_cvar_read(stale, &v) == MPI_T_ERR_INVALID_HANDLE, "%s: read of a freed handle", name);
  MTEST_CHECK(MPI_T_cvar_handle_free(&stale) == MPI_T_ERR_INVALID_HANDLE, "%s: double free", name);
}

static void check_cvar_word(const char *name, const char *expect) {
  const int i = cvar_index(name);
  if (i < 0) return;
  MPI_Datatype dt = MPI_DATATYPE_NULL;
  MPI_T_cvar_get_info(i, NULL, NULL, NULL, &dt, NULL, NULL, NULL, NULL, NULL);
  MTEST_CHECK(dt == MPI_CHAR, "%s: datatype", name);
  MPI_T_cvar_handle h;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(i, NULL, &h, &count) != MPI_SUCCESS) {
    MTEST_CHECK(0, "%s: handle_alloc", name);
    return;
  }
  char word[64] = "";
  MTEST_CHECK(count > (int)strlen(expect) && count <= (int)sizeof word, "%s: count %d", name, count);
  MTEST_CHECK(MPI_T_cvar_read(h, word) == MPI_SUCCESS, "%s read", name);
  MTEST_CHECK(strcmp(word, expect) == 0, "%s reads \"%s\", the environment set \"%s\"", name, word, expect);
  /* Settings are read at MPI_Init and never change. */
  MTEST_CHECK(MPI_T_cvar_write(h, "on") == MPI_T_ERR_CVAR_SET_NEVER, "%s: write", name);
  MPI_T_cvar_handle_free(&h);
}

static unsigned long long env_number(const char *name) {
  const char *v = getenv(name);
  MTEST_CHECK(v != NULL, "run with %s set (test/mpi/testlist)", name);
  return v != NULL ? strtoull(v, NULL, 10) : 0;
}

/* Every performance variable: mpix's after the library's, classes as
 * documented; the library's (MPICH 4.0 has none by default) allocate and
 * read. Returns mpix's first index. */
static int enumerate_pvars(MPI_T_pvar_session session) {
  int num = 0, first = -1, n_mpix = 0, lib_num = 0;
  MTEST_CHECK(MPI_T_pvar_get_num(&num) == MPI_SUCCESS, "pvar_get_num");
  PMPI_T_pvar_get_num(&lib_num);
  for (int i = 0; i < num; i++) {
    char name[256], lib_name[256];
    int name_len = sizeof name, lib_name_len = sizeof lib_name, verbosity, var_class, bind, readonly, continuous,
        atomic;
    MPI_Datatype dt;
    MPI_T_enum et;
    int rc = MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &dt, &et, NULL, NULL, &bind,
                                 &readonly, &continuous, &atomic);
    if (i < lib_num) { /* as for control variables: what the library says */
      const int lib_rc = PMPI_T_pvar_get_info(i, lib_name, &lib_name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                              NULL, NULL, NULL);
      MTEST_CHECK(rc == lib_rc, "pvar_get_info(%d) = %d, the library says %d", i, rc, lib_rc);
      if (rc != MPI_SUCCESS) continue;
      MTEST_CHECK(strcmp(name, lib_name) == 0, "pvar %d is %s, the library says %s", i, name, lib_name);
    }
    MTEST_CHECK(rc == MPI_SUCCESS, "pvar_get_info(%d) = %d", i, rc);
    if (rc != MPI_SUCCESS) continue;
    if (starts_with(name, "mpix_")) {
      if (first < 0) first = i;
      ++n_mpix;
      MTEST_CHECK(dt == MPI_UNSIGNED_LONG_LONG && bind == MPI_T_BIND_NO_OBJECT && continuous == 1, "%s", name);
      MTEST_CHECK(var_class == MPI_T_PVAR_CLASS_COUNTER || var_class == MPI_T_PVAR_CLASS_LEVEL ||
                      var_class == MPI_T_PVAR_CLASS_HIGHWATERMARK,
                  "%s: class %d", name, var_class);
      continue;
    }
    MTEST_CHECK(first < 0, "library pvar %s (%d) after mpix's", name, i);
    if (bind != MPI_T_BIND_NO_OBJECT || !READ_EVERY_LIBRARY_VAR) continue;
    MPI_T_pvar_handle h;
    int count = 0;
    rc = MPI_T_pvar_handle_alloc(session, i, NULL, &h, &count);
    MTEST_CHECK(rc == MPI_SUCCESS, "library pvar %s: handle_alloc = %d", name, rc);
    if (rc != MPI_SUCCESS) continue;
    if (!continuous) MPI_T_pvar_start(session, h);
    void *buf = calloc((size_t)(count > 0 ? count : 1), 16);
    MTEST_CHECK(MPI_T_pvar_read(session, h, buf) == MPI_SUCCESS, "library pvar %s: read", name);
    free(buf);
    MTEST_CHECK(MPI_T_pvar_handle_free(session, &h) == MPI_SUCCESS, "library pvar %s: free", name);
  }
  MTEST_CHECK(n_mpix >= 20, "%d mpix_* performance variables", n_mpix);
  MTEST_CHECK(first == num - n_mpix, "mpix's pvars from %d of %d", first, num);
  return first;
}

static MPI_T_pvar_handle pvar_handle(MPI_T_pvar_session session, const char *name, int var_class) {
  int index = -1, count = 0;
  MPI_T_pvar_handle h = MPI_T_PVAR_HANDLE_NULL;
  int rc = MPI_T_pvar_get_index(name, var_class, &index);
  MTEST_CHECK(rc == MPI_SUCCESS, "pvar_get_index(%s) = %d", name, rc);
  if (rc != MPI_SUCCESS) return h;
  rc = MPI_T_pvar_handle_alloc(session, index, NULL, &h, &count);
  MTEST_CHECK(rc == MPI_SUCCESS && count == 1, "%s: handle_alloc = %d, count %d", name, rc, count);
  return h;
}

static unsigned long long pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle h, const char *name) {
  unsigned long long v = ~0ULL;
  int rc = MPI_T_pvar_read(session, h, &v);
  MTEST_CHECK(rc == MPI_SUCCESS, "%s: read = %d", name, rc);
  return v;
}

int main(int argc, char **argv) {
  int provided = 0;
  MTEST_CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread");
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) mtest_printf("skipped: needs 2 ranks\n");
    MPI_Finalize();
    return 0;
  }

  /* ---- control variables ---- */
  int first_cvar = -1, n_cvars = 0, index = -1;
  enumerate_cvars(&first_cvar, &n_cvars);
  const unsigned long long eager_limit = env_number("MPIX_EAGER_LIMIT");
  check_cvar_number("MPIX_EAGER_LIMIT", eager_limit, MPI_UNSIGNED_LONG_LONG);
  check_cvar_word("MPIX_GPU", getenv("MPIX_GPU") != NULL ? getenv("MPIX_GPU") : "(MPIX_GPU unset)");
  if (getenv("MPIX_TRANSPORT") != NULL) check_cvar_word("MPIX_TRANSPORT", getenv("MPIX_TRANSPORT"));
  /* Pass-through by name: the library's own setting, as its environment set
   * it. Each library names its settings its own way; the testlist sets one
   * of each, and the library must know one of them. */
  static const char *const lib_cvars[][2] = {
      {"MPIR_CVAR_BCAST_SHORT_MSG_SIZE", "MPIR_CVAR_BCAST_SHORT_MSG_SIZE"},                     /* MPICH */
      {"coll_tuned_bcast_algorithm_segmentsize", "OMPI_MCA_coll_tuned_bcast_algorithm_segmentsize"}, /* Open MPI */
  };
  int lib_cvar = -1;
  for (int k = 0; k < (int)(sizeof lib_cvars / sizeof lib_cvars[0]) && lib_cvar < 0; k++)
    if (MPI_T_cvar_get_index(lib_cvars[k][0], &index) == MPI_SUCCESS) lib_cvar = k;
  MTEST_CHECK(lib_cvar >= 0, "none of the library control variables the test knows is listed");
  if (lib_cvar >= 0) check_cvar_number(lib_cvars[lib_cvar][0], env_number(lib_cvars[lib_cvar][1]), MPI_INT);

  int num = 0;
  MPI_T_cvar_get_num(&num);
  MPI_T_cvar_handle ch;
  int count = 0;
  MTEST_CHECK(MPI_T_cvar_get_info(num, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
                  MPI_T_ERR_INVALID_INDEX,
              "cvar_get_info(num)");
  MTEST_CHECK(MPI_T_cvar_get_info(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
                  MPI_T_ERR_INVALID_INDEX,
              "cvar_get_info(-1)");
  MTEST_CHECK(MPI_T_cvar_handle_alloc(num, NULL, &ch, &count) == MPI_T_ERR_INVALID_INDEX, "cvar_handle_alloc(num)");
  MTEST_CHECK(MPI_T_cvar_get_index("MPIX_NO_SUCH_SETTING", &index) == MPI_T_ERR_INVALID_NAME, "unknown cvar name");
  MTEST_CHECK(MPI_T_cvar_read(MPI_T_CVAR_HANDLE_NULL, &index) == MPI_T_ERR_INVALID_HANDLE, "cvar_read(NULL)");

  /* ---- performance variables ---- */
  MPI_T_pvar_session session, other;
  MTEST_CHECK(MPI_T_pvar_session_create(&session) == MPI_SUCCESS, "session_create");
  MTEST_CHECK(MPI_T_pvar_session_create(&other) == MPI_SUCCESS, "session_create");
  enumerate_pvars(session);
  MPI_T_pvar_handle matches = pvar_handle(session, "mpix_matches", MPI_T_PVAR_CLASS_COUNTER);
  MPI_T_pvar_handle eager = pvar_handle(session, "mpix_eager_sends", MPI_T_PVAR_CLASS_COUNTER);
  MPI_T_pvar_handle rndv = pvar_handle(session, "mpix_rendezvous_sends", MPI_T_PVAR_CLASS_COUNTER);
  MPI_T_pvar_handle arrivals = pvar_handle(session, "mpix_arrivals", MPI_T_PVAR_CLASS_COUNTER);
  MPI_T_pvar_handle depth = pvar_handle(session, "mpix_unexpected_depth", MPI_T_PVAR_CLASS_LEVEL);
  MPI_T_pvar_handle depth_max = pvar_handle(session, "mpix_unexpected_depth_max", MPI_T_PVAR_CLASS_HIGHWATERMARK);
  MPI_T_pvar_handle kept_inline = pvar_handle(session, "mpix_unexpected_inline", MPI_T_PVAR_CLASS_COUNTER);
  int pindex = -1;
  MTEST_CHECK(MPI_T_pvar_get_index("mpix_matches", MPI_T_PVAR_CLASS_LEVEL, &pindex) == MPI_T_ERR_INVALID_NAME,
              "pvar_get_index with the wrong class");

  MPI_Comm comm;
  MTEST_CHECK(MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &comm) == MPI_SUCCESS, "dup_nowildcard");
  mtest_check_handled(comm, "the no-wildcard duplicate");
  /* Counters count from here. */
  MTEST_CHECK(MPI_T_pvar_reset(session, matches) == MPI_SUCCESS, "reset of a counter");
  MTEST_CHECK(MPI_T_pvar_reset(session, MPI_T_PVAR_ALL_HANDLES) == MPI_SUCCESS, "reset of all handles");
  MTEST_CHECK(pvar_read(session, matches, "mpix_matches") == 0, "mpix_matches not 0 after reset");
  MPI_Barrier(MPI_COMM_WORLD);

  const size_t big = (size_t)eager_limit + 1;
  char *buf = calloc(big, 1);
  if (rank == 0) {
    for (int i = 0; i < kEager; i++) MPI_Send(buf, (int)eager_limit, MPI_CHAR, 1, i, comm);
    for (int i = 0; i < kRendezvous; i++) MPI_Send(buf, (int)big, MPI_CHAR, 1, 100 + i, comm);
    for (int i = 0; i < kHeld; i++) MPI_Send(buf, 1, MPI_CHAR, 1, 200 + i, comm);
    MTEST_CHECK(pvar_read(session, eager, "mpix_eager_sends") == kEager + kHeld, "eager sends: %llu, sent %d",
                pvar_read(session, eager, "mpix_eager_sends"), kEager + kHeld);
    MTEST_CHECK(pvar_read(session, rndv, "mpix_rendezvous_sends") == kRendezvous, "rendezvous sends: %llu, sent %d",
                pvar_read(session, rndv, "mpix_rendezvous_sends"), kRendezvous);
  } else {
    for (int i = 0; i < kEager; i++) MPI_Recv(buf, (int)eager_limit, MPI_CHAR, 0, i, comm, MPI_STATUS_IGNORE);
    for (int i = 0; i < kRendezvous; i++) MPI_Recv(buf, (int)big, MPI_CHAR, 0, 100 + i, comm, MPI_STATUS_IGNORE);
    /* The last of the held messages is seen: all of them wait, unexpected
     * (one sender's messages arrive in order). */
    int flag = 0;
    while (!flag) MPI_Iprobe(0, 200 + kHeld - 1, comm, &flag, MPI_STATUS_IGNORE);
    const unsigned long long held = pvar_read(session, depth, "mpix_unexpected_depth");
    MTEST_CHECK(held == kHeld, "unexpected depth %llu, %d messages wait", held, kHeld);
    MTEST_CHECK(pvar_read(session, depth_max, "mpix_unexpected_depth_max") >= kHeld, "high-water mark below %d",
                kHeld);
    /* One byte each, unexpected on a no-wildcard communicator: kept with
     * no record of their own. */
    MTEST_CHECK(pvar_read(session, kept_inline, "mpix_unexpected_inline") == kHeld, "inline messages %llu, %d held",
                pvar_read(session, kept_inline, "mpix_unexpected_inline"), kHeld);
    for (int i = 0; i < kHeld; i++) MPI_Recv(buf, 1, MPI_CHAR, 0, 200 + i, comm, MPI_STATUS_IGNORE);
    MTEST_CHECK(pvar_read(session, depth, "mpix_unexpected_depth") == 0, "unexpected depth after the receives");
    const unsigned long long total = kEager + kRendezvous + kHeld;
    MTEST_CHECK(pvar_read(session, matches, "mpix_matches") == total, "matches %llu, received %llu",
                pvar_read(session, matches, "mpix_matches"), total);
    MTEST_CHECK(pvar_read(session, arrivals, "mpix_arrivals") == total, "arrivals %llu, sent %llu",
                pvar_read(session, arrivals, "mpix_arrivals"), total);
    /* readreset: the count so far, then from zero. */
    unsigned long long v = 0;
    MTEST_CHECK(MPI_T_pvar_readreset(session, matches, &v) == MPI_SUCCESS && v == total, "readreset gave %llu", v);
    MTEST_CHECK(pvar_read(session, matches, "mpix_matches") == 0, "matches after readreset");
  }
  free(buf);

  /* Errors: mpix's variables are continuous, levels cannot be reset, none
   * written; handles belong to their session; freed ones are invalid. */
  unsigned long long v = 0;
  MTEST_CHECK(MPI_T_pvar_start(session, matches) == MPI_T_ERR_PVAR_NO_STARTSTOP, "start of a continuous pvar");
  MTEST_CHECK(MPI_T_pvar_stop(session, matches) == MPI_T_ERR_PVAR_NO_STARTSTOP, "stop of a continuous pvar");
  MTEST_CHECK(MPI_T_pvar_reset(session, depth) == MPI_T_ERR_PVAR_NO_WRITE, "reset of a level");
  MTEST_CHECK(MPI_T_pvar_write(session, matches, &v) == MPI_T_ERR_PVAR_NO_WRITE, "write");
  MTEST_CHECK(MPI_T_pvar_read(other, matches, &v) == MPI_T_ERR_INVALID_HANDLE, "read in another session");
  MTEST_CHECK(MPI_T_pvar_start(session, MPI_T_PVAR_ALL_HANDLES) == MPI_SUCCESS, "start of all handles");
  MPI_T_pvar_get_num(&num);
  MPI_T_pvar_handle ph;
  MTEST_CHECK(MPI_T_pvar_get_info(num, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
                  MPI_T_ERR_INVALID_INDEX,
              "pvar_get_info(num)");
  MTEST_CHECK(MPI_T_pvar_handle_alloc(session, num, NULL, &ph, &count) == MPI_T_ERR_INVALID_INDEX,
              "pvar_handle_alloc(num)");
  MPI_T_pvar_handle stale = eager;
  MTEST_CHECK(MPI_T_pvar_handle_free(session, &eager) == MPI_SUCCESS && eager == MPI_T_PVAR_HANDLE_NULL,
              "pvar_handle_free");
  MTEST_CHECK(MPI_T_pvar_read(session, stale, &v) == MPI_T_ERR_INVALID_HANDLE, "read of a freed pvar handle");
  MTEST_CHECK(MPI_T_pvar_handle_free(session, &stale) == MPI_T_ERR_INVALID_HANDLE, "double free");
  MTEST_CHECK(MPI_T_pvar_read(session, MPI_T_PVAR_HANDLE_NULL, &v) == MPI_T_ERR_INVALID_HANDLE, "read of NULL");
  /* A freed session takes mpix's handles with it. */
  stale = rndv;
  MPI_T_pvar_session gone = other;
  MTEST_CHECK(MPI_T_pvar_session_free(&other) == MPI_SUCCESS, "session_free");
  MTEST_CHECK(MPI_T_pvar_handle_alloc(gone, num - 1, NULL, &ph, &count) == MPI_T_ERR_INVALID_SESSION,
              "handle_alloc in a freed session");
  const MPI_T_pvar_session freed = session;
  MTEST_CHECK(MPI_T_pvar_session_free(&session) == MPI_SUCCESS, "session_free");
  MTEST_CHECK(MPI_T_pvar_read(freed, stale, &v) == MPI_T_ERR_INVALID_HANDLE, "read after session_free");
  (void)arrivals;
  (void)depth_max;

  MPI_Comm_free(&comm);
  MTEST_CHECK(MPI_T_finalize() == MPI_SUCCESS, "MPI_T_finalize");
  return mtest_finalize();
}
