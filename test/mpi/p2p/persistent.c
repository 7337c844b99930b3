/* Persistent requests on each communicator under test: MPI_Send_init,
 * MPI_Ssend_init, MPI_Bsend_init, MPI_Rsend_init against MPI_Recv_init,
 * started many times with MPI_Start and MPI_Startall (new buffer contents
 * every round, eager and rendezvous sizes, a vector datatype), completed by
 * Wait/Waitall/Test; an inactive persistent request completes at once with
 * an empty status; MPI_Request_free of inactive requests and of an active
 * send; MPI_PROC_NULL persistent requests. Pairs (0,1), (2,3), ...; an odd
 * last rank talks to MPI_PROC_NULL. Plain MPI: also runs without mpix. */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

typedef mtest_comm_t tcomm_t;

static int rank, size;

static int value(int sender, int round, int i) { return sender * 1000003 + round * 7919 + i; }

static int empty_status(const MPI_Status *st) {
  int n = -1;
  MPI_Get_count(st, MPI_INT, &n);
  return st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && n == 0;
}

#define ROUNDS 4
static const int counts[] = {0, 3, 4096, 50000}; /* ints */
#define NCOUNTS 4
#define MAXCOUNT 50000

enum { P_SEND, P_SSEND, P_BSEND, P_RSEND, NKINDS };
static const char *kind_name[NKINDS] = {"Send_init", "Ssend_init", "Bsend_init", "Rsend_init"};

static void send_init(int kind, const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
                      MPI_Request *req) {
  switch (kind) {
    case P_SEND: MPI_Send_init(buf, count, t, dest, tag, comm, req); break;
    case P_SSEND: MPI_Ssend_init(buf, count, t, dest, tag, comm, req); break;
    case P_BSEND: MPI_Bsend_init(buf, count, t, dest, tag, comm, req); break;
    default: MPI_Rsend_init(buf, count, t, dest, tag, comm, req); break;
  }
}

/* Open MPI 4.1 (Debian 12's 4.1.4 at least; fixed on its main branch by
 * open-mpi/ompi#12797) sends the first start's data again on every later
 * MPI_Start of an MPI_Bsend_init request, natively too. Where the MPI library carries the communicator that is its bug,
 * not mpix's: tolerated, and said ("not checked"); on communicators mpix
 * carries the data is checked as everywhere. */
static int stale_bsend_restart(int kind, int round, MPI_Comm comm) {
#ifdef OMPI_MAJOR_VERSION
  int handled = 0;
  MPIX_Comm_is_handled(comm, &handled);
  if (kind == P_BSEND && round > 0 && !handled) {
    static int said = 0;
    if (!said++) mtest_printf("not checked: restarted MPI_Bsend_init data where Open MPI carries it (open-mpi/ompi#12797)\n");
    return 1;
  }
#else
  (void)kind, (void)round, (void)comm;
#endif
  return 0;
}

/* Each side sends to and receives from its partner in every round; for
 * the ready mode the receive is started and a barrier passed before the send
 * starts. */
static void check_kinds(const tcomm_t *tc) {
  const int partner = (rank ^ 1) < size ? (rank ^ 1) : MPI_PROC_NULL;
  int *out = malloc(MAXCOUNT * sizeof(int)), *in = malloc((MAXCOUNT + 4) * sizeof(int));
  for (int kind = 0; kind < NKINDS; kind++) {
    for (int k = 0; k < NCOUNTS; k++) {
      const int count = counts[k], tag = kind * 10 + k;
      MPI_Request reqs[2];
      MPI_Recv_init(in, count + 4, MPI_INT, partner, tag, tc->comm, &reqs[0]);
      send_init(kind, out, count, MPI_INT, partner, tag, tc->comm, &reqs[1]);
      for (int round = 0; round < ROUNDS; round++) {
        MPI_Status sts[2];
        for (int i = 0; i < count; i++) out[i] = value(rank, round, i);
        memset(in, 0xff, (count + 4) * sizeof(int));
        if (kind == P_RSEND) { /* ready mode: the receive is started everywhere first */
          MPI_Start(&reqs[0]);
          MPI_Barrier(tc->comm);
          MPI_Start(&reqs[1]);
        } else if (round % 2 == 0) {
          MPI_Start(&reqs[1]);
          MPI_Start(&reqs[0]);
        } else {
          MPI_Startall(2, reqs);
        }
        if (round % 3 == 2) {
          int flag = 0;
          while (!flag) MPI_Testall(2, reqs, &flag, sts);
        } else {
          MPI_Waitall(2, reqs, sts);
        }
        MTEST_CHECK(reqs[0] != MPI_REQUEST_NULL && reqs[1] != MPI_REQUEST_NULL, "persistent request freed");
        int n = -1;
        MPI_Get_count(&sts[0], MPI_INT, &n);
        if (partner == MPI_PROC_NULL) {
          /* MPICH 4.0 leaves source and tag 0 here (pmodels/mpich#6805):
           * checked where mpix carries the traffic. */
          int handled = 0;
          MPIX_Comm_is_handled(tc->comm, &handled);
          MTEST_CHECK(n == 0, "%s PROC_NULL count %d on %s", kind_name[kind], n, tc->name);
          if (handled)
            MTEST_CHECK(sts[0].MPI_SOURCE == MPI_PROC_NULL && sts[0].MPI_TAG == MPI_ANY_TAG,
                        "%s PROC_NULL status on %s: source %d tag %d", kind_name[kind], tc->name, sts[0].MPI_SOURCE,
                        sts[0].MPI_TAG);
          continue;
        }
        MTEST_CHECK(sts[0].MPI_SOURCE == partner && sts[0].MPI_TAG == tag && n == count,
                    "%s round %d on %s: source %d tag %d count %d", kind_name[kind], round, tc->name,
                    sts[0].MPI_SOURCE, sts[0].MPI_TAG, n);
        int bad = -1;
        for (int i = 0; i < count && bad < 0; i++)
          if (in[i] != value(partner, round, i)) bad = i;
        if (bad >= 0 && stale_bsend_restart(kind, round, tc->comm)) bad = -1;
        MTEST_CHECK(bad < 0, "%s round %d, %d ints on %s: element %d wrong", kind_name[kind], round, count,
                    tc->name, bad);
        MTEST_CHECK(in[count] == -1, "%s wrote past the message", kind_name[kind]);
      }
      /* Inactive now: Wait and Test return an empty status at once. */
      MPI_Status st;
      int flag = 0;
      MPI_Wait(&reqs[0], &st);
      MTEST_CHECK(empty_status(&st), "Wait on an inactive persistent receive: source %d tag %d", st.MPI_SOURCE,
                  st.MPI_TAG);
      MPI_Test(&reqs[1], &flag, &st);
      MTEST_CHECK(flag && reqs[1] != MPI_REQUEST_NULL, "Test on an inactive persistent send");
      MPI_Request_free(&reqs[0]);
      MPI_Request_free(&reqs[1]);
      MTEST_CHECK(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL, "Request_free left a handle");
    }
  }
  free(out);
  free(in);
}

