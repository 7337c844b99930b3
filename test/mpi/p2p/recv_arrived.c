/* MPI_Recv of messages that are already here: the engine's blocking receive
 * copies an arrived eager message straight out with no request of its own,
 * and falls back to a request for everything else. Every promise of
 * MPI_Recv on that path, on each no-wildcard communicator and one that
 * allows wildcards (MPIX_INTERCEPT=all):
 *   - thousands of messages in the queue, received in a scrambled key order,
 *     several per (source, tag): each receive gets the oldest of its key
 *     (non-overtaking), payload and status (source, tag, count) exact;
 *   - every eager size across the ring and eager limits, zero bytes, and a
 *     rendezvous-size message among them (the fallback);
 *   - a buffer larger than the message; a smaller one: MPI_ERR_TRUNCATE
 *     returned (MPI_ERRORS_RETURN), the status counting what fit, nothing
 *     written past the buffer, the message consumed;
 *   - a contiguous derived type (the request-free copy), one whose data start
 *     past its buffer's address and a strided one (the general delivery);
 *   - MPI_Issend of an eager size stays incomplete while its message waits
 *     unreceived and completes once the receive takes it;
 *   - the blocking receive is mpix's: mpix_matches rises by one per receive
 *     and the unexpected queue empties (mpix_unexpected_depth);
 *   - MPI_Barrier takes in the messages that reached this process while it
 *     waited (in mpix's queue before any receive).
 * Ranks 1.. send to rank 0 (at 3 ranks rank 0 receives both senders'
 * messages interleaved). */
#include <stdint.h>
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

static int rank, size;

#define NTAGS 61      /* keys per sender */
#define PER_TAG 40    /* messages per key: NTAGS * PER_TAG = 2440 per sender */
#define BIG 300000    /* past every eager limit */

/* The size of message k of a tag: every size up to a few KiB (across the
 * ring's and the eager limits' bounds), zero bytes, one rendezvous. */
static int size_of(int tag, int k) {
  if (tag == 7 && k == 3) return BIG;
  if ((tag + k) % 17 == 0) return 0;
  return (tag * 131 + k * 977) % 9000;
}
static unsigned char pat(int src, int tag, int k, int i) { return (unsigned char)(src * 71 + tag * 13 + k * 7 + i * 3); }

static long long level(const char *name) {
  /* mpix_unexpected_depth is a level, not a counter: read through its own
   * session and class. */
  int provided = 0, index = -1, count = 0;
  MPI_T_pvar_session s;
  MPI_T_pvar_handle h;
  unsigned long long v = 0;
  MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  if (MPI_T_pvar_session_create(&s) != MPI_SUCCESS) return -1;
  if (MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_LEVEL, &index) != MPI_SUCCESS ||
      MPI_T_pvar_handle_alloc(s, index, NULL, &h, &count) != MPI_SUCCESS) {
    MPI_T_pvar_session_free(&s);
    return -1;
  }
  int rc = MPI_T_pvar_read(s, h, &v);
  MPI_T_pvar_handle_free(s, &h);
  MPI_T_pvar_session_free(&s);
  return rc == MPI_SUCCESS ? (long long)v : -1;
}

