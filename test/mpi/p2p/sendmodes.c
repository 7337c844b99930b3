/* Every send mode (Send, Isend, Ssend, Issend, Bsend, Ibsend, Rsend, Irsend)
 * against posted receives, message sizes from 0 B through rendezvous sizes,
 * the non-overtaking rule with receives posted before and after the sends,
 * MPI_PROC_NULL, zero-size messages (also with a NULL buffer), messages to
 * oneself, and MPI_Sendrecv / MPI_Sendrecv_replace. Each check takes a
 * communicator and runs on MPI_COMM_WORLD (handled only under
 * MPIX_INTERCEPT=all) and on handled communicators: MPIX_Comm_dup_nowildcard,
 * MPI_Comm_dup_with_info with one or both no-any assertions, and MPI_Comm_dup
 * of a handled communicator. Receives use wildcards where the communicator
 * allows them. Plain MPI semantics: the program also runs without mpix. */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

typedef mtest_comm_t tcomm_t;

static int rank, size;

/* Byte i of the payload identified by seed. */
static unsigned char pat(unsigned seed, size_t i) {
  return (unsigned char)((seed * 2654435761u) ^ (i * 40503u) ^ (i >> 7));
}
static void fill(void *buf, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) ((unsigned char *)buf)[i] = pat(seed, i);
}
/* Index of the first wrong byte, or n. */
static size_t verify(const void *buf, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (((const unsigned char *)buf)[i] != pat(seed, i)) return i;
  return n;
}

static void check_status(const tcomm_t *tc, const char *what, const MPI_Status *st, MPI_Datatype type, int source,
                         int tag, int count) {
  int got = -1;
  MPI_Get_count(st, type, &got);
  MTEST_CHECK(st->MPI_SOURCE == source && st->MPI_TAG == tag && got == count,
              "%s on %s: status source %d tag %d count %d, expected %d %d %d", what, tc->name, st->MPI_SOURCE,
              st->MPI_TAG, got, source, tag, count);
}

enum { MODE_SEND, MODE_ISEND, MODE_SSEND, MODE_ISSEND, MODE_BSEND, MODE_IBSEND, MODE_RSEND, MODE_IRSEND, NMODES };
static const char *mode_name[NMODES] = {"Send", "Isend", "Ssend", "Issend", "Bsend", "Ibsend", "Rsend", "Irsend"};

static int send_mode(int mode, const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  switch (mode) {
    case MODE_SEND: return MPI_Send(buf, count, type, dest, tag, comm);
    case MODE_SSEND: return MPI_Ssend(buf, count, type, dest, tag, comm);
    case MODE_BSEND: return MPI_Bsend(buf, count, type, dest, tag, comm);
    case MODE_RSEND: return MPI_Rsend(buf, count, type, dest, tag, comm);
    case MODE_ISEND: rc = MPI_Isend(buf, count, type, dest, tag, comm, &req); break;
    case MODE_ISSEND: rc = MPI_Issend(buf, count, type, dest, tag, comm, &req); break;
    case MODE_IBSEND: rc = MPI_Ibsend(buf, count, type, dest, tag, comm, &req); break;
    default: rc = MPI_Irsend(buf, count, type, dest, tag, comm, &req); break;
  }
  if (rc != MPI_SUCCESS) return rc;
  return MPI_Wait(&req, MPI_STATUS_IGNORE);
}

#define PAD 16
static const int counts[] = {0, 1, 100, 5000, 70000}; /* ints: up to 280 KB, past every eager limit */
#define NCOUNTS ((int)(sizeof(counts) / sizeof(counts[0])))
#define MAXCOUNT 70000

/* Ring shift in every mode: the receives are posted (and a barrier passed)
 * before the sends start, as the ready modes require. */