/* A persistent receive of a strided datatype; an active persistent send
 * freed right after MPI_Start still delivers its message. */
static void check_vector_and_free(const tcomm_t *tc) {
  const int partner = (rank ^ 1) < size ? (rank ^ 1) : MPI_PROC_NULL;
  MPI_Datatype vec;
  MPI_Type_vector(1000, 2, 3, MPI_INT, &vec); /* 2 of every 3 ints */
  MPI_Type_commit(&vec);
  int *out = malloc(3000 * sizeof(int)), *in = malloc(3000 * sizeof(int));
  MPI_Request rreq, sreq;
  MPI_Recv_init(in, 1, vec, partner, 40, tc->comm, &rreq);
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 3000; i++) out[i] = value(rank, round, i);
    for (int i = 0; i < 3000; i++) in[i] = -7;
    MPI_Start(&rreq);
    MPI_Send_init(out, 1, vec, partner, 40, tc->comm, &sreq);
    MPI_Start(&sreq);
    MPI_Request_free(&sreq); /* active: completes on its own */
    MPI_Status st;
    MPI_Wait(&rreq, &st);
    if (partner == MPI_PROC_NULL) continue;
    int bad = -1, n = -1;
    for (int i = 0; i < 3000 && bad < 0; i++) {
      const int expect = (i % 3 == 2) ? -7 : value(partner, round, i);
      if (in[i] != expect) bad = i;
    }
    MTEST_CHECK(bad < 0, "vector persistent round %d on %s: element %d wrong", round, tc->name, bad);
    MPI_Get_count(&st, vec, &n);
    MTEST_CHECK(n == 1, "vector count %d", n);
    /* The freed send's buffer is reusable once its message has arrived. */
    MPI_Barrier(tc->comm);
  }
  if (partner == MPI_PROC_NULL)
    for (int round = 0; round < 3; round++) MPI_Barrier(tc->comm);
  MPI_Request_free(&rreq);
  MPI_Type_free(&vec);
  free(out);
  free(in);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  /* MPI reclaims a buffered send's space only once its transfer is done,
   * which the sender's progress may learn later than the receiver's
   * completion: room for every Bsend of one kind, not just two (two failed
   * under ASan with "Insufficient space in Bsend buffer"). */
  int bsize = ROUNDS * NCOUNTS * (MAXCOUNT * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
  void *bbuf = malloc(bsize);
  MPI_Buffer_attach(bbuf, bsize);
  tcomm_t comms[MTEST_MAX_COMMS];
  const int n =
      mtest_get_comms(MTEST_COMM_WORLD | MTEST_COMM_NOWILDCARD | MTEST_COMM_ASSERT_BOTH | MTEST_COMM_ASSERT_SOURCE, comms);
  for (int i = 0; i < n; i++) {
    check_kinds(&comms[i]);
    check_vector_and_free(&comms[i]);
  }
  mtest_free_comms(comms, n);
  MPI_Buffer_detach(&bbuf, &bsize);
  free(bbuf);
  return mtest_finalize();
}
