/* Lanes (MPIX_LANES, src/p2p/lanes.h) under MPI_THREAD_MULTIPLE, on an
 * MPIX_Comm_dup_nowildcard communicator, every rank with every other.
 *
 * Part 1: LANES_THREADS threads per rank, thread t on its own block of 64
 * tags (its own lane at the default MPIX_LANE_TAG_SHIFT). Each window it
 * posts, for every peer, 64 receives on 8 tags (8 messages per key, in
 * order), then sends the same pattern, then waits for all. The messages of
 * one key mix every path: lane sizes (4 B up to the lane limit), engine
 * eager and rendezvous/single-copy sizes, synchronous sends, a strided
 * type, blocking sends; each carries its position within its key, which
 * must arrive in order (MPI's non-overtaking rule across the lanes' rings
 * and the engine, the marks' promise), every byte checked, statuses too.
 * Buffers are refilled for the next window as soon as Waitall returns.
 *
 * Part 2 (ranks 0 and 1, one thread): probes, Mprobe/Mrecv, cancel, and
 * MPI_Request_free of lane receives; Waitany/Testsome over lane requests;
 * Sendrecv and messages to oneself.
 *
 * mpix carried it: the communicator must have the lanes MPIX_LANES
 * promises (4 for auto, the default, at MPI_THREAD_MULTIPLE; none where
 * MPIX_SHM_RING is off), as MPI_Comm_get_info's mpix_lanes says, and with
 * lanes mpix_lane_messages and mpix_lane_marks must both rise (summed over
 * ranks); with none the test still runs and says "lanes off". Skipped
 * where MPI_THREAD_MULTIPLE is not provided. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mtest.h"

#define WINDOW 64
#define KEYS 8
#define MAX_THREADS 8

static int rank, size, nthreads = 4, iters = 30;
static MPI_Comm comm;
static MPI_Datatype strided; /* an int, then a gap of one: n of them span 2n ints */
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;

/* Message w of a window: its size in ints and how it is sent. */
enum { PLAIN, SYNC, STRIDED, BLOCKING };
/* Ints: lane sizes, around the default lane limit (MPIX_LANE_EAGER_LIMIT,
 * 1 KiB), around the most a lane carries (a quarter of a 64 KiB ring, less
 * headers: 16 KiB), engine eager, and now and then a rendezvous or single
 * copy (280 KB). */
static const int sizes[] = {1, 2, 3, 16, 100, 255, 256, 257, 1000, 4000, 4080, 4090, 4100, 4200, 20000};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define LARGE 70000
static int ints_of(int it, int w) { return (it + w) % 29 == 0 ? LARGE : sizes[(it * 7 + w * 5) % NSIZES]; }
static int how_of(int it, int w) {
  const int k = (it + w) % 13;
  if (k == 5) return SYNC;
  if (k == 9) return STRIDED;
  if (k == 11) return BLOCKING;
  return PLAIN;
}
static int value(int from, int t, int it, int w, int i) { return from * 7919 + t * 104729 + it * 31 + w * 1013 + i; }

static void fail(const char *what, int t, int it, int w, int peer) {
  pthread_mutex_lock(&err_lock);
  if (mtest_errors < 20)
    fprintf(stderr, "[rank %d] thread %d iteration %d message %d peer %d: %s\n", rank, t, it, w, peer, what);
  mtest_errors++;
  pthread_mutex_unlock(&err_lock);
}

