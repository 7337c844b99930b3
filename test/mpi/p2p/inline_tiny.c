/* Unexpected messages of at most 8 bytes on a no-wildcard communicator are
 * kept in mpix's matcher with no record of their own ("inline", the
 * counter mpix_unexpected_inline). Every way such a message leaves the
 * queue must give what a record would:
 *   - sizes 0..9 bytes (9: the smallest kept with a record), three messages
 *     per key (the later ones become the head of their key after the first
 *     is taken), keys received in a scrambled order, each key by one of:
 *     MPI_Recv, MPI_Irecv+MPI_Wait, MPI_Probe then MPI_Recv, MPI_Iprobe then
 *     MPI_Recv, MPI_Mprobe+MPI_Mrecv, MPI_Improbe+MPI_Imrecv, a strided
 *     datatype (the general delivery), and a buffer one byte short
 *     (MPI_ERR_TRUNCATE returned, nothing written past it, the message
 *     consumed): payload, source, tag and count exact;
 *   - receives posted inside an unordered region (with
 *     MPIX_REGION_BATCH_MIN=0 a batch takes the queue over and the inline
 *     messages become records);
 *   - MPI_Issend's messages (acknowledged at their match) are never inline;
 *   - messages left unreceived when their communicator is freed are dropped
 *     without a leak (ASan and valgrind runs);
 *   - on a communicator that allows wildcards (MPIX_INTERCEPT=all's
 *     MPI_COMM_WORLD duplicate) nothing is inline;
 *   - mpix carried it: mpix_unexpected_inline rises by exactly the number
 *     of unexpected messages of at most 8 bytes sent without a sync.
 * Rank 1 sends to rank 0; before each phase's receives rank 0 waits for a
 * marker sent after the phase's messages, so that every one of them is
 * unexpected (a sender's messages arrive in order). The markers (0 bytes,
 * probed first) are inline messages too. Other ranks only join. */
#include <stdlib.h>
#include <string.h>

#include "mpix.h"
#include "mtest.h"

#define KEYS 140
#define PER_KEY 3
#define MARK 30000
#define METHODS 8
#define REGION_KEYS 50

static int rank;

static int size_of(int tag, int k) {
  int n = (tag + k) % 10;
  if (tag % METHODS == 6 && n > 8) n = 8; /* the strided type holds 8 */
  return n;
}
static unsigned char byte_of(int tag, int k, int i) { return (unsigned char)(tag * 7 + k * 31 + i * 13 + 1); }

static void fill(unsigned char *b, int tag, int k, int n) {
  for (int i = 0; i < n; i++) b[i] = byte_of(tag, k, i);
}
static int intact(const unsigned char *b, int tag, int k, int n) {
  for (int i = 0; i < n; i++)
    if (b[i] != byte_of(tag, k, i)) return 0;
  return 1;
}

static void send_marker(MPI_Comm comm) { MPI_Send(NULL, 0, MPI_BYTE, 0, MARK, comm); }
static void wait_marker(MPI_Comm comm) {
  MPI_Status st;
  MPI_Probe(1, MARK, comm, &st);
  MPI_Recv(NULL, 0, MPI_BYTE, 1, MARK, comm, MPI_STATUS_IGNORE);
}

