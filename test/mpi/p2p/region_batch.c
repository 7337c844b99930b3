/* Batch matching inside an unordered region: rank 0 opens a region on a
 * no-wildcard communicator and posts many receives (REGION_BATCH_N per
 * sender, default 3000, over 37 tags so that keys repeat), first with the
 * messages already sent (the receives meet a flood of arrivals: one large
 * batch), then before the messages are sent (arrivals trickle in against
 * waiting receives), with a receive posted before the open that must still
 * get the first message of its key, and with some rendezvous sizes. Every
 * payload is checked and every message must be received exactly once by a
 * receive of its source and tag. Run with MPIX_VERBOSE=1 the testlist also
 * checks the statistics line (batches happened; with a GPU and
 * MPIX_GPU_MATCH_THRESHOLD=1, pairs matched on the GPU). REGION_BATCH_NEED_GPU
 * (test/gpu/testlist): skip visibly where no NVIDIA device node exists. */
#include <stdlib.h>
#include <unistd.h>

#include "mpix.h"
#include "mtest.h"

#define NTAGS 37
#define MARK NTAGS /* a tag of its own: the marker after a sender's messages */
#define BIG 20000 /* past the eager limit */

static int rank, size, n;

/* Rendezvous sizes only in runs of modest size (each receive can get one). */
static int cap(void) { return n <= 5000 ? BIG : 40; }
static int bytes_of(int seq) { return seq % 101 == 50 && n <= 5000 ? BIG : 4 + 4 * (seq % 9); }
static unsigned char pat(int source, int seq, int i) { return (unsigned char)(source * 31 + seq * 7 + i); }

static void fill(unsigned char *b, int source, int seq) {
  memcpy(b, &seq, sizeof(int));
  for (int i = 4; i < bytes_of(seq); i++) b[i] = pat(source, seq, i);
}

/* Sends seq 0..n-1 (tag seq % NTAGS) to rank 0, then (barrier_between) an
 * empty marker message and a barrier; returns after the sends completed. */
static void send_all(MPI_Comm comm, int barrier_between) {
  MPI_Request *reqs = malloc(sizeof(MPI_Request) * n);
  unsigned char **bufs = malloc(sizeof(unsigned char *) * n);
  for (int seq = 0; seq < n; seq++) {
    bufs[seq] = malloc(bytes_of(seq));
    fill(bufs[seq], rank, seq);
    MPI_Isend(bufs[seq], bytes_of(seq), MPI_BYTE, 0, seq % NTAGS, comm, &reqs[seq]);
  }
  if (barrier_between) {
    MPI_Send(NULL, 0, MPI_BYTE, 0, MARK, comm);
    MPI_Barrier(comm);
  }
  MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
  for (int seq = 0; seq < n; seq++) free(bufs[seq]);
  free(bufs);
  free(reqs);
}

typedef struct {
  unsigned char *buf;
  MPI_Request req;
  int source, tag;
} recv_t;

/* Posts receives for every (sender, seq) in tag order per sender, skipping
 * `skip` receives of (1, tag 0) (posted elsewhere). */
static recv_t *post_all(MPI_Comm comm, int *count, int skip) {
  recv_t *r = malloc(sizeof(recv_t) * (size_t)n * (size_t)size);
  int k = 0;
  for (int seq = 0; seq < n; seq++)
    for (int s = 1; s < size; s++) {
      if (s == 1 && seq % NTAGS == 0 && skip > 0) {
        skip--;
        continue;
      }
      r[k].buf = malloc(cap());
      r[k].source = s;
      r[k].tag = seq % NTAGS;
      MPI_Irecv(r[k].buf, cap(), MPI_BYTE, s, r[k].tag, comm, &r[k].req);
      k++;
    }
  *count = k;
  return r;
}