static void flood(MPI_Comm comm, const char *name) {
  const int senders = size - 1;
  if (rank != 0) {
    MPI_Request *q = malloc(sizeof *q * NTAGS * PER_TAG);
    unsigned char **out = malloc(sizeof *out * NTAGS * PER_TAG);
    int n = 0;
    /* Keys interleaved, so a key's messages are spread over the queue. */
    for (int k = 0; k < PER_TAG; k++)
      for (int tag = 0; tag < NTAGS; tag++) {
        const int b = size_of(tag, k);
        out[n] = malloc((size_t)b + 1);
        for (int i = 0; i < b; i++) out[n][i] = pat(rank, tag, k, i);
        MPI_Isend(out[n], b, MPI_BYTE, 0, tag, comm, &q[n]);
        n++;
      }
    MPI_Request marker;  /* sent after all of them (nonblocking: any send may wait for its receive) */
    MPI_Isend(NULL, 0, MPI_BYTE, 0, NTAGS, comm, &marker);
    MPI_Barrier(comm);  /* the receiver waits for everything before receiving */
    MPI_Waitall(n, q, MPI_STATUSES_IGNORE);
    MPI_Wait(&marker, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++) free(out[i]);
    free(out);
    free(q);
    MPI_Barrier(comm);
    return;
  }
  /* One source's messages come in in order: its marker here means all of
   * them are (the rendezvous one as its envelope). */
  MPI_Barrier(comm);
  for (int s = 1; s <= senders; s++) MPI_Recv(NULL, 0, MPI_BYTE, s, NTAGS, comm, MPI_STATUS_IGNORE);
  mtest_pvar_t matches = mtest_pvar_open("mpix_matches");
  const long long m0 = mtest_pvar_read(&matches);
  unsigned char *buf = malloc(BIG + 64);
  int next[3][NTAGS] = {{0}};
  int received = 0;
  /* Keys in a scrambled order, each key's messages oldest first. */
  for (int round = 0; round < PER_TAG; round++)
    for (int j = 0; j < NTAGS; j++) {
      const int tag = (j * 37 + round * 11) % NTAGS;
      for (int s = 1; s <= senders; s++) {
        const int k = next[s][tag]++;
        const int b = size_of(tag, k);
        memset(buf, 0xee, (size_t)b + 64);
        MPI_Status st;
        const int rc = MPI_Recv(buf, b + 64, MPI_BYTE, s, tag, comm, &st);
        int got = -1;
        MPI_Get_count(&st, MPI_BYTE, &got);
        MTEST_CHECK(rc == MPI_SUCCESS && st.MPI_SOURCE == s && st.MPI_TAG == tag && got == b,
                    "%s: source %d tag %d message %d: rc %d status %d %d count %d, expected %d bytes", name, s, tag,
                    k, rc, st.MPI_SOURCE, st.MPI_TAG, got, b);
        int bad = -1;
        for (int i = 0; i < b && bad < 0; i++)
          if (buf[i] != pat(s, tag, k, i)) bad = i;
        for (int i = b; i < b + 64 && bad < 0; i++)
          if (buf[i] != 0xee) bad = i;
        MTEST_CHECK(bad < 0, "%s: source %d tag %d message %d (%d bytes): byte %d wrong (another message's, or "
                    "written past the message)", name, s, tag, k, b, bad);
        received++;
      }
    }
  const long long m1 = mtest_pvar_read(&matches);
  MTEST_CHECK(m0 < 0 || m1 - m0 == received, "%s: mpix_matches rose by %lld over %d receives", name, m1 - m0,
              received);
  MTEST_CHECK(matches.ok, "%s: no mpix_matches counter (is mpix loaded?)", name);
  const long long depth = level("mpix_unexpected_depth");
  MTEST_CHECK(depth == 0, "%s: %lld messages left in mpix's unexpected queues", name, depth);
  free(buf);
  MPI_Barrier(comm);
}