static void check_modes(const tcomm_t *tc) {
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  int *sbuf[NCOUNTS], *rbuf[NCOUNTS];
  for (int k = 0; k < NCOUNTS; k++) {
    sbuf[k] = malloc((counts[k] + PAD) * sizeof(int));
    rbuf[k] = malloc((counts[k] + PAD) * sizeof(int));
  }
  for (int mode = 0; mode < NMODES; mode++) {
    MPI_Request rreq[NCOUNTS];
    MPI_Status st[NCOUNTS];
    for (int k = 0; k < NCOUNTS; k++) {
      const int count = counts[k], tag = 10 + mode * NCOUNTS + k;
      fill(sbuf[k], count * sizeof(int), (unsigned)(rank * 131 + mode * 17 + k));
      memset(rbuf[k], 0xA5, (count + PAD) * sizeof(int));
      /* Wildcards where allowed: they must match exactly like the names. */
      const int src = (tc->any_source_ok && (k & 1)) ? MPI_ANY_SOURCE : left;
      const int rtag = (tc->any_tag_ok && (k & 2)) ? MPI_ANY_TAG : tag;
      MPI_Irecv(rbuf[k], count + PAD, MPI_INT, src, rtag, tc->comm, &rreq[k]);
    }
    MPI_Barrier(tc->comm);
    for (int k = 0; k < NCOUNTS; k++) {
      int rc = send_mode(mode, sbuf[k], counts[k], MPI_INT, right, 10 + mode * NCOUNTS + k, tc->comm);
      MTEST_CHECK(rc == MPI_SUCCESS, "%s on %s: rc %d", mode_name[mode], tc->name, rc);
    }
    MPI_Waitall(NCOUNTS, rreq, st);
    for (int k = 0; k < NCOUNTS; k++) {
      const int count = counts[k];
      check_status(tc, mode_name[mode], &st[k], MPI_INT, left, 10 + mode * NCOUNTS + k, count);
      size_t bad = verify(rbuf[k], count * sizeof(int), (unsigned)(left * 131 + mode * 17 + k));
      MTEST_CHECK(bad == count * sizeof(int), "%s on %s, %d ints: byte %zu wrong", mode_name[mode], tc->name, count,
                  bad);
      const unsigned char *tail = (const unsigned char *)(rbuf[k] + count);
      for (size_t i = 0; i < PAD * sizeof(int); i++)
        if (tail[i] != 0xA5) {
          MTEST_CHECK(0, "%s on %s: byte past the message written", mode_name[mode], tc->name);
          break;
        }
    }
  }
  for (int k = 0; k < NCOUNTS; k++) {
    free(sbuf[k]);
    free(rbuf[k]);
  }
}

/* Messages of one (source, tag) arrive in the order sent, whatever their
 * sizes and send modes, with the receives posted after the sends
 * (unexpected) and before them (expected). Pairs (0,1), (2,3), ... */
#define NORDER 24
#define ORDER_MAX 300000
static int order_bytes(int i) {
  static const int sizes[] = {0, 8, 40000, 4, 300000, 16, 1, 20000, 65536, 3};
  return sizes[i % 10];
}