/* Receives message k of `tag` (n bytes) by `method`; checks it. */
static void receive_one(MPI_Comm comm, int tag, int k, int n, int method) {
  unsigned char buf[32];
  memset(buf, 0xee, sizeof buf);
  MPI_Status st;
  MPI_Message msg;
  MPI_Request req;
  int rc = MPI_SUCCESS, flag = 0, count = -1, cap = 16;
  switch (method) {
    case 0: rc = MPI_Recv(buf, cap, MPI_BYTE, 1, tag, comm, &st); break;
    case 1:
      MPI_Irecv(buf, cap, MPI_BYTE, 1, tag, comm, &req);
      rc = MPI_Wait(&req, &st);
      break;
    case 2:
      MPI_Probe(1, tag, comm, &st);
      MPI_Get_count(&st, MPI_BYTE, &count);
      MTEST_CHECK(count == n && st.MPI_SOURCE == 1 && st.MPI_TAG == tag, "Probe of tag %d: count %d (sent %d)", tag,
                  count, n);
      rc = MPI_Recv(buf, cap, MPI_BYTE, 1, tag, comm, &st);
      break;
    case 3:
      while (!flag) MPI_Iprobe(1, tag, comm, &flag, &st);
      MPI_Get_count(&st, MPI_BYTE, &count);
      MTEST_CHECK(count == n, "Iprobe of tag %d: count %d (sent %d)", tag, count, n);
      rc = MPI_Recv(buf, cap, MPI_BYTE, 1, tag, comm, &st);
      break;
    case 4:
      MPI_Mprobe(1, tag, comm, &msg, &st);
      MPI_Get_count(&st, MPI_BYTE, &count);
      MTEST_CHECK(count == n, "Mprobe of tag %d: count %d (sent %d)", tag, count, n);
      rc = MPI_Mrecv(buf, cap, MPI_BYTE, &msg, &st);
      break;
    case 5:
      while (!flag) MPI_Improbe(1, tag, comm, &flag, &msg, &st);
      MPI_Imrecv(buf, cap, MPI_BYTE, &msg, &req);
      rc = MPI_Wait(&req, &st);
      break;
    case 6: {
      /* 8 bytes at every other byte of buf */
      MPI_Datatype strided;
      MPI_Type_vector(8, 1, 2, MPI_BYTE, &strided);
      MPI_Type_commit(&strided);
      rc = MPI_Recv(buf, 1, strided, 1, tag, comm, &st);
      MPI_Type_free(&strided);
      unsigned char packed[8];
      for (int i = 0; i < 8; i++) packed[i] = buf[2 * i];
      MTEST_CHECK(rc == MPI_SUCCESS && intact(packed, tag, k, n), "strided receive of tag %d (%d bytes)", tag, n);
      MPI_Get_count(&st, MPI_BYTE, &count);
      MTEST_CHECK(count == n, "strided receive of tag %d: count %d (sent %d)", tag, count, n);
      for (int i = n; i < 8; i++) MTEST_CHECK(buf[2 * i] == 0xee, "strided receive of tag %d wrote element %d", tag, i);
      for (int i = 0; i < 8; i++) MTEST_CHECK(buf[2 * i + 1] == 0xee, "strided receive of tag %d wrote a gap", tag);
      return;
    }
    default: {
      /* one byte short (a 0-byte message fits a 0-byte buffer) */
      cap = n > 0 ? n - 1 : 0;
      rc = MPI_Recv(buf, cap, MPI_BYTE, 1, tag, comm, &st);
      if (n > 0) {
        MTEST_CHECK(mtest_class(rc) == MPI_ERR_TRUNCATE, "%d bytes into %d (tag %d): error class %d", n, cap, tag,
                    mtest_class(rc));
        MTEST_CHECK(intact(buf, tag, k, cap), "truncated receive of tag %d: the bytes that fit are wrong", tag);
      } else {
        MTEST_CHECK(rc == MPI_SUCCESS, "0 bytes into 0 (tag %d): rc %d", tag, rc);
      }
      for (int i = cap; i < (int)sizeof buf; i++)
        MTEST_CHECK(buf[i] == 0xee, "truncated receive of tag %d wrote byte %d past its %d", tag, i, cap);
      return;
    }
  }
  MTEST_CHECK(rc == MPI_SUCCESS, "method %d, tag %d: rc %d", method, tag, rc);
  MPI_Get_count(&st, MPI_BYTE, &count);
  MTEST_CHECK(count == n && st.MPI_SOURCE == 1 && st.MPI_TAG == tag, "method %d, tag %d: count %d (sent %d)", method,
              tag, count, n);
  MTEST_CHECK(intact(buf, tag, k, n), "method %d, tag %d, message %d: payload wrong", method, tag, k);
  for (int i = n; i < (int)sizeof buf; i++)
    MTEST_CHECK(buf[i] == 0xee, "method %d, tag %d: byte %d written past the message", method, tag, i);
}

/* Phase 1: every size and way out. Returns the messages that were inline
 * candidates (at most 8 bytes, the marker included). */
static long long all_ways(MPI_Comm comm) {
  long long tiny = 1;
  unsigned char out[16];
  if (rank == 1) {
    for (int t = 0; t < KEYS; t++)
      for (int k = 0; k < PER_KEY; k++) {
        const int n = size_of(t, k);
        fill(out, t, k, n);
        MPI_Send(out, n, MPI_BYTE, 0, t, comm);
      }
    send_marker(comm);
  } else if (rank == 0) {
    wait_marker(comm);
    for (int i = 0; i < KEYS; i++) {
      const int t = (i * 53) % KEYS; /* 53 and KEYS coprime: a permutation */
      for (int k = 0; k < PER_KEY; k++) receive_one(comm, t, k, size_of(t, k), t % METHODS);
    }
  }
  for (int t = 0; t < KEYS; t++)
    for (int k = 0; k < PER_KEY; k++) tiny += size_of(t, k) <= 8;
  return tiny;
}

