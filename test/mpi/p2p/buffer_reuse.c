/* "The send buffer may be reused" (issue 24), under load, on a handled
 * communicator and on every transport pass: every size across the internal
 * thresholds (tiny payloads, the eager limit, rendezvous), thousands in
 * flight, each payload checked.
 *
 * Each rank sends to the next and receives from the previous:
 *  A. thousands of MPI_Isend of distinct payloads cut from one shared
 *     pattern buffer, posted while the receiver is not receiving yet (it
 *     waits in a barrier), so the transports' wires fill and their sends
 *     queue, copy and tie;
 *  B. blocking MPI_Send, MPI_Ssend and MPI_Rsend from one buffer that is
 *     overwritten as soon as each call returns;
 *  C. MPI_Bsend and MPI_Ibsend + MPI_Request_free from one buffer
 *     overwritten at once, the receiver not receiving yet;
 *  D. non-contiguous (vector) sends, nonblocking from one shared pattern and
 *     blocking from one overwritten buffer;
 *  E. a persistent send restarted on one buffer refilled between starts.
 * Run with MPIX_LINK_CHECK=defer too: the transport then reads every
 * payload handed over with a completion only at the next progress step.
 * Env BUFFER_REUSE_N: messages per phase (default 2000). */
#include <stdlib.h>
#include <string.h>

#include "mtest.h"

static int rank, size, next, prev;
static int n_msgs = 2000;

/* Sizes across every threshold: tiny inline payloads (8, 32 bytes), the
 * UCX/libfabric inject sizes, the GPU eager limit, MPIX_EAGER_LIMIT (16384)
 * and its neighbours, rendezvous. */
static const int sizes[] = {0,    1,    7,    8,    9,    31,    32,    33,    64,    100,   255,   256, 1000,
                            3000, 4095, 4096, 4097, 8191, 8192,  8193,  16383, 16384, 16385, 20000, 65539};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define MAXSIZE 65539
#define NOFFSETS 97

static int size_of(int i) { return sizes[(i * 7) % NSIZES]; }
static unsigned char byte_of(int msg, int j) { return (unsigned char)(msg * 131 + j * 7 + 1); }

/* The shared pattern: message i is pattern + (i % NOFFSETS). */
static unsigned char pattern[MAXSIZE + NOFFSETS];
static unsigned char pattern_byte(int i, int j) { return pattern[i % NOFFSETS + j]; }

static long check_bytes(const unsigned char *got, int n, int msg, int from_pattern) {
  long bad = 0;
  for (int j = 0; j < n; j++) {
    const unsigned char want = from_pattern ? pattern_byte(msg, j) : byte_of(msg, j);
    if (got[j] != want) bad++;
  }
  return bad;
}

/* Receives n_msgs messages of the phase in order (tag = message number),
 * checking sizes and bytes. */
static void receive_all(MPI_Comm comm, const char *phase, int from_pattern, unsigned char *rbuf) {
  long wrong = 0;
  for (int i = 0; i < n_msgs; i++) {
    MPI_Status st;
    const int n = size_of(i);
    memset(rbuf, 0xEE, (size_t)n + 1);
    MPI_Recv(rbuf, MAXSIZE, MPI_BYTE, prev, i, comm, &st);
    int got = -1;
    MPI_Get_count(&st, MPI_BYTE, &got);
    const long bad = got == n ? check_bytes(rbuf, n, i, from_pattern) : n + 1;
    if (bad != 0 && wrong++ < 5)
      MTEST_CHECK(0, "%s: message %d of %d bytes: count %d, %ld bytes wrong", phase, i, n, got, bad);
  }
  MTEST_CHECK(wrong == 0, "%s: %ld of %d messages wrong", phase, wrong, n_msgs);
}

static void phase_isend_late(MPI_Comm comm, unsigned char *rbuf) {
  MPI_Request *reqs = malloc((size_t)n_msgs * sizeof *reqs);
  for (int i = 0; i < n_msgs; i++)
    MPI_Isend(pattern + i % NOFFSETS, size_of(i), MPI_BYTE, next, i, comm, &reqs[i]);
  MPI_Barrier(MPI_COMM_WORLD); /* every send posted before any receive */
  receive_all(comm, "A: Isend from a shared pattern", 1, rbuf);
  MPI_Waitall(n_msgs, reqs, MPI_STATUSES_IGNORE);
  free(reqs);
}

/* B: the receiver posts all receives first (MPI_Rsend needs them), then the
 * sender reuses one buffer for every blocking send. */