static void check_order(const tcomm_t *tc) {
  const int partner = rank ^ 1;
  const int active = partner < size;
  const int sender = !(rank & 1);
  const int tag = 77;
  unsigned char *bufs[NORDER];
  MPI_Request reqs[NORDER];
  for (int i = 0; i < NORDER; i++) bufs[i] = malloc(ORDER_MAX + PAD);

  for (int expected = 0; expected < 2; expected++) {
    if (active && sender) {
      for (int i = 0; i < NORDER; i++) fill(bufs[i], order_bytes(i), (unsigned)(1000 + i + 100 * expected));
      if (expected) {
        MPI_Barrier(tc->comm); /* the receives are posted: blocking and ready modes are safe */
        for (int i = 0; i < NORDER; i++) {
          static const int modes[] = {MODE_SEND, MODE_SSEND, MODE_RSEND, MODE_ISEND, MODE_IRSEND, MODE_ISSEND};
          int rc = send_mode(modes[i % 6], bufs[i], order_bytes(i), MPI_BYTE, partner, tag, tc->comm);
          MTEST_CHECK(rc == MPI_SUCCESS, "order send %d rc %d", i, rc);
        }
      } else {
        for (int i = 0; i < NORDER; i++) {
          if (i % 3 == 1) MPI_Issend(bufs[i], order_bytes(i), MPI_BYTE, partner, tag, tc->comm, &reqs[i]);
          else MPI_Isend(bufs[i], order_bytes(i), MPI_BYTE, partner, tag, tc->comm, &reqs[i]);
        }
        MPI_Barrier(tc->comm); /* sent before any receive is posted */
        MPI_Waitall(NORDER, reqs, MPI_STATUSES_IGNORE);
      }
    } else if (active) {
      MPI_Status sts[NORDER];
      const int rtag = tc->any_tag_ok ? MPI_ANY_TAG : tag;
      const int src = tc->any_source_ok ? MPI_ANY_SOURCE : partner;
      if (expected) {
        for (int i = 0; i < NORDER; i++)
          MPI_Irecv(bufs[i], ORDER_MAX + PAD, MPI_BYTE, (i & 1) ? src : partner, (i & 2) ? rtag : tag, tc->comm,
                    &reqs[i]);
        MPI_Barrier(tc->comm);
        MPI_Waitall(NORDER, reqs, sts);
      } else {
        MPI_Barrier(tc->comm);
        for (int i = 0; i < NORDER; i++)
          MPI_Recv(bufs[i], ORDER_MAX + PAD, MPI_BYTE, (i & 1) ? src : partner, (i & 2) ? rtag : tag, tc->comm,
                   &sts[i]);
      }
      for (int i = 0; i < NORDER; i++) {
        check_status(tc, expected ? "order (expected)" : "order (unexpected)", &sts[i], MPI_BYTE, partner, tag,
                     order_bytes(i));
        MTEST_CHECK(verify(bufs[i], order_bytes(i), (unsigned)(1000 + i + 100 * expected)) == (size_t)order_bytes(i),
                    "order on %s: message %d payload wrong (overtaken?)", tc->name, i);
      }
    } else {
      MPI_Barrier(tc->comm);
    }
  }
  for (int i = 0; i < NORDER; i++) free(bufs[i]);
}

/* MPI_PROC_NULL: sends succeed at once, receives complete at once with
 * source MPI_PROC_NULL, tag MPI_ANY_TAG, count 0, buffer untouched. */
static void check_proc_null(const tcomm_t *tc) {
  int buf[4] = {1, 2, 3, 4}, rbuf[4] = {-1, -1, -1, -1};
  MPI_Status st;
  MPI_Request req;
  for (int mode = 0; mode < NMODES; mode++) {
    int rc = send_mode(mode, buf, 4, MPI_INT, MPI_PROC_NULL, 1, tc->comm);
    MTEST_CHECK(rc == MPI_SUCCESS, "%s to MPI_PROC_NULL on %s: rc %d", mode_name[mode], tc->name, rc);
  }
  MPI_Recv(rbuf, 4, MPI_INT, MPI_PROC_NULL, 1, tc->comm, &st);
  check_status(tc, "Recv(MPI_PROC_NULL)", &st, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, 0);
  MPI_Irecv(rbuf, 4, MPI_INT, MPI_PROC_NULL, 1, tc->comm, &req);
  MPI_Wait(&req, &st);
  /* MPICH before 4.2 leaves source and tag 0 here (pmodels/mpich#6805):
   * checked where mpix carries the traffic. */
  int handled = 0;
  MPIX_Comm_is_handled(tc->comm, &handled);
  if (handled) check_status(tc, "Irecv(MPI_PROC_NULL)", &st, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, 0);
  MTEST_CHECK(req == MPI_REQUEST_NULL, "request not freed");
  MPI_Sendrecv(buf, 4, MPI_INT, MPI_PROC_NULL, 1, rbuf, 4, MPI_INT, MPI_PROC_NULL, 1, tc->comm, &st);
  check_status(tc, "Sendrecv(MPI_PROC_NULL)", &st, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, 0);
  MPI_Sendrecv_replace(rbuf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_PROC_NULL, 1, tc->comm, &st);
  check_status(tc, "Sendrecv_replace(MPI_PROC_NULL)", &st, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, 0);
  MTEST_CHECK(rbuf[0] == -1 && rbuf[3] == -1, "buffer written by a MPI_PROC_NULL receive on %s", tc->name);
}

