/* Unordered regions (MPIX_Unordered_region_open/close) on handled
 * communicators: the receives a region posts for one (source, tag) get
 * exactly the messages the same receives would get without the region, in
 * some order, while receives posted before the open and after the close keep
 * MPI's order around them; with receives posted before the messages arrive
 * and after (unexpected), eager and rendezvous sizes, two tags and two
 * sources at once. Blocking receives and probes inside a region (a probe
 * returns some pending message of its key; Mprobe/Mrecv take one). Close
 * does not wait for the region's pending receives. Sends are not affected
 * by a region open on the sender. A region on one communicator leaves the
 * others ordered. Many open/close cycles. Communicators:
 * MPIX_Comm_dup_nowildcard, dup_with_info with both assertions, with
 * no_any_tag only, and MPI_COMM_WORLD when it is handled
 * (MPIX_INTERCEPT=all). Rank 0 receives, ranks 1 and 2 send; others join.
 * mpix only (the region calls); plain MPI order also passes every check. */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

typedef struct {
  MPI_Comm comm;
  const char *name;
} tcomm_t;

static int rank, size, nsenders;

#define MAXSEQ 200
#define CAP 80000 /* bytes: the largest message fits */

/* Sizes are unique per sequence number; every 4th is past the eager limit. */
static int bytes_of(int seq) { return 8 * (seq + 1) + (seq % 4 == 2 ? 70000 : 0); }
static unsigned char pat(int source, int tag, int seq, int i) { return (unsigned char)(source * 7 + tag * 5 + seq * 3 + i); }

static unsigned char *make_msg(int source, int tag, int seq) {
  const int n = bytes_of(seq);
  unsigned char *m = malloc(n);
  memcpy(m, &seq, sizeof(int));
  for (int i = 4; i < n; i++) m[i] = pat(source, tag, seq, i);
  return m;
}

/* The sequence number of a received message after checking it, or -1. */
static int check_msg(const tcomm_t *tc, const unsigned char *buf, const MPI_Status *st, int source, int tag) {
  int seq = -1, n = -1;
  MPI_Get_count(st, MPI_BYTE, &n);
  memcpy(&seq, buf, sizeof(int));
  if (st->MPI_SOURCE != source || st->MPI_TAG != tag || seq < 0 || seq >= MAXSEQ || n != bytes_of(seq)) {
    MTEST_CHECK(0, "on %s: message from %d tag %d: status source %d tag %d count %d, seq %d", tc->name, source, tag,
                st->MPI_SOURCE, st->MPI_TAG, n, seq);
    return -1;
  }
  for (int i = 4; i < n; i++)
    if (buf[i] != pat(source, tag, seq, i)) {
      MTEST_CHECK(0, "on %s: message seq %d from %d tag %d: byte %d wrong", tc->name, seq, source, tag, i);
      return -1;
    }
  return seq;
}

/* Sends seqs first..first+n-1 with tag to rank 0 (nonblocking; waited in
 * wait_sends). */
static MPI_Request sreqs[MAXSEQ * 2];
static unsigned char *sbufs[MAXSEQ * 2];
static int nsreqs = 0;
static void send_msgs(MPI_Comm comm, int tag, int first, int n) {
  for (int seq = first; seq < first + n; seq++) {
    sbufs[nsreqs] = make_msg(rank, tag, seq);
    MPI_Isend(sbufs[nsreqs], bytes_of(seq), MPI_BYTE, 0, tag, comm, &sreqs[nsreqs]);
    nsreqs++;
  }
}
static void wait_sends(void) {
  MPI_Waitall(nsreqs, sreqs, MPI_STATUSES_IGNORE);
  for (int i = 0; i < nsreqs; i++) free(sbufs[i]);
  nsreqs = 0;
}

typedef struct {
  unsigned char *buf;
  MPI_Request req;
  MPI_Status st;
  int source, tag;
} rreq_t;

static void post(rreq_t *r, MPI_Comm comm, int source, int tag) {
  r->buf = malloc(CAP);
  r->source = source;
  r->tag = tag;
  MPI_Irecv(r->buf, CAP, MPI_BYTE, source, tag, comm, &r->req);
}
static int finish(const tcomm_t *tc, rreq_t *r) {
  MPI_Wait(&r->req, &r->st);
  int seq = check_msg(tc, r->buf, &r->st, r->source, r->tag);
  free(r->buf);
  return seq;
}

/* Checks that seqs[0..n) is a permutation of first..first+n-1. */
static void expect_set(const tcomm_t *tc, const char *what, const int *seqs, int n, int first) {
  char seen[MAXSEQ] = {0};
  int ok = 1;
  for (int i = 0; i < n; i++) {
    if (seqs[i] < first || seqs[i] >= first + n || seen[seqs[i]]) ok = 0;
    else seen[seqs[i]] = 1;
  }
  MTEST_CHECK(ok, "%s on %s: the region's receives got another set than messages %d..%d", what, tc->name, first,
              first + n - 1);
}