static void phase_blocking(MPI_Comm comm, int mode, const char *name) {
  size_t *at = malloc(((size_t)n_msgs + 1) * sizeof *at);
  at[0] = 0;
  for (int i = 0; i < n_msgs; i++) at[i + 1] = at[i] + (size_t)size_of(i) + 1;
  unsigned char *rbufs = malloc(at[n_msgs]);
  MPI_Request *reqs = malloc((size_t)n_msgs * sizeof *reqs);
  /* One byte more than each message: a longer arrival would show. */
  for (int i = 0; i < n_msgs; i++)
    MPI_Irecv(rbufs + at[i], size_of(i) + 1, MPI_BYTE, prev, i, comm, &reqs[i]);
  MPI_Barrier(MPI_COMM_WORLD);
  unsigned char *buf = malloc(MAXSIZE);
  for (int i = 0; i < n_msgs; i++) {
    const int n = size_of(i);
    for (int j = 0; j < n; j++) buf[j] = byte_of(i, j);
    if (mode == 0) MPI_Send(buf, n, MPI_BYTE, next, i, comm);
    else if (mode == 1) MPI_Ssend(buf, n, MPI_BYTE, next, i, comm);
    else MPI_Rsend(buf, n, MPI_BYTE, next, i, comm);
    memset(buf, 0xA5, MAXSIZE); /* reusable on return */
  }
  MPI_Status *st = malloc((size_t)n_msgs * sizeof *st);
  MPI_Waitall(n_msgs, reqs, st);
  long wrong = 0;
  for (int i = 0; i < n_msgs; i++) {
    int got = -1;
    MPI_Get_count(&st[i], MPI_BYTE, &got);
    const int n = size_of(i);
    const long bad = got == n ? check_bytes(rbufs + at[i], n, i, 0) : n + 1;
    if (bad != 0 && wrong++ < 5) MTEST_CHECK(0, "%s: message %d of %d bytes: %ld wrong", name, i, n, bad);
  }
  MTEST_CHECK(wrong == 0, "%s: %ld of %d messages wrong", name, wrong, n_msgs);
  free(st);
  free(buf);
  free(reqs);
  free(rbufs);
  free(at);
}

