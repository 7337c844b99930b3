/* Floods of unexpected messages on handled communicators: every rank but 0
 * sends 100000 small messages (tags 0..99 in turn) to rank 0 before rank 0
 * posts any receive; rank 0 receives them in reverse tag order (tag 99
 * first), source by source, and checks that each (source, tag) stream comes
 * in order and complete. Then the same with the sends waited for before the
 * barrier (2048 in all: more than a ring holds). Then 10000 MPI_Bsend messages of distinct tags
 * received from the highest tag down, 200 unexpected messages above the
 * eager limit received in reverse tag order, and 4000 eager-sized (2 KiB)
 * ones, 8 MB in all: beyond what a receiver holds of one sender's eager
 * data (MPIX_UNEXPECTED_LIMIT, at most 4 MiB per sender over UCX), so the
 * transport's back-pressure must act without losing any. A matching engine with linear
 * queues makes the reverse-order receives quadratic; mpix's hashes keep
 * them linear. Last, probes (MPI_Probe, MPI_Iprobe, MPI_Mprobe) for the
 * newest of a flood of distinct tags: messages held back by back-pressure
 * must reach a probe loop that posts no receive. Env MPIX_TEST_FLOOD_N
 * overrides the 100000. */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

static int rank, size;

typedef struct {
  int source, seq;
} msg_t;

static int getenv_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && atoi(v) > 0 ? atoi(v) : dflt;
}

/* Phase 1: n messages per sender, tag = seq % ntags. */
static void flood_small(MPI_Comm comm, const char *name, int n, int ntags) {
  if (rank != 0) {
    msg_t *out = malloc(n * sizeof(msg_t));
    MPI_Request *reqs = malloc(n * sizeof(MPI_Request));
    for (int i = 0; i < n; i++) {
      out[i] = (msg_t){rank, i};
      MPI_Isend(&out[i], 2, MPI_INT, 0, i % ntags, comm, &reqs[i]);
    }
    MPI_Barrier(comm); /* all sent before rank 0 posts a receive */
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    free(out);
    free(reqs);
    return;
  }
  MPI_Barrier(comm);
  long bad = 0;
  for (int tag = ntags - 1; tag >= 0; tag--)
    for (int s = 1; s < size; s++)
      for (int seq = tag; seq < n; seq += ntags) {
        msg_t m = {-1, -1};
        MPI_Status st;
        MPI_Recv(&m, 2, MPI_INT, s, tag, comm, &st);
        if (m.source != s || m.seq != seq || st.MPI_TAG != tag || st.MPI_SOURCE != s) {
          if (bad++ < 5)
            MTEST_CHECK(0, "flood on %s: from %d tag %d expected seq %d, got source %d seq %d", name, s, tag, seq,
                        m.source, m.seq);
        }
      }
  MTEST_CHECK(bad == 0, "flood on %s: %ld messages wrong", name, bad);
}

/* Phase 1b: small sends waited for before the barrier, as many benchmarks do
 * (the matching-rate one among them): more than a shared-memory ring holds,
 * so the sender waits for room while rank 0 sits in MPI_Barrier, a call mpix
 * does not see; rank 0's mpix must empty its rings meanwhile (the liveness
 * thread does), as native MPICH's progress inside the barrier does. Relies
 * on small standard sends completing without their receive, which MPICH
 * and mpix both provide (copies, up to thousands). */
static void flood_before_barrier(MPI_Comm comm, const char *name, int n, int ntags) {
  /* Rank 0 idle in the barrier first, past the time its transport counts
   * as recently busy (50 ms), so that nothing else makes it poll. */
  MPI_Barrier(comm);
  if (rank != 0) {
    const double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < 0.2) {
    }
    msg_t *out = malloc(n * sizeof(msg_t));
    MPI_Request *reqs = malloc(n * sizeof(MPI_Request));
    for (int i = 0; i < n; i++) {
      out[i] = (msg_t){rank, i};
      MPI_Isend(&out[i], 2, MPI_INT, 0, i % ntags, comm, &reqs[i]);
    }
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    MPI_Barrier(comm);
    free(out);
    free(reqs);
    return;
  }
  MPI_Barrier(comm);
  long bad = 0;
  for (int s = 1; s < size; s++)
    for (int tag = ntags - 1; tag >= 0; tag--)
      for (int seq = tag; seq < n; seq += ntags) {
        msg_t m = {-1, -1};
        MPI_Recv(&m, 2, MPI_INT, s, tag, comm, MPI_STATUS_IGNORE);
        if ((m.source != s || m.seq != seq) && bad++ < 5)
          MTEST_CHECK(0, "flood before a barrier on %s: from %d tag %d expected seq %d, got source %d seq %d", name,
                      s, tag, seq, m.source, m.seq);
      }
  MTEST_CHECK(bad == 0, "flood before a barrier on %s: %ld messages wrong", name, bad);
}

