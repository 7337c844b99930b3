/* Randomized traffic: in each round every rank sends messages of random
 * size (0 B .. 256 KiB, a few above 64 KiB for rendezvous) with random tags
 * (mostly few, so that many messages share a (source, tag)) to random peers,
 * itself included. The plan comes from one seed that every rank knows, so
 * each receiver knows what it will get; it posts its receives in a random
 * order interleaved with its own sends (Isend, Issend; receives by Irecv,
 * persistent Recv_init/Start, and some blocking MPI_Recv at the end),
 * completes them with Waitall, Waitsome, Testany or Wait, and checks every
 * byte, the bytes after each message, and every status against MPI's
 * non-overtaking rule: the n-th receive posted for (source, tag) gets the
 * n-th message sent with that (source, tag).
 *
 * Rounds run on MPIX_Comm_dup_nowildcard, a dup_with_info with both
 * assertions, MPI_COMM_WORLD (handled under MPIX_INTERCEPT=all) and the
 * nowildcard dup again. The seed is fixed (MPIX_TEST_SEED overrides it) and
 * printed on failure; MPIX_TEST_MSGS sets the messages per rank and round.
 * Fails unless mpix carries its
 * no-wildcard communicator (mtest_check_handled). */
#include <stdint.h>
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

#define DEFAULT_SEED 20261122ull
#define SLACK 16 /* receive buffers are this much larger at most */

static int rank, size;
static uint64_t seed;
static int tag_ub;

