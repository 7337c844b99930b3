/* The proxy path of device send/recv with thousands of operations in flight
 * (MPIX_DEVICE_PROXY_HOSTMEM=1: host threads play the GPU threads), the
 * load under which a poll that looked at every operation in flight made the
 * host fall behind a GPU. Every rank runs THREADS threads; each keeps a
 * window of operations in flight on its own tag (a quarter of the queue in
 * all, at most 4096; work() says why not more), sending to the next rank
 * and receiving from the previous one, alternating, with sizes 0..200
 * bytes (in the descriptor and in the bounce buffers). Every received
 * message is checked: size and contents are those of the send with the
 * same sequence number on that (source, tag), so FIFO order per key holds
 * too. Then truncated receives (inline and bounce buffer) must reach the
 * communicator's error handler, once each, and come back as
 * MPIX_DEVICE_ERR_TRUNCATE. Any number of ranks >= 2. */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mpix_device.h"
#include "mtest.h"

enum { THREADS = 4, MAX_WINDOW = 1024, OPS = 8000, MAX_BYTES = 200 };

typedef struct {
  MPIX_Device_request req;
  unsigned char buf[MAX_BYTES];
} Op;

typedef struct Worker {
  const MPIX_Device_comm *h;
  int rank, to, from, tid;
  long window;
  long errors;
  long done; /* operations completed (atomic: read by the other workers) */
  struct Worker *all;
  Op *ring;
} Worker;

/* Message j of (source, thread): its size and its bytes. */
static size_t msg_size(int src, int tid, long j) { return (size_t)((j * 37 + tid * 11 + src * 5) % (MAX_BYTES + 1)); }
static unsigned char msg_byte(int src, int tid, long j, size_t i) {
  return (unsigned char)(((uint64_t)j * 2654435761u + (uint64_t)i * 40503u + (uint64_t)tid * 97u + (uint64_t)src) >> 7);
}

/* Waiting threads yield, then sleep briefly: with several ranks of
 * several threads on few cores, the progress threads need the cores. */
static void backoff(unsigned *tries) {
  if (++*tries < 8) {
    sched_yield();
    return;
  }
  const struct timespec ts = {0, 20000};
  nanosleep(&ts, NULL);
}

static int is_send(long i) { return i % 2 == 0; }

static int handler_calls = 0; /* atomic: called on the progress thread */
static int handler_class = MPI_SUCCESS;

static void count_errors(MPI_Comm *comm, int *code, ...) {
  (void)comm;
  __atomic_store_n(&handler_class, mtest_class(*code), __ATOMIC_RELAXED);
  __atomic_fetch_add(&handler_calls, 1, __ATOMIC_ACQ_REL);
}

static int wait_req(const MPIX_Device_comm *h, MPIX_Device_request *r) {
  int rc;
  unsigned tries = 0;
  while ((rc = mpixd_test(h, r)) == MPIX_DEVICE_PENDING) backoff(&tries);
  return rc;
}

/* n bytes sent to `to` and received from `from` into a cap-byte buffer. */
static int exchange(const MPIX_Device_comm *h, int to, int from, int tag, size_t n, size_t cap) {
  unsigned char out[MAX_BYTES] = {0}, in[MAX_BYTES];
  MPIX_Device_request s, r;
  unsigned tries = 0;
  while (mpixd_irecv(h, in, cap, from, tag, &r) == MPIX_DEVICE_AGAIN) backoff(&tries);
  while (mpixd_isend(h, out, n, to, tag, &s) == MPIX_DEVICE_AGAIN) backoff(&tries);
  const int src = wait_req(h, &s);
  const int rrc = wait_req(h, &r);
  return src != MPIX_DEVICE_SUCCESS ? src : rrc;
}

/* Operation i: posted now (1) or the queue is full (0). */
static int try_post(Worker *w, long i) {
  Op *op = &w->ring[i % w->window];
  const long j = i / 2;
  int rc;
  if (is_send(i)) {
    const size_t n = msg_size(w->rank, w->tid, j);
    for (size_t k = 0; k < n; ++k) op->buf[k] = msg_byte(w->rank, w->tid, j, k);
    rc = mpixd_isend(w->h, op->buf, n, w->to, w->tid, &op->req);
  } else {
    for (size_t k = 0; k < MAX_BYTES; ++k) op->buf[k] = 0xee;
    rc = mpixd_irecv(w->h, op->buf, MAX_BYTES, w->from, w->tid, &op->req);
  }
  if (rc == MPIX_DEVICE_AGAIN) return 0;
  if (rc != MPIX_DEVICE_SUCCESS) {
    if (w->errors++ < 5) fprintf(stderr, "[rank %d] thread %d op %ld: post returned %d\n", w->rank, w->tid, i, rc);
    op->req.state = MPIXD_INACTIVE;
  }
  return 1;
}