/* Phase 2: synchronous sends are acknowledged at their match: no inline
 * message but the marker. */
static long long sync_sends(MPI_Comm comm) {
  unsigned char out[4][8]; /* each send's own: none may change before it completes */
  if (rank == 1) {
    MPI_Request r[4];
    for (int i = 0; i < 4; i++) {
      fill(out[i], 500 + i, 0, 4);
      MPI_Issend(out[i], 4, MPI_BYTE, 0, 500 + i, comm, &r[i]);
    }
    send_marker(comm);
    MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
  } else if (rank == 0) {
    wait_marker(comm);
    for (int i = 0; i < 4; i++) receive_one(comm, 500 + i, 0, 4, 0);
  }
  return 1;
}

/* Phase 3: receives inside an unordered region. */
static long long in_region(MPI_Comm comm) {
  unsigned char out[8];
  if (rank == 1) {
    for (int i = 0; i < REGION_KEYS; i++) {
      fill(out, 600 + i, 0, 1 + i % 8);
      MPI_Send(out, 1 + i % 8, MPI_BYTE, 0, 600 + i, comm);
    }
    send_marker(comm);
  } else if (rank == 0) {
    wait_marker(comm);
    unsigned char in[REGION_KEYS][16];
    MPI_Request r[REGION_KEYS];
    MPI_Status st[REGION_KEYS];
    MTEST_CHECK(MPIX_Unordered_region_open(comm) == MPI_SUCCESS, "region open");
    for (int i = 0; i < REGION_KEYS; i++) MPI_Irecv(in[i], 16, MPI_BYTE, 1, 600 + i, comm, &r[i]);
    MPI_Waitall(REGION_KEYS, r, st);
    MTEST_CHECK(MPIX_Unordered_region_close(comm) == MPI_SUCCESS, "region close");
    for (int i = 0; i < REGION_KEYS; i++) {
      int count = -1;
      MPI_Get_count(&st[i], MPI_BYTE, &count);
      MTEST_CHECK(count == 1 + i % 8 && intact(in[i], 600 + i, 0, count), "region receive of tag %d", 600 + i);
    }
  }
  return REGION_KEYS + 1;
}

/* Phase 4: messages nobody receives, dropped with their communicator. */
static long long left_behind(void) {
  MPI_Comm c;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &c);
  unsigned char out[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  if (rank == 1) {
    for (int i = 0; i < 5; i++) MPI_Send(out, 1 + i, MPI_BYTE, 0, 700 + i, c);
    send_marker(c);
  } else if (rank == 0) {
    wait_marker(c);
  }
  MPI_Comm_free(&c);
  return 5 + 1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm nw, world;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  mtest_check_handled(nw, "the no-wildcard duplicate");
  MPI_Comm_set_errhandler(nw, MPI_ERRORS_RETURN);
  mtest_pvar_t inl = mtest_pvar_open("mpix_unexpected_inline");
  MTEST_CHECK(inl.ok, "no performance variable mpix_unexpected_inline");
  long long want = 0;
  const long long v0 = mtest_pvar_read(&inl);
  /* Read before any message can come in (the liveness thread takes
   * arrivals in at any time). */
  MPI_Barrier(MPI_COMM_WORLD);

  want += all_ways(nw);
  want += sync_sends(nw);
  want += in_region(nw);
  want += left_behind();
  long long got = mtest_pvar_read(&inl) - v0;
  if (rank == 0) MTEST_CHECK(got == want, "mpix_unexpected_inline rose by %lld, %lld messages were inline", got, want);

  /* A communicator that allows wildcards keeps records. */
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
  int handled = 0;
  MPIX_Comm_is_handled(world, &handled);
  if (handled) {
    const long long v1 = mtest_pvar_read(&inl);
    MPI_Barrier(MPI_COMM_WORLD);
    all_ways(world);
    got = mtest_pvar_read(&inl) - v1;
    if (rank == 0) MTEST_CHECK(got == 0, "%lld messages inline on a communicator that allows wildcards", got);
  }
  MPI_Comm_free(&world);
  MPI_Comm_free(&nw);
  return mtest_finalize();
}