/* Phase 2: buffered sends (complete locally), distinct tags. */
static void flood_bsend(MPI_Comm comm, const char *name, int n) {
  if (rank != 0) {
    int bsize = 2 * n * (int)(sizeof(int) + MPI_BSEND_OVERHEAD) + 1024;
    void *bbuf = malloc(bsize);
    MPI_Buffer_attach(bbuf, bsize);
    for (int i = 0; i < n; i++) {
      int v = rank * 1000000 + i;
      MPI_Bsend(&v, 1, MPI_INT, 0, i, comm);
    }
    MPI_Barrier(comm);
    MPI_Buffer_detach(&bbuf, &bsize); /* waits until all are delivered */
    free(bbuf);
    return;
  }
  MPI_Barrier(comm);
  long bad = 0;
  for (int i = n - 1; i >= 0; i--)
    for (int s = size - 1; s >= 1; s--) {
      int v = -1;
      MPI_Recv(&v, 1, MPI_INT, s, i, comm, MPI_STATUS_IGNORE);
      if (v != s * 1000000 + i && bad++ < 5)
        MTEST_CHECK(0, "Bsend flood on %s: tag %d from %d got %d", name, i, s, v);
    }
  MTEST_CHECK(bad == 0, "Bsend flood on %s: %ld messages wrong", name, bad);
}

/* Phases 3-5 send n messages of `elems` ints each to rank 0, all before
 * rank 0 posts a receive (the barrier); message i carries tag i (or i % ntags
 * when ntags > 0) and element k of it from rank r is r * a + i * b + k. */
static int payload(int source, int i, int k, int a, int b) { return source * a + i * b + k; }

static void send_flood(MPI_Comm comm, int n, int elems, int ntags, int a, int b) {
  int *out = malloc((size_t)n * elems * sizeof(int));
  MPI_Request *reqs = malloc(n * sizeof(MPI_Request));
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < elems; k++) out[(size_t)i * elems + k] = payload(rank, i, k, a, b);
    MPI_Isend(out + (size_t)i * elems, elems, MPI_INT, 0, ntags > 0 ? i % ntags : i, comm, &reqs[i]);
  }
  MPI_Barrier(comm);
  MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
  free(out);
  free(reqs);
}

/* The first wrong element of message i from source, or -1. */
static int first_wrong(const int *in, int elems, int source, int i, int a, int b) {
  for (int k = 0; k < elems; k++)
    if (in[k] != payload(source, i, k, a, b)) return k;
  return -1;
}

/* Phase 3: unexpected messages above the eager limit. */
#define MED 5000 /* ints */
static void flood_medium(MPI_Comm comm, const char *name, int n) {
  if (rank != 0) {
    send_flood(comm, n, MED, 0, 7, 13);
    return;
  }
  MPI_Barrier(comm);
  int *in = malloc(MED * sizeof(int));
  for (int i = n - 1; i >= 0; i--)
    for (int s = 1; s < size; s++) {
      MPI_Recv(in, MED, MPI_INT, s, i, comm, MPI_STATUS_IGNORE);
      const int bad = first_wrong(in, MED, s, i, 7, 13);
      MTEST_CHECK(bad < 0, "medium flood on %s: tag %d from %d, element %d wrong", name, i, s, bad);
    }
  free(in);
}