static void *worker(void *arg) {
  const int t = (int)(long)arg;
  const int peers = size - 1;
  int **in = malloc(sizeof(int *) * (size_t)peers * WINDOW), **out = malloc(sizeof(int *) * (size_t)peers * WINDOW);
  MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)peers * WINDOW * 2);
  MPI_Status *sts = malloc(sizeof(MPI_Status) * (size_t)peers * WINDOW * 2);
  for (int it = 0; it < iters; it++) {
    int nreq = 0;
    for (int j = 0; j < peers * WINDOW; j++) {
      const size_t n = (size_t)2 * (size_t)ints_of(it, j % WINDOW) + 1; /* the strided layout's room */
      in[j] = malloc(n * sizeof(int));
      out[j] = malloc(n * sizeof(int));
    }
    for (int p = 0, j = 0; p < size; p++) {
      if (p == rank) continue;
      for (int w = 0; w < WINDOW; w++, j++) {
        const int n = ints_of(it, w), tag = t * 64 + w % KEYS;
        if (how_of(it, w) == STRIDED) MPI_Irecv(in[j], n, strided, p, tag, comm, &reqs[nreq++]);
        else MPI_Irecv(in[j], n, MPI_INT, p, tag, comm, &reqs[nreq++]);
      }
    }
    const int nrecv = nreq;
    for (int p = 0, j = 0; p < size; p++) {
      if (p == rank) continue;
      for (int w = 0; w < WINDOW; w++, j++) {
        const int n = ints_of(it, w), tag = t * 64 + w % KEYS, how = how_of(it, w);
        int *o = out[j];
        for (int i = 0; i < n; i++) o[how == STRIDED ? 2 * i : i] = value(rank, t, it, w, i);
        /* The position within its key, first. */
        o[0] = w / KEYS;
        if (how == SYNC) MPI_Issend(o, n, MPI_INT, p, tag, comm, &reqs[nreq++]);
        else if (how == STRIDED) MPI_Isend(o, n, strided, p, tag, comm, &reqs[nreq++]);
        else if (how == BLOCKING) MPI_Send(o, n, MPI_INT, p, tag, comm);
        else MPI_Isend(o, n, MPI_INT, p, tag, comm, &reqs[nreq++]);
      }
    }
    if (MPI_Waitall(nreq, reqs, sts) != MPI_SUCCESS) fail("MPI_Waitall failed", t, it, -1, -1);
    for (int k = 0; k < nreq; k++)
      if (reqs[k] != MPI_REQUEST_NULL) fail("request not freed by MPI_Waitall", t, it, k, -1);
    for (int p = 0, j = 0, r = 0; p < size; p++) {
      if (p == rank) continue;
      for (int w = 0; w < WINDOW; w++, j++, r++) {
        const int n = ints_of(it, w), tag = t * 64 + w % KEYS, how = how_of(it, w);
        const int *b = in[j];
        int count = -1;
        MPI_Get_count(&sts[r], how == STRIDED ? strided : MPI_INT, &count);
        if (sts[r].MPI_SOURCE != p || sts[r].MPI_TAG != tag || count != n) {
          fail("status (source, tag or count)", t, it, w, p);
          continue;
        }
        if (b[0] != w / KEYS) {
          fail("out of order within its key", t, it, w, p);
          continue;
        }
        for (int i = 1; i < n; i++)
          if (b[how == STRIDED ? 2 * i : i] != value(p, t, it, w, i)) {
            fail("payload", t, it, w, p);
            break;
          }
      }
    }
    (void)nrecv;
    /* Reused at once (the next window's buffers come from the same heap). */
    for (int j = 0; j < peers * WINDOW; j++) {
      free(in[j]);
      free(out[j]);
    }
  }
  free(in);
  free(out);
  free(reqs);
  free(sts);
  return NULL;
}