/* Zero-size messages (also from and into NULL), and messages to oneself. */
static void check_zero_and_self(const tcomm_t *tc) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Status st;
  MPI_Request reqs[2];
  int x = 5;
  MPI_Irecv(NULL, 0, MPI_INT, left, 3, tc->comm, &reqs[0]);
  MPI_Isend(NULL, 0, MPI_INT, right, 3, tc->comm, &reqs[1]);
  MPI_Wait(&reqs[0], &st);
  MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
  check_status(tc, "zero-size NULL", &st, MPI_INT, left, 3, 0);
  MPI_Sendrecv(&x, 0, MPI_INT, right, 4, &x, 1, MPI_INT, left, 4, tc->comm, &st);
  check_status(tc, "zero-size into a larger buffer", &st, MPI_INT, left, 4, 0);
  MTEST_CHECK(x == 5, "zero-size receive wrote %d", x);

  /* Oneself: nonblocking both ways, several sizes, in order. */
  int *out = malloc(70000 * sizeof(int)), *in = malloc(70000 * sizeof(int));
  for (int k = 0; k < NCOUNTS; k++) {
    fill(out, counts[k] * sizeof(int), (unsigned)(k + 7));
    MPI_Isend(out, counts[k], MPI_INT, rank, 9, tc->comm, &reqs[0]);
    MPI_Recv(in, counts[k], MPI_INT, rank, 9, tc->comm, &st);
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    check_status(tc, "self", &st, MPI_INT, rank, 9, counts[k]);
    MTEST_CHECK(verify(in, counts[k] * sizeof(int), (unsigned)(k + 7)) == counts[k] * sizeof(int),
                "self message of %d ints wrong on %s", counts[k], tc->name);
    MPI_Sendrecv(out, counts[k], MPI_INT, rank, 8, in, counts[k], MPI_INT, rank, 8, tc->comm, &st);
    check_status(tc, "Sendrecv self", &st, MPI_INT, rank, 8, counts[k]);
  }
  free(out);
  free(in);
}

/* Sendrecv and Sendrecv_replace around the ring, other tags each way. */
static void check_sendrecv(const tcomm_t *tc) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int *out = malloc(70000 * sizeof(int)), *in = malloc(70000 * sizeof(int));
  MPI_Status st;
  for (int k = 0; k < NCOUNTS; k++) {
    const int c = counts[k];
    fill(out, c * sizeof(int), (unsigned)(rank * 7 + k));
    MPI_Sendrecv(out, c, MPI_INT, right, 20 + k, in, c, MPI_INT, tc->any_source_ok ? MPI_ANY_SOURCE : left, 20 + k,
                 tc->comm, &st);
    check_status(tc, "Sendrecv", &st, MPI_INT, left, 20 + k, c);
    MTEST_CHECK(verify(in, c * sizeof(int), (unsigned)(left * 7 + k)) == c * sizeof(int), "Sendrecv %d ints on %s",
                c, tc->name);
    fill(in, c * sizeof(int), (unsigned)(rank * 11 + k));
    MPI_Sendrecv_replace(in, c, MPI_INT, left, 30 + k, right, tc->any_tag_ok ? MPI_ANY_TAG : 30 + k, tc->comm, &st);
    check_status(tc, "Sendrecv_replace", &st, MPI_INT, right, 30 + k, c);
    MTEST_CHECK(verify(in, c * sizeof(int), (unsigned)(right * 11 + k)) == c * sizeof(int),
                "Sendrecv_replace %d ints on %s", c, tc->name);
  }
  free(out);
  free(in);
}

int main(int argc, char **argv) {
  tcomm_t comms[MTEST_MAX_COMMS];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int bsize = 4 * (MAXCOUNT * (int)sizeof(int)) + 64 * MPI_BSEND_OVERHEAD;
  void *bbuf = malloc(bsize);
  MPI_Buffer_attach(bbuf, bsize);

  const int n = mtest_get_comms(MTEST_COMM_ALL, comms);
  for (int i = 0; i < n; i++) {
    check_modes(&comms[i]);
    check_order(&comms[i]);
    check_proc_null(&comms[i]);
    check_zero_and_self(&comms[i]);
    check_sendrecv(&comms[i]);
  }
  mtest_free_comms(comms, n);

  MPI_Buffer_detach(&bbuf, &bsize);
  free(bbuf);
  return mtest_finalize();
}