/* Phase 4: eager-sized messages beyond the receiver's limits. */
#define MID 512 /* ints */
static void flood_mid(MPI_Comm comm, const char *name, int n) {
  if (rank != 0) {
    send_flood(comm, n, MID, 7, 3, 5);
    return;
  }
  MPI_Barrier(comm);
  int *in = malloc(MID * sizeof(int));
  long bad = 0;
  for (int tag = 6; tag >= 0; tag--)
    for (int s = 1; s < size; s++)
      for (int i = tag; i < n; i += 7) {
        MPI_Recv(in, MID, MPI_INT, s, tag, comm, MPI_STATUS_IGNORE);
        const int k = first_wrong(in, MID, s, i, 3, 5);
        if (k >= 0 && bad++ < 5) MTEST_CHECK(0, "mid flood on %s: message %d from %d, element %d wrong", name, i, s, k);
      }
  MTEST_CHECK(bad == 0, "mid flood on %s: %ld messages wrong", name, bad);
  free(in);
}

/* Phase 5: probes after a flood. Messages held back by back-pressure
 * (beyond MPIX_UNEXPECTED_LIMIT over pmpi: left in the MPI library's queue)
 * must become visible to MPI_Probe, MPI_Iprobe and MPI_Mprobe loops, which
 * post no receive: rank 0 probes the last message first. */
#define PRB 128 /* ints */
static void flood_probe(MPI_Comm comm, const char *name, int n) {
  if (rank != 0) {
    send_flood(comm, n, PRB, 0, 11, 7);
    return;
  }
  MPI_Barrier(comm);
  int *in = malloc(PRB * sizeof(int));
  long bad = 0;
  for (int i = n - 1; i >= 0; i--)
    for (int s = 1; s < size; s++) {
      MPI_Status st;
      int count = -1;
      if (i % 3 == 0) {
        int found = 0;
        while (!found) MPI_Iprobe(s, i, comm, &found, &st);
        MPI_Recv(in, PRB, MPI_INT, s, i, comm, MPI_STATUS_IGNORE);
      } else if (i % 3 == 1) {
        MPI_Message msg;
        MPI_Mprobe(s, i, comm, &msg, &st);
        MPI_Mrecv(in, PRB, MPI_INT, &msg, MPI_STATUS_IGNORE);
      } else {
        MPI_Probe(s, i, comm, &st);
        MPI_Recv(in, PRB, MPI_INT, s, i, comm, MPI_STATUS_IGNORE);
      }
      MPI_Get_count(&st, MPI_INT, &count);
      if (st.MPI_SOURCE != s || st.MPI_TAG != i || count != PRB) {
        if (bad++ < 5)
          MTEST_CHECK(0, "probe flood on %s: probe for (%d, %d) gave (%d, %d), %d ints", name, s, i, st.MPI_SOURCE,
                      st.MPI_TAG, count);
        continue;
      }
      const int k = first_wrong(in, PRB, s, i, 11, 7);
      if (k >= 0 && bad++ < 5) MTEST_CHECK(0, "probe flood on %s: tag %d from %d, element %d wrong", name, i, s, k);
    }
  MTEST_CHECK(bad == 0, "probe flood on %s: %ld messages wrong", name, bad);
  free(in);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = getenv_int("MPIX_TEST_FLOOD_N", 100000);
  MPI_Comm nw, info_dup;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_source", "true");
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &info_dup);
  MPI_Info_free(&info);

  int *tag_ub = NULL, flag = 0;
  MPI_Comm_get_attr(nw, MPI_TAG_UB, &tag_ub, &flag);
  const int nb = flag && *tag_ub < n / 10 ? *tag_ub + 1 : n / 10;

  flood_small(nw, "MPIX_Comm_dup_nowildcard", n / (size - 1), 100);
  flood_before_barrier(nw, "MPIX_Comm_dup_nowildcard", 2048 / (size - 1), 64);
  flood_bsend(nw, "MPIX_Comm_dup_nowildcard", nb / (size - 1));
  flood_medium(info_dup, "dup_with_info(no_any_source,no_any_tag)", 200 / (size - 1));
  flood_mid(nw, "MPIX_Comm_dup_nowildcard", n / 25 / (size - 1));
  flood_small(MPI_COMM_WORLD, "MPI_COMM_WORLD", n / 20 / (size - 1), 10);
  flood_probe(nw, "MPIX_Comm_dup_nowildcard", n / 50 / (size - 1));
  mtest_check_handled(nw, "MPIX_Comm_dup_nowildcard");

  MPI_Comm_free(&nw);
  MPI_Comm_free(&info_dup);
  return mtest_finalize();
}
