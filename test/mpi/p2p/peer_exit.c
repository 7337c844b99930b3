/* A peer that exits in the middle of a transfer within a node (issue 30):
 * the survivor gets a clear error, never a hang or bytes taken for data.
 *
 * Rank 1 exits (_exit, no MPI_Finalize) at the worst moment of a
 * single-copy message (progress/single_copy.h), where mpix's own protocol
 * is the only thing that could notice; rank 0 survives and checks:
 *
 *   MPIX_TEST_EXIT=sender    rank 1 announced a message to rank 0 and exits
 *                            before rank 0 reads it: rank 0's receive
 *                            returns MPI_ERR_OTHER (the read fails), the
 *                            failure counted (mpix_single_copy_failures).
 *   MPIX_TEST_EXIT=receiver  rank 0's send waits for rank 1's read, and
 *                            rank 1 exits without reading: rank 0's wait
 *                            returns MPI_ERR_OTHER within seconds
 *                            (mpix_peer_exits), not never.
 *   MPIX_TEST_EXIT=ssend     the same for an eager synchronous send
 *                            (MPI_Issend of 8 bytes), whose receiver exits
 *                            before matching it.
 *
 * The exiting rank first makes sure the announcement arrived (MPI_Probe)
 * and that nothing it sent is still in flight, so the two cases are exact.
 * Where single copy is not in use (MPIX_SINGLE_COPY=off, transport pmpi,
 * ranks on two nodes) the test says "skipped": a peer's death is then the
 * transport's or the MPI library's to notice. Run with the testlist's
 * "exits" option: the launcher must not take the survivor down. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpix.h"
#include "mtest.h"

enum { kBytes = 1 << 20, kAnnounced = 1, kSeen = 2, kGo = 3, kFirst = 4 };

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Whether process pid is gone (or a zombie): /proc/PID/stat's state. */
static int gone(int pid) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "r");
  if (f == NULL) return 1;
  const size_t n = fread(line, 1, sizeof line - 1, f);
  fclose(f);
  line[n] = '\0';
  const char *p = strrchr(line, ')');
  return p != NULL && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

static void wait_gone(int pid) {
  const double end = now_s() + 60;
  while (!gone(pid) && now_s() < end) usleep(1000);
  MTEST_CHECK(gone(pid), "rank 1 (process %d) still there after 60 s", pid);
}