/* A. Before/inside/after: PRE ordered, IN as a set, POST ordered; tags 5
 *    and 6 from every sender. */
#define PRE 3
#define IN 8
#define POST 3
static void check_set(const tcomm_t *tc, int unexpected) {
  MPI_Comm comm = tc->comm;
  const int total = PRE + IN + POST;
  if (rank >= 1 && rank <= nsenders) {
    if (!unexpected) MPI_Barrier(comm);
    send_msgs(comm, 5, 0, total);
    send_msgs(comm, 6, 0, IN);
    if (unexpected) MPI_Barrier(comm);
    wait_sends();
  } else if (rank == 0) {
    rreq_t pre[2][PRE], in5[2][IN], in6[2][IN], post5[2][POST];
    if (unexpected) MPI_Barrier(comm);
    for (int s = 1; s <= nsenders; s++)
      for (int i = 0; i < PRE; i++) post(&pre[s - 1][i], comm, s, 5);
    MTEST_CHECK(MPIX_Unordered_region_open(comm) == MPI_SUCCESS, "open on %s", tc->name);
    for (int i = 0; i < IN; i++)
      for (int s = 1; s <= nsenders; s++) {
        post(&in5[s - 1][i], comm, s, 5);
        post(&in6[s - 1][i], comm, s, 6);
      }
    MTEST_CHECK(MPIX_Unordered_region_close(comm) == MPI_SUCCESS, "close on %s", tc->name);
    for (int s = 1; s <= nsenders; s++)
      for (int i = 0; i < POST; i++) post(&post5[s - 1][i], comm, s, 5);
    if (!unexpected) MPI_Barrier(comm);
    for (int s = 1; s <= nsenders; s++) {
      int seqs[IN];
      for (int i = 0; i < PRE; i++) {
        int seq = finish(tc, &pre[s - 1][i]);
        MTEST_CHECK(seq == i, "receive %d before the region got seq %d on %s", i, seq, tc->name);
      }
      for (int i = 0; i < IN; i++) seqs[i] = finish(tc, &in5[s - 1][i]);
      expect_set(tc, unexpected ? "tag 5 (unexpected)" : "tag 5 (expected)", seqs, IN, PRE);
      for (int i = 0; i < IN; i++) seqs[i] = finish(tc, &in6[s - 1][i]);
      expect_set(tc, unexpected ? "tag 6 (unexpected)" : "tag 6 (expected)", seqs, IN, 0);
      for (int i = 0; i < POST; i++) {
        int seq = finish(tc, &post5[s - 1][i]);
        MTEST_CHECK(seq == PRE + IN + i, "receive %d after the region got seq %d on %s", i, seq, tc->name);
      }
    }
  } else {
    MPI_Barrier(comm);
  }
  MPI_Barrier(comm);
}

/* B. Blocking receives and probes inside a region: every probe reports a
 *    message still pending for the key; all 12 arrive exactly once. */
static void check_blocking_and_probes(const tcomm_t *tc) {
  MPI_Comm comm = tc->comm;
  enum { N = 12 };
  if (rank == 1) {
    send_msgs(comm, 7, 0, N);
    wait_sends();
  } else if (rank == 0) {
    char got[N] = {0};
    unsigned char *buf = malloc(CAP);
    MPI_Status st;
    MPIX_Unordered_region_open(comm);
    for (int k = 0; k < N; k++) {
      int n = -1, flag = 0;
      if (k % 3 == 0) {
        MPI_Probe(1, 7, comm, &st);
      } else {
        while (!flag) MPI_Iprobe(1, 7, comm, &flag, &st);
      }
      MPI_Get_count(&st, MPI_BYTE, &n);
      int pending = 0;
      for (int seq = 0; seq < N; seq++) pending |= !got[seq] && bytes_of(seq) == n;
      MTEST_CHECK(pending && st.MPI_TAG == 7 && st.MPI_SOURCE == 1,
                  "probe in a region on %s: %d bytes, tag %d, source %d is no pending message", tc->name, n,
                  st.MPI_TAG, st.MPI_SOURCE);
      if (k % 2 == 0) {
        MPI_Recv(buf, CAP, MPI_BYTE, 1, 7, comm, &st);
      } else {
        MPI_Message msg;
        int mn = -1;
        MPI_Mprobe(1, 7, comm, &msg, &st);
        MPI_Get_count(&st, MPI_BYTE, &mn);
        MPI_Mrecv(buf, CAP, MPI_BYTE, &msg, &st);
        MPI_Get_count(&st, MPI_BYTE, &n);
        MTEST_CHECK(mn == n, "Mprobe said %d bytes, Mrecv got %d on %s", mn, n, tc->name);
      }
      int seq = check_msg(tc, buf, &st, 1, 7);
      if (seq >= 0 && seq < N) {
        MTEST_CHECK(!got[seq], "seq %d received twice in a region on %s", seq, tc->name);
        got[seq] = 1;
      }
    }
    MPIX_Unordered_region_close(comm);
    free(buf);
  }
  MPI_Barrier(comm);
}