/* Part 2 on ranks 0 (sender) and 1 (receiver). */
static void semantics(void) {
  MPI_Comm pair; /* ranks 0 and 1: their barriers below */
  MPI_Comm_split(MPI_COMM_WORLD, rank <= 1 ? 0 : MPI_UNDEFINED, rank, &pair);
  if (rank > 1) return;
  const int me = rank, other = 1 - rank;
  int buf[4] = {0}, a[4] = {0}, b[4] = {0};
  MPI_Status st;
  MPI_Request r[3];
  /* Probe, Iprobe, Mprobe of lane messages. */
  if (me == 0) {
    for (int k = 0; k < 3; k++) {
      buf[0] = 100 + k;
      MPI_Send(buf, 1 + k, MPI_INT, other, 900, comm);
    }
  } else {
    int flag = 0, count = -1;
    MPI_Probe(other, 900, comm, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    MTEST_CHECK(count == 1 && st.MPI_TAG == 900, "probe: count %d tag %d", count, st.MPI_TAG);
    MPI_Recv(a, 1, MPI_INT, other, 900, comm, MPI_STATUS_IGNORE);
    MTEST_CHECK(a[0] == 100, "probe's message: %d", a[0]);
    while (!flag) MPI_Iprobe(other, 900, comm, &flag, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    MTEST_CHECK(count == 2, "iprobe: count %d", count);
    MPI_Message msg;
    MPI_Mprobe(other, 900, comm, &msg, &st);
    MPI_Mrecv(a, 2, MPI_INT, &msg, &st);
    MTEST_CHECK(a[0] == 101, "mrecv: %d", a[0]);
    MPI_Recv(a, 3, MPI_INT, other, 900, comm, &st);
    MTEST_CHECK(a[0] == 102, "third: %d", a[0]);
  }
  MPI_Barrier(pair);
  /* Cancel a posted lane receive; the message goes to the next. */
  if (me == 1) {
    int cancelled = 0;
    MPI_Irecv(a, 1, MPI_INT, other, 901, comm, &r[0]);
    MPI_Cancel(&r[0]);
    MPI_Wait(&r[0], &st);
    MPI_Test_cancelled(&st, &cancelled);
    MTEST_CHECK(cancelled, "lane receive not cancelled");
  }
  MPI_Barrier(pair);
  if (me == 0) {
    buf[0] = 7;
    MPI_Send(buf, 1, MPI_INT, other, 901, comm);
  } else {
    MPI_Recv(b, 1, MPI_INT, other, 901, comm, &st);
    MTEST_CHECK(b[0] == 7, "after cancel: %d", b[0]);
  }
  /* MPI_Request_free of an active lane receive: it still takes the first
   * message; the next receive the second. */
  if (me == 1) {
    a[0] = b[0] = -1;
    MPI_Irecv(a, 1, MPI_INT, other, 902, comm, &r[0]);
    MPI_Request_free(&r[0]);
    MTEST_CHECK(r[0] == MPI_REQUEST_NULL, "freed handle not null");
    MPI_Irecv(b, 1, MPI_INT, other, 902, comm, &r[1]);
  }
  MPI_Barrier(pair);
  if (me == 0) {
    buf[0] = 11;
    MPI_Send(buf, 1, MPI_INT, other, 902, comm);
    buf[0] = 12;
    MPI_Send(buf, 1, MPI_INT, other, 902, comm);
  } else {
    MPI_Wait(&r[1], &st);
    MTEST_CHECK(b[0] == 12 && a[0] == 11, "request_free: freed got %d, next got %d", a[0], b[0]);
  }
  /* Waitany and Testsome over lane requests (the engine's way). */
  if (me == 1) {
    for (int k = 0; k < 3; k++) MPI_Irecv(&a[k], 1, MPI_INT, other, 903 + k, comm, &r[k]);
    int idx = -1, done = 0, outcount = 0, indices[3];
    MPI_Waitany(3, r, &idx, &st);
    MTEST_CHECK(idx >= 0 && idx < 3 && a[idx] == 903 + idx, "waitany: index %d", idx);
    done = 1;
    while (done < 3) {
      MPI_Testsome(3, r, &outcount, indices, MPI_STATUSES_IGNORE);
      if (outcount != MPI_UNDEFINED) done += outcount;
    }
    for (int k = 0; k < 3; k++) MTEST_CHECK(a[k] == 903 + k, "testsome: %d got %d", k, a[k]);
  } else {
    for (int k = 2; k >= 0; k--) {
      buf[0] = 903 + k;
      MPI_Send(buf, 1, MPI_INT, other, 903 + k, comm);
    }
  }
  /* Sendrecv between the two, and a message to oneself. */
  buf[0] = 1000 + me;
  MPI_Sendrecv(buf, 1, MPI_INT, other, 910, a, 1, MPI_INT, other, 910, comm, &st);
  MTEST_CHECK(a[0] == 1000 + other, "sendrecv: %d", a[0]);
  MPI_Isend(buf, 1, MPI_INT, me, 911, comm, &r[0]);
  MPI_Recv(b, 1, MPI_INT, me, 911, comm, MPI_STATUS_IGNORE);
  MPI_Wait(&r[0], MPI_STATUS_IGNORE);
  MTEST_CHECK(b[0] == 1000 + me, "to oneself: %d", b[0]);
  MPI_Comm_free(&pair);
}

/* What MPIX_LANES promises a communicator of one node at
 * MPI_THREAD_MULTIPLE: its number, or for auto (the default) 4, none
 * where MPIX_SHM_RING is off. */
static int expected_lanes(void) {
  const char *lanes = getenv("MPIX_LANES"), *rings = getenv("MPIX_SHM_RING");
  if (lanes != NULL && strcmp(lanes, "auto") != 0) return atoi(lanes);
  if (rings != NULL && (strcmp(rings, "off") == 0 || strcmp(rings, "0") == 0)) return 0;
  return 4;
}

static int comm_lanes(MPI_Comm c) {
  MPI_Info info;
  char value[MPI_MAX_INFO_VAL + 1] = "";
  int flag = 0;
  MPI_Comm_get_info(c, &info);
  MPI_Info_get(info, "mpix_lanes", MPI_MAX_INFO_VAL, value, &flag);
  MPI_Info_free(&info);
  return flag ? atoi(value) : 0;
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE) {
    mtest_not_checked("MPI_THREAD_MULTIPLE not provided");
    return mtest_finalize();
  }
  if (getenv("LANES_THREADS")) nthreads = atoi(getenv("LANES_THREADS"));
  if (getenv("LANES_ITERS")) iters = atoi(getenv("LANES_ITERS"));
  if (nthreads < 1 || nthreads > MAX_THREADS) nthreads = 4;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &comm);
  mtest_check_handled(comm, "the no-wildcard duplicate");
  const int expected = expected_lanes(), lanes = comm_lanes(comm), lanes_on = lanes > 0;
  MTEST_CHECK(lanes == expected, "the communicator has %d lanes (MPI_Comm_get_info's mpix_lanes), expected %d",
              lanes, expected);
  MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &strided);
  MPI_Type_commit(&strided);
  mtest_pvar_t messages = mtest_pvar_open("mpix_lane_messages"), marks = mtest_pvar_open("mpix_lane_marks");
  const long long m0 = mtest_pvar_read(&messages), k0 = mtest_pvar_read(&marks);

  pthread_t tid[MAX_THREADS];
  for (int t = 0; t < nthreads; t++) pthread_create(&tid[t], NULL, worker, (void *)(long)t);
  for (int t = 0; t < nthreads; t++) pthread_join(tid[t], NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  semantics();
  MPI_Barrier(MPI_COMM_WORLD);

  long long mine[2] = {mtest_pvar_read(&messages) - m0, mtest_pvar_read(&marks) - k0}, all[2] = {0, 0};
  MPI_Allreduce(mine, all, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (lanes_on) {
    MTEST_CHECK(messages.ok && marks.ok, "the lane counters are not there");
    MTEST_CHECK(all[0] > 0, "no message went through a lane (mpix_lane_messages %lld)", all[0]);
    MTEST_CHECK(all[1] > 0, "no engine envelope was ordered by a mark (mpix_lane_marks %lld)", all[1]);
  } else if (rank == 0) {
    mtest_printf("lanes off\n");
  }
  if (rank == 0 && lanes_on)
    mtest_printf("lane messages %lld, marks %lld (all ranks)\n", all[0], all[1]);
  MPI_Type_free(&strided);
  MPI_Comm_free(&comm);
  return mtest_finalize();
}