/* Truncation, derived types and a synchronous send, from rank 1. */
static void promises(MPI_Comm comm, const char *name) {
  enum { kTrunc = 1000, kInts, kLb, kVector, kSync };
  if (rank == 1) {
    unsigned char out[256];
    for (int i = 0; i < 256; i++) out[i] = (unsigned char)(i ^ 0x5a);
    MPI_Request q[5], sync;
    MPI_Isend(out, 200, MPI_BYTE, 0, kTrunc, comm, &q[0]);
    MPI_Isend(out, 3, MPI_BYTE, 0, kTrunc, comm, &q[1]);  /* the next of the key after the truncated one */
    MPI_Isend(out, 16, MPI_BYTE, 0, kLb, comm, &q[2]);
    MPI_Isend(out, 24, MPI_BYTE, 0, kVector, comm, &q[3]);
    MPI_Isend(out, 12, MPI_BYTE, 0, kInts, comm, &q[4]);
    MPI_Issend(out, 40, MPI_BYTE, 0, kSync, comm, &sync);
    MPI_Barrier(comm);  /* A: everything sent */
    MPI_Barrier(comm);  /* B: rank 0 saw the synchronous message arrive but did not receive it */
    int done = 0;
    MPI_Test(&sync, &done, MPI_STATUS_IGNORE);
    MTEST_CHECK(!done, "%s: MPI_Issend completed before its message was received", name);
    MPI_Barrier(comm);  /* C: rank 0 may receive it now */
    MPI_Wait(&sync, MPI_STATUS_IGNORE);
    MPI_Waitall(5, q, MPI_STATUSES_IGNORE);
    MPI_Barrier(comm);
    return;
  }
  if (rank != 0) {
    MPI_Barrier(comm);
    MPI_Barrier(comm);
    MPI_Barrier(comm);
    MPI_Barrier(comm);
    return;
  }
  MPI_Barrier(comm);  /* A */
  int flag = 0;
  MPI_Status st;
  while (!flag) MPI_Iprobe(1, kSync, comm, &flag, &st);  /* in order: all of rank 1's messages are here */
  unsigned char buf[256];

  /* Truncated: 200 bytes into 50. */
  memset(buf, 0xee, sizeof buf);
  int rc = MPI_Recv(buf, 50, MPI_BYTE, 1, kTrunc, comm, &st);
  int got = -1;
  MPI_Get_count(&st, MPI_BYTE, &got);
  MTEST_CHECK(rc != MPI_SUCCESS && mtest_class(rc) == MPI_ERR_TRUNCATE, "%s: truncated receive returned %d", name,
              rc);
  MTEST_CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == kTrunc && got == 50, "%s: truncated status %d %d count %d", name,
              st.MPI_SOURCE, st.MPI_TAG, got);
  int ok = 1;
  for (int i = 0; i < 50; i++) ok &= buf[i] == (unsigned char)(i ^ 0x5a);
  for (int i = 50; i < 256; i++) ok &= buf[i] == 0xee;
  MTEST_CHECK(ok, "%s: truncated receive wrote wrong bytes or past its buffer", name);
  /* The truncated message is gone: the next of the key is the 3-byte one. */
  rc = MPI_Recv(buf, 50, MPI_BYTE, 1, kTrunc, comm, &st);
  MPI_Get_count(&st, MPI_BYTE, &got);
  MTEST_CHECK(rc == MPI_SUCCESS && got == 3, "%s: after truncation rc %d count %d, expected the 3-byte message", name,
              rc, got);

  /* A derived contiguous type: 4 ints. */
  MPI_Datatype ints4;
  MPI_Type_contiguous(4, MPI_INT, &ints4);
  MPI_Type_commit(&ints4);
  memset(buf, 0xee, sizeof buf);
  rc = MPI_Recv(buf, 2, ints4, 1, kInts, comm, &st);
  MPI_Get_count(&st, MPI_BYTE, &got);
  ok = rc == MPI_SUCCESS && got == 12;
  for (int i = 0; i < 12; i++) ok &= buf[i] == (unsigned char)(i ^ 0x5a);
  for (int i = 12; i < 64; i++) ok &= buf[i] == 0xee;
  MTEST_CHECK(ok, "%s: receive into a contiguous type: rc %d count %d or bytes misplaced", name, rc, got);
  MPI_Type_free(&ints4);

  /* A type whose data start 8 bytes past the buffer's address. */
  MPI_Datatype lb_type, vec;
  const int blen = 16;
  const MPI_Aint disp = 8;
  MPI_Datatype byte = MPI_BYTE;
  MPI_Type_create_struct(1, &blen, &disp, &byte, &lb_type);
  MPI_Type_commit(&lb_type);
  memset(buf, 0xee, sizeof buf);
  rc = MPI_Recv(buf, 1, lb_type, 1, kLb, comm, &st);
  ok = rc == MPI_SUCCESS;
  for (int i = 0; i < 8; i++) ok &= buf[i] == 0xee;
  for (int i = 0; i < 16; i++) ok &= buf[8 + i] == (unsigned char)(i ^ 0x5a);
  for (int i = 24; i < 64; i++) ok &= buf[i] == 0xee;
  MTEST_CHECK(ok, "%s: receive into a type with true lower bound 8: rc %d or bytes misplaced", name, rc);
  MPI_Type_free(&lb_type);

  /* Strided: 3 blocks of 8 bytes, 16 apart. */
  MPI_Type_vector(3, 8, 16, MPI_BYTE, &vec);
  MPI_Type_commit(&vec);
  memset(buf, 0xee, sizeof buf);
  rc = MPI_Recv(buf, 1, vec, 1, kVector, comm, &st);
  ok = rc == MPI_SUCCESS;
  for (int b = 0; b < 3; b++)
    for (int i = 0; i < 16; i++)
      ok &= buf[b * 16 + i] == (i < 8 ? (unsigned char)((b * 8 + i) ^ 0x5a) : 0xee);
  MTEST_CHECK(ok, "%s: receive into a strided type: rc %d or bytes misplaced", name, rc);
  MPI_Type_free(&vec);

  MPI_Barrier(comm);  /* B */
  MPI_Barrier(comm);  /* C */
  rc = MPI_Recv(buf, 64, MPI_BYTE, 1, kSync, comm, &st);
  MPI_Get_count(&st, MPI_BYTE, &got);
  MTEST_CHECK(rc == MPI_SUCCESS && got == 40, "%s: synchronous message rc %d count %d", name, rc, got);
  MPI_Barrier(comm);
}