/* C. Close does not wait: the messages are sent only after the close. */
static void check_close_no_wait(const tcomm_t *tc) {
  MPI_Comm comm = tc->comm;
  enum { N = 5 };
  if (rank == 1) {
    MPI_Barrier(comm);
    send_msgs(comm, 8, 0, N);
    wait_sends();
  } else if (rank == 0) {
    rreq_t r[N];
    int seqs[N], flag = 1;
    MPIX_Unordered_region_open(comm);
    for (int i = 0; i < N; i++) post(&r[i], comm, 1, 8);
    int rc = MPIX_Unordered_region_close(comm);
    MTEST_CHECK(rc == MPI_SUCCESS, "close with pending receives: rc %d on %s", rc, tc->name);
    MPI_Test(&r[0].req, &flag, MPI_STATUS_IGNORE);
    MTEST_CHECK(!flag, "a region receive completed before anything was sent on %s", tc->name);
    MPI_Barrier(comm);
    for (int i = 0; i < N; i++) seqs[i] = finish(tc, &r[i]);
    expect_set(tc, "receives pending at the close", seqs, N, 0);
  } else {
    MPI_Barrier(comm);
  }
  MPI_Barrier(comm);
}

/* D. A region on the sender does not reorder its sends; E. a region on one
 *    communicator leaves another one ordered. */
static void check_sender_and_other_comm(const tcomm_t *tc, MPI_Comm other) {
  MPI_Comm comm = tc->comm;
  enum { N = 10 };
  if (rank == 1) {
    MPIX_Unordered_region_open(comm);
    send_msgs(comm, 9, 0, N);
    MPIX_Unordered_region_close(comm);
    send_msgs(other, 9, 0, N);
    wait_sends();
  } else if (rank == 0) {
    rreq_t r[N], o[N];
    const tcomm_t otc = {other, "the other communicator"};
    for (int i = 0; i < N; i++) post(&r[i], comm, 1, 9);
    MPIX_Unordered_region_open(comm);
    for (int i = 0; i < N; i++) post(&o[i], other, 1, 9);
    MPIX_Unordered_region_close(comm);
    for (int i = 0; i < N; i++) {
      int seq = finish(tc, &r[i]);
      MTEST_CHECK(seq == i, "send in the sender's region overtaken on %s: receive %d got %d", tc->name, i, seq);
      seq = finish(&otc, &o[i]);
      MTEST_CHECK(seq == i, "region on %s reordered another communicator: receive %d got %d", tc->name, i, seq);
    }
  }
  MPI_Barrier(comm);
}

/* H. 20 open/close cycles of 3 receives each, all posted before any send:
 *    cycle k's receives get messages 3k..3k+2. */
static void check_cycles(const tcomm_t *tc) {
  MPI_Comm comm = tc->comm;
  enum { CYCLES = 20, PER = 3 };
  if (rank == 1) {
    MPI_Barrier(comm);
    send_msgs(comm, 10, 0, CYCLES * PER);
    wait_sends();
  } else if (rank == 0) {
    rreq_t r[CYCLES][PER];
    for (int c = 0; c < CYCLES; c++) {
      MPIX_Unordered_region_open(comm);
      for (int i = 0; i < PER; i++) post(&r[c][i], comm, 1, 10);
      MPIX_Unordered_region_close(comm);
    }
    MPI_Barrier(comm);
    for (int c = 0; c < CYCLES; c++) {
      int seqs[PER];
      for (int i = 0; i < PER; i++) seqs[i] = finish(tc, &r[c][i]);
      expect_set(tc, "open/close cycle", seqs, PER, c * PER);
    }
  } else {
    MPI_Barrier(comm);
  }
  MPI_Barrier(comm);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  nsenders = size >= 3 ? 2 : 1;
  tcomm_t comms[4];
  int n = 0, world_handled = 0;
  MPI_Info info;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &comms[n].comm);
  comms[n++].name = "MPIX_Comm_dup_nowildcard";
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_source", "true");
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comms[n].comm);
  comms[n++].name = "dup_with_info(no_any_source,no_any_tag)";
  MPI_Info_free(&info);
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comms[n].comm);
  comms[n++].name = "dup_with_info(no_any_tag)";
  MPI_Info_free(&info);
  MPIX_Comm_is_handled(MPI_COMM_WORLD, &world_handled);
  if (world_handled) {
    comms[n].comm = MPI_COMM_WORLD;
    comms[n++].name = "MPI_COMM_WORLD (MPIX_INTERCEPT=all)";
  }
  MPI_Comm other;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &other);

  for (int i = 0; i < n; i++) {
    check_set(&comms[i], 0);
    check_set(&comms[i], 1);
    check_blocking_and_probes(&comms[i]);
    check_close_no_wait(&comms[i]);
    check_sender_and_other_comm(&comms[i], other);
    check_cycles(&comms[i]);
  }
  for (int i = 0; i < 3; i++) MPI_Comm_free(&comms[i].comm);
  MPI_Comm_free(&other);
  return mtest_finalize();
}