/* Checks one received message; marks it in seen[(source-1)*n + seq]. */
static void check_one(const char *phase, unsigned char *buf, const MPI_Status *st, int source, int tag,
                      unsigned char *seen) {
  int seq = -1, bytes = -1;
  MPI_Get_count(st, MPI_BYTE, &bytes);
  memcpy(&seq, buf, sizeof(int));
  MTEST_CHECK(st->MPI_SOURCE == source && st->MPI_TAG == tag, "%s: status %d/%d for a receive of %d/%d", phase,
              st->MPI_SOURCE, st->MPI_TAG, source, tag);
  if (seq < 0 || seq >= n || seq % NTAGS != tag || bytes != bytes_of(seq)) {
    MTEST_CHECK(0, "%s: from %d tag %d: seq %d, %d bytes", phase, source, tag, seq, bytes);
    return;
  }
  MTEST_CHECK(!seen[(size_t)(source - 1) * n + seq], "%s: message %d from %d received twice", phase, seq, source);
  seen[(size_t)(source - 1) * n + seq] = 1;
  for (int i = 4; i < bytes; i++)
    if (buf[i] != pat(source, seq, i)) {
      MTEST_CHECK(0, "%s: message %d from %d: byte %d wrong", phase, seq, source, i);
      return;
    }
}

static void wait_check(const char *phase, recv_t *r, int count, unsigned char *seen) {
  for (int k = 0; k < count; k++) {
    MPI_Status st;
    MPI_Wait(&r[k].req, &st);
    check_one(phase, r[k].buf, &st, r[k].source, r[k].tag, seen);
    free(r[k].buf);
  }
  free(r);
}

static void all_seen(const char *phase, const unsigned char *seen) {
  int missing = 0;
  for (size_t i = 0; i < (size_t)n * (size_t)(size - 1); i++) missing += !seen[i];
  MTEST_CHECK(missing == 0, "%s: %d messages not received", phase, missing);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (getenv("REGION_BATCH_NEED_GPU") && access("/dev/nvidiactl", F_OK) != 0) {
    if (rank == 0) mtest_printf("skipped: no GPU\n");
    MPI_Finalize();
    return 77;
  }
  n = getenv("REGION_BATCH_N") ? atoi(getenv("REGION_BATCH_N")) : 3000;
  if (n < NTAGS) n = NTAGS;
  MPI_Comm comm;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &comm);
  unsigned char *seen = rank == 0 ? calloc((size_t)n * (size_t)size, 1) : NULL;

  /* 1. Messages first: the receives meet them in large batches. Each
   * sender's marker comes after its messages (one link, in order), so once
   * the markers are received every message waits in mpix's queues and the
   * region's first receive sees all of them (MPIX_REGION_BATCH_MIN). */
  if (rank == 0) {
    MPI_Barrier(comm);
    for (int s = 1; s < size; s++) MPI_Recv(NULL, 0, MPI_BYTE, s, MARK, comm, MPI_STATUS_IGNORE);
    MPIX_Unordered_region_open(comm);
    int count = 0;
    recv_t *r = post_all(comm, &count, 0);
    wait_check("messages first", r, count, seen);
    MPIX_Unordered_region_close(comm);
    all_seen("messages first", seen);
  } else {
    send_all(comm, 1);
  }
  MPI_Barrier(comm);

  /* 2. Receives first, and one receive posted before the open: it gets the
   * first message of its key, whatever the region does with the others. */
  if (rank == 0) {
    memset(seen, 0, (size_t)n * (size_t)size);
    unsigned char *first = malloc(cap());
    MPI_Request before;
    MPI_Irecv(first, cap(), MPI_BYTE, 1, 0, comm, &before);
    MPIX_Unordered_region_open(comm);
    int count = 0;
    recv_t *r = post_all(comm, &count, 1);
    MPI_Barrier(comm);
    MPI_Status st;
    MPI_Wait(&before, &st);
    int seq = -1;
    memcpy(&seq, first, sizeof(int));
    MTEST_CHECK(seq == 0, "receives first: the receive posted before the region got seq %d, not 0", seq);
    check_one("receives first", first, &st, 1, 0, seen);
    free(first);
    wait_check("receives first", r, count, seen);
    MPIX_Unordered_region_close(comm);
    all_seen("receives first", seen);
  } else {
    MPI_Barrier(comm);
    send_all(comm, 0);
  }
  free(seen);
  MPI_Comm_free(&comm);
  return mtest_finalize();
}