/* MPI_Barrier takes in what reached this process while it waited: messages
 * the shared-memory rings carried are in mpix's unexpected queue when the
 * barrier returns, before any receive. Checked where the sender saw its
 * messages go through the rings (mpix_shm_ring); received in full either way. */
static void taken_in_by_barrier(MPI_Comm comm, const char *name) {
  enum { kN = 500, kTag = 2000 };
  long long sent_by_ring = 0;
  if (rank == 1) {
    mtest_pvar_t ring = mtest_pvar_open("mpix_shm_ring");
    const long long r0 = mtest_pvar_read(&ring);
    uint64_t out[kN];
    MPI_Request q[kN];
    for (int i = 0; i < kN; i++) {
      out[i] = 977u * (uint64_t)i + 5;
      MPI_Isend(&out[i], 1, MPI_UINT64_T, 0, kTag + i % 7, comm, &q[i]);
    }
    /* Waited for after the barrier: a send may wait for its receive. */
    sent_by_ring = mtest_pvar_read(&ring) - r0;
    MPI_Barrier(comm);
    MPI_Send(&sent_by_ring, 1, MPI_LONG_LONG, 0, kTag + 100, comm);
    MPI_Waitall(kN, q, MPI_STATUSES_IGNORE);
  } else {
    MPI_Barrier(comm);
  }
  if (rank != 0) {
    MPI_Barrier(comm);
    return;
  }
  const long long depth = level("mpix_unexpected_depth");
  MPI_Recv(&sent_by_ring, 1, MPI_LONG_LONG, 1, kTag + 100, comm, MPI_STATUS_IGNORE);
  MTEST_CHECK(sent_by_ring < kN || depth >= kN,
              "%s: %lld of %d messages in mpix's queue after the barrier, though the rings carried them", name,
              depth, kN);
  for (int i = 0; i < kN; i++) {
    uint64_t v = 0;
    MPI_Recv(&v, 1, MPI_UINT64_T, 1, kTag + i % 7, comm, MPI_STATUS_IGNORE);
    MTEST_CHECK(v == 977u * (uint64_t)i + 5, "%s: message %d after the barrier: %llu", name, i,
                (unsigned long long)v);
  }
  MPI_Barrier(comm);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2 || size > 3) {
    if (rank == 0) fprintf(stderr, "recv_arrived: run with 2 or 3 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  mtest_comm_t comms[MTEST_MAX_COMMS];
  /* MPI_COMM_WORLD counts when MPIX_INTERCEPT=all makes it mpix's (with
   * wildcards allowed: the other matcher). */
  int handled_world = 0;
  MPIX_Comm_is_handled(MPI_COMM_WORLD, &handled_world);
  const int n = mtest_get_comms(MTEST_COMM_NOWILDCARD | MTEST_COMM_ASSERT_BOTH | (handled_world ? MTEST_COMM_WORLD : 0),
                                comms);
  for (int i = 0; i < n; i++) {
    mtest_check_handled(comms[i].comm, comms[i].name);
    MPI_Comm_set_errhandler(comms[i].comm, MPI_ERRORS_RETURN);
    flood(comms[i].comm, comms[i].name);
    promises(comms[i].comm, comms[i].name);
    taken_in_by_barrier(comms[i].comm, comms[i].name);
  }
  mtest_free_comms(comms, n);
  return mtest_finalize();
}