static void phase_buffered(MPI_Comm comm, unsigned char *rbuf) {
  long total = 0;
  for (int i = 0; i < n_msgs; i++) total += size_of(i) + MPI_BSEND_OVERHEAD;
  int bsize = (int)total + 4096;
  void *attached = malloc((size_t)bsize);
  MPI_Buffer_attach(attached, bsize);
  unsigned char *buf = malloc(MAXSIZE);
  for (int i = 0; i < n_msgs; i++) {
    const int n = size_of(i);
    for (int j = 0; j < n; j++) buf[j] = byte_of(i, j);
    if (i % 2 == 0) {
      MPI_Bsend(buf, n, MPI_BYTE, next, i, comm);
    } else {
      MPI_Request r;
      MPI_Ibsend(buf, n, MPI_BYTE, next, i, comm, &r);
      MPI_Request_free(&r); /* a buffered send's buffer is free on return */
    }
    memset(buf, 0x5A, MAXSIZE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  receive_all(comm, "C: Bsend/Ibsend from one buffer", 0, rbuf);
  MPI_Buffer_detach(&attached, &bsize);
  free(attached);
  free(buf);
}

/* D: every other int of 2 * count, count = size_of(i) / 4 elements. */
static void phase_vector(MPI_Comm comm) {
  const int m = n_msgs / 4 > 0 ? n_msgs / 4 : 1;
  int maxcount = MAXSIZE / 4;
  int *shared = malloc((size_t)(2 * maxcount + NOFFSETS) * sizeof(int));
  for (int k = 0; k < 2 * maxcount + NOFFSETS; k++) shared[k] = k * 3 + 1;
  MPI_Request *reqs = malloc((size_t)2 * m * sizeof *reqs);
  MPI_Datatype *types = malloc((size_t)m * sizeof *types);
  for (int i = 0; i < m; i++) {
    const int count = size_of(i) / 4;
    MPI_Type_vector(count, 1, 2, MPI_INT, &types[i]);
    MPI_Type_commit(&types[i]);
    MPI_Isend(shared + i % NOFFSETS, 1, types[i], next, i, comm, &reqs[i]);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  int *rbuf = malloc((size_t)maxcount * sizeof(int));
  long wrong = 0;
  for (int i = 0; i < m; i++) {
    const int count = size_of(i) / 4;
    MPI_Status st;
    MPI_Recv(rbuf, maxcount, MPI_INT, prev, i, comm, &st);
    int got = -1;
    MPI_Get_count(&st, MPI_INT, &got);
    long bad = got == count ? 0 : 1;
    for (int k = 0; k < count && bad == 0; k++)
      if (rbuf[k] != shared[i % NOFFSETS + 2 * k]) bad++;
    if (bad && wrong++ < 5) MTEST_CHECK(0, "D: vector message %d (%d ints): count %d, wrong", i, count, got);
  }
  MPI_Waitall(m, reqs, MPI_STATUSES_IGNORE);
  /* Blocking vector sends from one buffer refilled after each return
   * (packed by mpix into a copy of its own). */
  int *one = malloc((size_t)(2 * maxcount) * sizeof(int));
  for (int i = 0; i < m; i++) {
    const int count = size_of(i) / 4;
    MPI_Irecv(rbuf, maxcount, MPI_INT, prev, m + i, comm, &reqs[m]);
    for (int k = 0; k < 2 * count; k++) one[k] = i * 1000 + k;
    MPI_Send(one, 1, types[i], next, m + i, comm);
    for (int k = 0; k < 2 * count; k++) one[k] = -1;
    MPI_Status st;
    MPI_Wait(&reqs[m], &st);
    int got = -1;
    MPI_Get_count(&st, MPI_INT, &got);
    long bad = got == count ? 0 : 1;
    for (int k = 0; k < count && bad == 0; k++)
      if (rbuf[k] != i * 1000 + 2 * k) bad++;
    if (bad && wrong++ < 5) MTEST_CHECK(0, "D: blocking vector message %d (%d ints) wrong", i, count);
  }
  MTEST_CHECK(wrong == 0, "D: %ld vector messages wrong", wrong);
  for (int i = 0; i < m; i++) MPI_Type_free(&types[i]);
  free(one);
  free(rbuf);
  free(types);
  free(reqs);
  free(shared);
}

static void phase_persistent(MPI_Comm comm, unsigned char *rbuf) {
  unsigned char *buf = malloc(MAXSIZE);
  MPI_Request sreq;
  MPI_Send_init(buf, MAXSIZE, MPI_BYTE, next, 7, comm, &sreq);
  long wrong = 0;
  const int rounds = n_msgs / 8 > 0 ? n_msgs / 8 : 1;
  for (int i = 0; i < rounds; i++) {
    MPI_Request rreq;
    MPI_Irecv(rbuf, MAXSIZE, MPI_BYTE, prev, 7, comm, &rreq);
    for (int j = 0; j < MAXSIZE; j++) buf[j] = byte_of(i, j);
    MPI_Start(&sreq);
    MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    memset(buf, 0x3C, MAXSIZE);
    MPI_Wait(&rreq, MPI_STATUS_IGNORE);
    if (check_bytes(rbuf, MAXSIZE, i, 0) != 0 && wrong++ < 5) MTEST_CHECK(0, "E: persistent round %d wrong", i);
  }
  MTEST_CHECK(wrong == 0, "E: %ld persistent rounds wrong", wrong);
  MPI_Request_free(&sreq);
  free(buf);
}

static void run_all(MPI_Comm comm) {
  unsigned char *rbuf = malloc(MAXSIZE + 1);
  phase_isend_late(comm, rbuf);
  phase_blocking(comm, 0, "B: MPI_Send from one buffer");
  phase_blocking(comm, 1, "B: MPI_Ssend from one buffer");
  phase_blocking(comm, 2, "B: MPI_Rsend from one buffer");
  phase_buffered(comm, rbuf);
  phase_vector(comm);
  phase_persistent(comm, rbuf);
  free(rbuf);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  next = (rank + 1) % size;
  prev = (rank + size - 1) % size;
  const char *n_env = getenv("BUFFER_REUSE_N");
  if (n_env != NULL && atoi(n_env) > 0) n_msgs = atoi(n_env);
  for (int k = 0; k < MAXSIZE + NOFFSETS; k++) pattern[k] = (unsigned char)(k * 13 + 5);

  MPI_Comm comm;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &comm);
  mtest_check_handled(comm, "the no-wildcard duplicate");
  run_all(comm);
  MPI_Comm_free(&comm);
  /* Under MPIX_INTERCEPT=all the engine carries MPI_COMM_WORLD too, with
   * wildcard-capable matching. */
  int world_handled = 0;
  MPIX_Comm_is_handled(MPI_COMM_WORLD, &world_handled);
  if (world_handled) run_all(MPI_COMM_WORLD);
  return mtest_finalize();
}