static uint64_t splitmix(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int below(uint64_t *state, int n) { return (int)(splitmix(state) % (uint64_t)n); }

/* Byte i of message idx of sender s in round r. */
static unsigned char payload(int r, int s, int idx, size_t i) {
  uint64_t x = seed ^ ((uint64_t)r << 56) ^ ((uint64_t)s << 40) ^ ((uint64_t)idx << 20) ^ (i >> 3);
  uint64_t st = x;
  return (unsigned char)(splitmix(&st) >> (8 * (i & 7)));
}

typedef struct {
  int dest, tag, bytes;
} msg_t;

/* The messages sender s sends in round r, in order. */
static void make_plan(int r, int s, int nmsg, msg_t *plan) {
  uint64_t st = seed * 1000003u + (uint64_t)r * 7919u + (uint64_t)s;
  for (int i = 0; i < nmsg; i++) {
    plan[i].dest = below(&st, size);
    plan[i].tag = below(&st, 10) == 0 ? below(&st, tag_ub < 100000 ? tag_ub + 1 : 100000) : below(&st, 4);
    const int kind = below(&st, 100);
    if (kind < 55) plan[i].bytes = below(&st, 257);
    else if (kind < 85) plan[i].bytes = 256 + below(&st, 16 * 1024);
    else if (kind < 97) plan[i].bytes = 16 * 1024 + below(&st, 48 * 1024);
    else plan[i].bytes = 64 * 1024 + below(&st, 192 * 1024 + 1);
  }
}

typedef struct {
  int source, idx;   /* the message this receive must get */
  int bytes, tag;    /* its size and tag */
  int capacity;      /* receive buffer size */
  unsigned char *buf;
  int how;           /* 0 Irecv, 1 persistent, 2 blocking */
  MPI_Request req;
  MPI_Status st;
  int done;
} recv_t;

static void check_recv(int r, const char *name, recv_t *rv) {
  int n = -1;
  MPI_Get_count(&rv->st, MPI_BYTE, &n);
  MTEST_CHECK(rv->st.MPI_SOURCE == rv->source && rv->st.MPI_TAG == rv->tag && n == rv->bytes,
              "round %d on %s: receive for message %d of rank %d (tag %d, %d bytes): status source %d tag %d "
              "count %d",
              r, name, rv->idx, rv->source, rv->tag, rv->bytes, rv->st.MPI_SOURCE, rv->st.MPI_TAG, n);
  long bad = -1;
  for (int i = 0; i < rv->bytes && bad < 0; i++)
    if (rv->buf[i] != payload(r, rv->source, rv->idx, (size_t)i)) bad = i;
  for (int i = rv->bytes; i < rv->capacity && bad < 0; i++)
    if (rv->buf[i] != 0xCD) bad = i;
  MTEST_CHECK(bad < 0, "round %d on %s: message %d of rank %d (%d bytes): byte %ld wrong", r, name, rv->idx,
              rv->source, rv->bytes, bad);
}

static void run_round(int r, MPI_Comm comm, const char *name, int nmsg) {
  msg_t *plan = malloc((size_t)nmsg * sizeof(msg_t));
  uint64_t st = seed * 31u + (uint64_t)r * 131u + (uint64_t)rank * 1009u + 17u; /* this rank's own choices */

  /* What this rank receives: per source, in send order; keyed queues give
   * the n-th receive of a (source, tag) the n-th such message. */
  int nrecv = 0;
  recv_t *recvs = NULL;
  int cap = 0;
  for (int s = 0; s < size; s++) {
    make_plan(r, s, nmsg, plan);
    for (int i = 0; i < nmsg; i++)
      if (plan[i].dest == rank) {
        if (nrecv == cap) {
          cap = cap ? 2 * cap : 64;
          recvs = realloc(recvs, (size_t)cap * sizeof(recv_t));
        }
        recvs[nrecv++] = (recv_t){.source = s, .idx = i, .bytes = plan[i].bytes, .tag = plan[i].tag};
      }
  }
  /* Posting order: a random permutation; then hand out messages per key in
   * send order (recvs[] is sorted by source, then send order). */
  int *order = malloc((size_t)(nrecv + 1) * sizeof(int));
  for (int i = 0; i < nrecv; i++) order[i] = i;
  for (int i = nrecv - 1; i > 0; i--) {
    int j = below(&st, i + 1), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  recv_t *posted = malloc((size_t)(nrecv + 1) * sizeof(recv_t));
  char *taken = calloc((size_t)nrecv + 1, 1);
  for (int k = 0; k < nrecv; k++) {
    const recv_t *want = &recvs[order[k]];
    int pick = -1; /* the oldest not yet taken message of want's key */
    for (int i = 0; i < nrecv && pick < 0; i++)
      if (!taken[i] && recvs[i].source == want->source && recvs[i].tag == want->tag) pick = i;
    taken[pick] = 1;
    posted[k] = recvs[pick];
    posted[k].capacity = posted[k].bytes + below(&st, SLACK + 1);
    posted[k].buf = malloc((size_t)posted[k].capacity + 1);
    memset(posted[k].buf, 0xCD, (size_t)posted[k].capacity);
    const int h = below(&st, 20);
    posted[k].how = h < 2 ? 1 : 0;
    posted[k].req = MPI_REQUEST_NULL;
    posted[k].done = 0;
  }
  /* The last few receives (in posting order) are blocking, after all else. */
  const int nblocking = nrecv / 10;
  for (int k = nrecv - nblocking; k < nrecv; k++) posted[k].how = 2;

  /* This rank's sends, in plan order, interleaved at random with the
   * nonblocking receives. */
  make_plan(r, rank, nmsg, plan);
  unsigned char **sbufs = malloc((size_t)nmsg * sizeof(unsigned char *));
  MPI_Request *sreqs = malloc((size_t)nmsg * sizeof(MPI_Request));
  int ns = 0, nr = 0;
  const int nnonblocking = nrecv - nblocking;
  while (ns < nmsg || nr < nnonblocking) {
    const int do_send = nr == nnonblocking || (ns < nmsg && below(&st, 2));
    if (do_send) {
      const msg_t *m = &plan[ns];
      sbufs[ns] = malloc((size_t)m->bytes + 1);
      for (int i = 0; i < m->bytes; i++) sbufs[ns][i] = payload(r, rank, ns, (size_t)i);
      if (below(&st, 8) == 0) MPI_Issend(sbufs[ns], m->bytes, MPI_BYTE, m->dest, m->tag, comm, &sreqs[ns]);
      else MPI_Isend(sbufs[ns], m->bytes, MPI_BYTE, m->dest, m->tag, comm, &sreqs[ns]);
      ns++;
    } else {
      recv_t *rv = &posted[nr++];
      if (rv->how == 1) {
        MPI_Recv_init(rv->buf, rv->capacity, MPI_BYTE, rv->source, rv->tag, comm, &rv->req);
        MPI_Start(&rv->req);
      } else {
        MPI_Irecv(rv->buf, rv->capacity, MPI_BYTE, rv->source, rv->tag, comm, &rv->req);
      }
    }
  }
  for (int k = nnonblocking; k < nrecv; k++) {
    recv_t *rv = &posted[k];
    MPI_Recv(rv->buf, rv->capacity, MPI_BYTE, rv->source, rv->tag, comm, &rv->st);
    rv->done = 1;
  }

  /* Complete the nonblocking receives. */
  MPI_Request *rreqs = malloc((size_t)(nnonblocking + 1) * sizeof(MPI_Request));
  MPI_Status *sts = malloc((size_t)(nnonblocking + 1) * sizeof(MPI_Status));
  int *idx = malloc((size_t)(nnonblocking + 1) * sizeof(int));
  for (int k = 0; k < nnonblocking; k++) rreqs[k] = posted[k].req;
  switch (r % 4) {
    case 0:
      MPI_Waitall(nnonblocking, rreqs, sts);
      for (int k = 0; k < nnonblocking; k++) {
        posted[k].st = sts[k];
        posted[k].done++;
      }
      break;
    case 1:
      for (;;) {
        int outcount = 0;
        MPI_Waitsome(nnonblocking, rreqs, &outcount, idx, sts);
        if (outcount == MPI_UNDEFINED) break;
        for (int j = 0; j < outcount; j++) {
          posted[idx[j]].st = sts[j];
          posted[idx[j]].done++;
          /* an inactive persistent request is no longer returned */
        }
      }
      break;
    case 2:
      for (;;) {
        int flag = 0, i = -1;
        MPI_Status s1;
        MPI_Testany(nnonblocking, rreqs, &i, &flag, &s1);
        if (flag && i == MPI_UNDEFINED) break;
        if (flag) {
          posted[i].st = s1;
          posted[i].done++;
        }
      }
      break;
    default:
      for (int k = nnonblocking - 1; k >= 0; k--) {
        MPI_Wait(&rreqs[k], &posted[k].st);
        posted[k].done++;
      }
      break;
  }
  MPI_Waitall(nmsg, sreqs, MPI_STATUSES_IGNORE);

  for (int k = 0; k < nrecv; k++) {
    MTEST_CHECK(posted[k].done == 1, "round %d on %s: receive %d completed %d times", r, name, k, posted[k].done);
    check_recv(r, name, &posted[k]);
    if (posted[k].how == 1) MPI_Request_free(&rreqs[k]);
    free(posted[k].buf);
  }
  for (int i = 0; i < nmsg; i++) free(sbufs[i]);
  free(sbufs);
  free(sreqs);
  free(rreqs);
  free(sts);
  free(idx);
  free(posted);
  free(taken);
  free(order);
  free(recvs);
  free(plan);
  /* Nothing unexpected is left over. */
  MPI_Barrier(comm);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *v = getenv("MPIX_TEST_SEED");
  seed = v ? strtoull(v, NULL, 0) : DEFAULT_SEED;
  v = getenv("MPIX_TEST_MSGS");
  int nmsg = v && atoi(v) > 0 ? atoi(v) : (size <= 4 ? 600 / size : 40);

  MPI_Comm nw, info_dup;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_source", "true");
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  mtest_check_handled(nw, "MPIX_Comm_dup_nowildcard");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &info_dup);
  MPI_Info_free(&info);
  int *ub = NULL, flag = 0;
  MPI_Comm_get_attr(nw, MPI_TAG_UB, &ub, &flag);
  tag_ub = flag ? *ub : 32767;

  run_round(0, nw, "MPIX_Comm_dup_nowildcard", nmsg);
  run_round(1, info_dup, "dup_with_info(no_any_source,no_any_tag)", nmsg);
  run_round(2, MPI_COMM_WORLD, "MPI_COMM_WORLD", nmsg);
  run_round(3, nw, "MPIX_Comm_dup_nowildcard", nmsg);

  if (mtest_errors)
    fprintf(stderr, "[rank %d] random_traffic failed with MPIX_TEST_SEED=%llu (%d messages per rank and round)\n",
            rank, (unsigned long long)seed, nmsg);
  MPI_Comm_free(&nw);
  MPI_Comm_free(&info_dup);
  return mtest_finalize();
}