/* Operation i: completed and checked (1) or still running (0). */
static int try_finish(Worker *w, long i) {
  Op *op = &w->ring[i % w->window];
  const long j = i / 2;
  const int rc = mpixd_test(w->h, &op->req);
  if (rc == MPIX_DEVICE_PENDING) return 0;
  int ok = rc == MPIX_DEVICE_SUCCESS;
  if (ok && !is_send(i)) {
    const size_t n = msg_size(w->from, w->tid, j);
    ok = op->req.msg_bytes == n;
    for (size_t k = 0; ok && k < n; ++k) ok = op->buf[k] == msg_byte(w->from, w->tid, j, k);
  }
  if (!ok && w->errors++ < 5)
    fprintf(stderr, "[rank %d] thread %d %s %ld: status %d, %zu bytes\n", w->rank, w->tid,
            is_send(i) ? "send" : "receive", j, rc, (size_t)op->req.msg_bytes);
  return 1;
}

static long min_done(const Worker *w) {
  long m = OPS;
  for (int t = 0; t < THREADS; ++t) {
    const long d = __atomic_load_n(&w->all[t].done, __ATOMIC_ACQUIRE);
    if (d < m) m = d;
  }
  return m;
}

/* Posts while the window has room, completes in order, and never runs more
 * than a window ahead of the slowest thread, so at most THREADS * window
 * slots are held and the queue (4x that) never fills: a receive holds its
 * slot until it completes, so a full queue on both ranks whose receives
 * wait for sends the peer cannot post would deadlock (mpix_device(7)). */
static void *work(void *arg) {
  Worker *w = arg;
  long posted = 0, done = 0, floor = 0;
  unsigned tries = 0;
  while (done < OPS) {
    int moved = 0;
    if (posted < OPS && posted - done < w->window) {
      if (posted >= floor + 2 * w->window) floor = min_done(w);
      if (posted < floor + 2 * w->window && try_post(w, posted)) {
        ++posted;
        moved = 1;
      }
    }
    if (done < posted && try_finish(w, done)) {
      ++done;
      __atomic_store_n(&w->done, done, __ATOMIC_RELEASE);
      moved = 1;
    }
    if (moved) tries = 0;
    else backoff(&tries);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int provided = 0, rank = 0, size = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm comm;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &comm);
  MPI_Errhandler eh;
  MPI_Comm_create_errhandler(count_errors, &eh);
  MPI_Comm_set_errhandler(comm, eh);
  MPI_Errhandler_free(&eh);
  MPIX_Device_comm h;
  const int rc = MPIX_Comm_device_handle(comm, &h);
  MTEST_CHECK(rc == MPI_SUCCESS, "handle: %d", rc);
  if (rc != MPI_SUCCESS || size < 2) {
    MPI_Comm_free(&comm);
    return mtest_finalize();
  }
  MTEST_CHECK(h.path == MPIXD_PATH_PROXY, "proxy path chosen");
  long window = (long)h.pq_slots / 4 / THREADS;
  if (window > MAX_WINDOW) window = MAX_WINDOW;
  if (window < 1) window = 1;
  pthread_t tid[THREADS];
  Worker w[THREADS];
  /* Every worker set up before any starts: each reads the others' progress. */
  for (int t = 0; t < THREADS; ++t)
    w[t] = (Worker){&h, rank, (rank + 1) % size, (rank + size - 1) % size, t, window, 0, 0, w,
                    calloc((size_t)window, sizeof(Op))};
  for (int t = 0; t < THREADS; ++t) pthread_create(&tid[t], NULL, work, &w[t]);
  long errors = 0;
  for (int t = 0; t < THREADS; ++t) {
    pthread_join(tid[t], NULL);
    errors += w[t].errors;
    free(w[t].ring);
  }
  MTEST_CHECK(errors == 0, "%ld operations failed or received the wrong message (window %ld x %d threads)", errors,
              window, THREADS);
  MTEST_CHECK(__atomic_load_n(&handler_calls, __ATOMIC_ACQUIRE) == 0, "error handler called %d times",
              handler_calls);

  /* Truncation: 8 bytes into 4 (inline), 150 into 100 (bounce buffer). */
  const int to = (rank + 1) % size, from = (rank + size - 1) % size;
  int trc = exchange(&h, to, from, 9000, 8, 4);
  MTEST_CHECK(trc == MPIX_DEVICE_ERR_TRUNCATE, "inline truncation: %d", trc);
  trc = exchange(&h, to, from, 9001, 150, 100);
  MTEST_CHECK(trc == MPIX_DEVICE_ERR_TRUNCATE, "bounce truncation: %d", trc);
  MTEST_CHECK(__atomic_load_n(&handler_calls, __ATOMIC_ACQUIRE) == 2 && handler_class == MPI_ERR_TRUNCATE,
              "error handler: %d calls, class %d", handler_calls, handler_class);
  MPI_Comm_free(&comm);
  return mtest_finalize();
}