/* Rank 0's verdict and exit; the other rank is gone, so no collective. */
static void finish(void) {
  mtest_printf(mtest_errors == 0 ? " No Errors\n" : " Found %d errors\n", mtest_errors);
  fflush(stdout);
  fflush(stderr);
  _exit(mtest_errors != 0);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *mode = getenv("MPIX_TEST_EXIT");
  const int sender_exits = mode != NULL && strcmp(mode, "sender") == 0;
  const int ssend = mode != NULL && strcmp(mode, "ssend") == 0;
  if (size != 2 || mode == NULL || (!sender_exits && !ssend && strcmp(mode, "receiver") != 0)) {
    if (rank == 0) fprintf(stderr, "peer_exit: 2 ranks and MPIX_TEST_EXIT=sender|receiver|ssend\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm c;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &c);
  mtest_check_handled(c, "MPIX_Comm_dup_nowildcard");
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  const int peer = 1 - rank;
  int pids[2] = {0, 0};
  const int me = (int)getpid();
  MPI_Allgather(&me, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);

  unsigned char *buf = malloc(kBytes);
  mtest_pvar_t reads = mtest_pvar_open("mpix_single_copy_reads");
  mtest_pvar_t failures = mtest_pvar_open("mpix_single_copy_failures");
  mtest_pvar_t exits = mtest_pvar_open("mpix_peer_exits");
  MTEST_CHECK(reads.ok && failures.ok && exits.ok, "mpix's pvars missing");

  /* Does this run use single copy? One message each way tells. */
  for (int i = 0; i < kBytes; ++i) buf[i] = (unsigned char)(i * 13 + rank);
  MPI_Sendrecv_replace(buf, kBytes, MPI_BYTE, peer, kFirst, peer, kFirst, c, MPI_STATUS_IGNORE);
  for (int i = 0; i < kBytes; ++i)
    if (buf[i] != (unsigned char)(i * 13 + peer)) {
      MTEST_CHECK(0, "first message: byte %d is %d", i, buf[i]);
      break;
    }
  int used = mtest_pvar_read(&reads) == 1, both = 0;
  MPI_Allreduce(&used, &both, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!both) {
    int total = 0;
    MPI_Allreduce(&mtest_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) mtest_printf(total ? " Found %d errors\n" : "skipped: single copy not in use in this run\n", total);
    MPI_Comm_free(&c);
    free(buf);
    MPI_Finalize();
    return 0;
  }

  int token = 0;
  MPI_Status st;
  if (sender_exits) {
    if (rank == 1) {
      MPI_Request r;
      MPI_Isend(buf, kBytes, MPI_BYTE, 0, kAnnounced, c, &r);
      MPI_Recv(&token, 1, MPI_INT, 0, kSeen, c, MPI_STATUS_IGNORE);
      _exit(0);  /* the message announced, never read */
    }
    MPI_Probe(1, kAnnounced, c, &st);
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    MTEST_CHECK(count == kBytes, "probe: %d bytes announced", count);
    MPI_Send(&token, 1, MPI_INT, 1, kSeen, c);
    wait_gone(pids[1]);
    memset(buf, 0, kBytes);
    const int rc = MPI_Recv(buf, kBytes, MPI_BYTE, 1, kAnnounced, c, &st);
    MTEST_CHECK(mtest_class(rc) == MPI_ERR_OTHER, "receive from an exited sender: class %d, want MPI_ERR_OTHER",
                mtest_class(rc));
    MTEST_CHECK(mtest_pvar_read(&failures) == 1, "mpix_single_copy_failures %lld, want 1", mtest_pvar_read(&failures));
    finish();
  }

  /* The receiver exits: its send waits for a read (single copy) or a match
   * (synchronous) that never comes. */
  if (rank == 1) {
    MPI_Probe(0, kAnnounced, c, &st);  /* the announcement is here, unread */
    MPI_Send(&token, 1, MPI_INT, 0, kSeen, c);
    MPI_Recv(&token, 1, MPI_INT, 0, kGo, c, MPI_STATUS_IGNORE);
    _exit(0);
  }
  MPI_Request r;
  if (ssend) MPI_Issend(buf, 8, MPI_BYTE, 1, kAnnounced, c, &r);
  else MPI_Isend(buf, kBytes, MPI_BYTE, 1, kAnnounced, c, &r);
  MPI_Recv(&token, 1, MPI_INT, 1, kSeen, c, MPI_STATUS_IGNORE);
  MPI_Send(&token, 1, MPI_INT, 1, kGo, c);
  wait_gone(pids[1]);
  /* A bounded wait: a hang is the failure this test exists for. */
  const double end = now_s() + 30;
  int done = 0, rc = MPI_SUCCESS;
  while (!done && now_s() < end) rc = MPI_Test(&r, &done, &st);
  MTEST_CHECK(done, "send to an exited receiver still pending after 30 s");
  if (done) {
    MTEST_CHECK(mtest_class(rc) == MPI_ERR_OTHER || mtest_class(rc) == MPI_ERR_IN_STATUS,
                "send to an exited receiver: class %d, want MPI_ERR_OTHER", mtest_class(rc));
    if (mtest_class(rc) == MPI_ERR_IN_STATUS) rc = st.MPI_ERROR;
    MTEST_CHECK(mtest_class(rc) == MPI_ERR_OTHER, "status error class %d", mtest_class(rc));
  }
  MTEST_CHECK(mtest_pvar_read(&exits) == 1, "mpix_peer_exits %lld, want 1", mtest_pvar_read(&exits));
  finish();
}
