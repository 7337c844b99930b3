/* Derived datatypes on each communicator under test: contiguous, vector
 * (sent strided, received contiguous and back), indexed, a struct with gaps
 * (the gaps of the receive buffer stay untouched), a resized struct array,
 * absolute addresses from MPI_BOTTOM, a contiguous type at an offset
 * (into a receive posted first and as an unexpected message), eager and rendezvous sizes, zero
 * counts; MPI_Get_count and MPI_Get_elements for whole and partial
 * messages (MPI_UNDEFINED when not a whole number of elements), also after
 * MPI_Probe; messages that end inside an element of a strided type (only
 * the bytes they carry written). Rank 0 sends to rank 1 and back; other ranks only join. Fails
 * unless mpix carries its no-wildcard communicator (mtest_check_handled). */
#include <stddef.h>
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

typedef struct {
  MPI_Comm comm;
  const char *name;
} tcomm_t;

static int rank, size;

typedef struct {
  int a;
  /* gap */
  double b;
  char c;
  /* gap */
  short d[3];
} rec_t;

static MPI_Datatype rec_type(void) {
  const int lens[4] = {1, 1, 1, 3};
  const MPI_Aint disps[4] = {offsetof(rec_t, a), offsetof(rec_t, b), offsetof(rec_t, c), offsetof(rec_t, d)};
  const MPI_Datatype types[4] = {MPI_INT, MPI_DOUBLE, MPI_CHAR, MPI_SHORT};
  MPI_Datatype t, r;
  MPI_Type_create_struct(4, lens, disps, types, &t);
  MPI_Type_create_resized(t, 0, sizeof(rec_t), &r);
  MPI_Type_free(&t);
  MPI_Type_commit(&r);
  return r;
}

static void set_rec(rec_t *r, int i, int salt) {
  r->a = i * 3 + salt;
  r->b = i * 0.5 + salt;
  r->c = (char)(i + salt);
  for (int k = 0; k < 3; k++) r->d[k] = (short)(i * 7 + k + salt);
}
static int same_rec(const rec_t *r, int i, int salt) {
  rec_t e;
  set_rec(&e, i, salt);
  return r->a == e.a && r->b == e.b && r->c == e.c && r->d[0] == e.d[0] && r->d[1] == e.d[1] && r->d[2] == e.d[2];
}

static void expect_counts(const tcomm_t *tc, const char *what, const MPI_Status *st, MPI_Datatype t, int count,
                          int elements) {
  int n = -2, e = -2;
  MPI_Get_count(st, t, &n);
  MPI_Get_elements(st, t, &e);
  MTEST_CHECK(n == count && e == elements, "%s on %s: count %d elements %d, expected %d %d", what, tc->name, n, e,
              count, elements);
}

static void check_types(const tcomm_t *tc) {
  MPI_Comm comm = tc->comm;
  MPI_Status st;
  if (rank > 1) return;
  const int peer = 1 - rank;

  /* Vector: 2 of every 3 ints. Small (eager) and large (rendezvous). */
  const int nblocks[2] = {10, 40000};
  for (int v = 0; v < 2; v++) {
    const int nb = nblocks[v], n = 3 * nb;
    MPI_Datatype vec;
    MPI_Type_vector(nb, 2, 3, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int *strided = malloc(n * sizeof(int)), *packed = malloc((2 * nb + 1) * sizeof(int));
    if (rank == 0) {
      for (int i = 0; i < n; i++) strided[i] = i;
      MPI_Send(strided, 1, vec, peer, 1, comm);
      /* and back: packed ints into the strided layout, holes kept */
      for (int i = 0; i < n; i++) strided[i] = -5;
      MPI_Recv(strided, 1, vec, peer, 2, comm, &st);
      expect_counts(tc, "vector receive", &st, vec, 1, 2 * nb);
      int bad = -1;
      for (int i = 0; i < n && bad < 0; i++)
        if (strided[i] != (i % 3 == 2 ? -5 : 1000 + i)) bad = i;
      MTEST_CHECK(bad < 0, "vector receive (%d blocks) on %s: element %d = %d", nb, tc->name, bad,
                  bad < 0 ? 0 : strided[bad]);
    } else {
      for (int i = 0; i < 2 * nb + 1; i++) packed[i] = -1;
      MPI_Recv(packed, 2 * nb + 1, MPI_INT, peer, 1, comm, &st);
      expect_counts(tc, "vector as ints", &st, MPI_INT, 2 * nb, 2 * nb);
      int bad = -1;
      for (int i = 0; i < 2 * nb && bad < 0; i++)
        if (packed[i] != (i / 2) * 3 + i % 2) bad = i;
      MTEST_CHECK(bad < 0 && packed[2 * nb] == -1, "vector sent (%d blocks) on %s: element %d", nb, tc->name, bad);
      for (int i = 0; i < 2 * nb; i++) packed[i] = 1000 + (i / 2) * 3 + i % 2;
      MPI_Send(packed, 2 * nb, MPI_INT, peer, 2, comm);
    }
    free(strided);
    free(packed);
    MPI_Type_free(&vec);
  }

  /* Indexed with unequal blocks, and contiguous of it. */
  {
    const int lens[4] = {3, 1, 4, 2}, disps[4] = {0, 5, 7, 20};
    MPI_Datatype idx, two;
    MPI_Type_indexed(4, lens, disps, MPI_INT, &idx);
    MPI_Type_contiguous(2, idx, &two);
    MPI_Type_commit(&idx);
    MPI_Type_commit(&two);
    MPI_Aint lb, extent;
    MPI_Type_get_extent(idx, &lb, &extent);
    const int per = (int)(extent / sizeof(int)); /* 22 */
    int buf[2 * 22 + 4];
    if (rank == 0) {
      for (int i = 0; i < 2 * per; i++) buf[i] = 100 + i;
      MPI_Send(buf, 1, two, peer, 3, comm);
    } else {
      for (int i = 0; i < 2 * per + 4; i++) buf[i] = -1;
      MPI_Recv(buf, 2, idx, peer, 3, comm, &st);
      expect_counts(tc, "indexed", &st, idx, 2, 20);
      int bad = -1;
      for (int copy = 0; copy < 2; copy++)
        for (int b = 0; b < 4; b++)
          for (int k = 0; k < per; k++) {
            const int i = copy * per + k;
            const int inside = k >= disps[b] && k < disps[b] + lens[b];
            if (inside && buf[i] != 100 + i && bad < 0) bad = i;
          }
      for (int k = 0; k < per; k++) {
        int inside = 0;
        for (int b = 0; b < 4; b++) inside |= k >= disps[b] && k < disps[b] + lens[b];
        if (!inside && (buf[k] != -1 || buf[per + k] != -1) && bad < 0) bad = 1000 + k;
      }
      MTEST_CHECK(bad < 0, "indexed on %s: element %d", tc->name, bad);
    }
    MPI_Type_free(&idx);
    MPI_Type_free(&two);
  }

  /* Struct with gaps: 5 and 20000 records (past every eager limit); the
   * receiver's gaps keep their filler byte. */
  {
    MPI_Datatype rt = rec_type();
    const int counts[2] = {5, 20000};
    for (int v = 0; v < 2; v++) {
      const int n = counts[v];
      rec_t *recs = malloc((n + 1) * sizeof(rec_t));
      if (rank == 0) {
        for (int i = 0; i < n; i++) set_rec(&recs[i], i, v);
        MPI_Send(recs, n, rt, peer, 4, comm);
      } else {
        memset(recs, 0x5c, (n + 1) * sizeof(rec_t));
        MPI_Probe(peer, 4, comm, &st);
        expect_counts(tc, "struct probe", &st, rt, n, 6 * n);
        MPI_Recv(recs, n + 1, rt, peer, 4, comm, &st);
        expect_counts(tc, "struct", &st, rt, n, 6 * n);
        int bad = -1;
        for (int i = 0; i < n && bad < 0; i++) {
          const unsigned char *p = (const unsigned char *)&recs[i];
          if (!same_rec(&recs[i], i, v)) bad = i;
          for (size_t g = offsetof(rec_t, a) + sizeof(int); g < offsetof(rec_t, b); g++)
            if (p[g] != 0x5c) bad = i;
          for (size_t g = offsetof(rec_t, c) + 1; g < offsetof(rec_t, d); g++)
            if (p[g] != 0x5c) bad = i;
          for (size_t g = offsetof(rec_t, d) + 3 * sizeof(short); g < sizeof(rec_t); g++)
            if (p[g] != 0x5c) bad = i;
        }
        const unsigned char *after = (const unsigned char *)&recs[n];
        for (size_t g = 0; g < sizeof(rec_t) && bad < 0; g++)
          if (after[g] != 0x5c) bad = n;
        MTEST_CHECK(bad < 0, "struct with gaps (%d records) on %s: record %d wrong", n, tc->name, bad);
      }
      free(recs);
    }
    MPI_Type_free(&rt);
  }

  /* Partial messages: 7 ints into a type of 3 ints: count MPI_UNDEFINED,
   * 7 elements; zero of them: count 0. */
  {
    MPI_Datatype tri;
    MPI_Type_contiguous(3, MPI_INT, &tri);
    MPI_Type_commit(&tri);
    int buf[15];
    if (rank == 0) {
      for (int i = 0; i < 7; i++) buf[i] = i;
      MPI_Send(buf, 7, MPI_INT, peer, 5, comm);
      MPI_Send(buf, 0, tri, peer, 5, comm);
      MPI_Send(buf, 2, tri, peer, 5, comm);
    } else {
      MPI_Recv(buf, 5, tri, peer, 5, comm, &st);
      expect_counts(tc, "partial", &st, tri, MPI_UNDEFINED, 7);
      MTEST_CHECK(buf[6] == 6, "partial data on %s", tc->name);
      MPI_Recv(buf, 5, tri, peer, 5, comm, &st);
      expect_counts(tc, "zero count", &st, tri, 0, 0);
      MPI_Recv(buf, 15, MPI_INT, peer, 5, comm, &st);
      expect_counts(tc, "derived into basic", &st, MPI_INT, 6, 6);
    }
    MPI_Type_free(&tri);
  }

  /* Messages that end inside an element of a strided type (4 ints at every
   * other int, extent 7 ints): exactly the ints the message carries land,
   * in type order, and every other int of the buffer keeps its value. Eager
   * sizes (part of the first element, one and a half, two and three
   * quarters) and a rendezvous one that stops 3 ints short of its last
   * element (the transports' unpack of a pulled message). */
  {
    MPI_Datatype v;
    MPI_Type_vector(4, 1, 2, MPI_INT, &v);
    MPI_Type_commit(&v);
    const int cases[4][2] = {{3, 1}, {3, 6}, {3, 11}, {20000, 4 * 20000 - 3}}; /* elements, ints sent */
    for (int c = 0; c < 4; c++) {
      const int elems = cases[c][0], ints = cases[c][1], span = elems * 7;
      int *buf = malloc(sizeof(int) * (size_t)span);
      if (rank == 0) {
        for (int i = 0; i < ints; i++) buf[i] = 100 + i;
        MPI_Send(buf, ints, MPI_INT, peer, 9, comm);
      } else {
        for (int i = 0; i < span; i++) buf[i] = -1;
        MPI_Recv(buf, elems, v, peer, 9, comm, &st);
        int got = -1;
        MPI_Get_elements(&st, MPI_INT, &got);
        MTEST_CHECK(got == ints, "short strided message on %s: %d ints received, %d sent", tc->name, got, ints);
        int bad = -1;
        for (int i = 0; i < span && bad < 0; i++) {
          const int e = i / 7, j = i % 7; /* element e, int j of its extent */
          const int k = e * 4 + j / 2;    /* the message's int that lands there, if any */
          const int want = j % 2 == 0 && k < ints ? 100 + k : -1;
          if (buf[i] != want) bad = i;
        }
        MTEST_CHECK(bad < 0, "%d ints into %d strided elements on %s: int %d of the buffer is %d", ints, elems,
                    tc->name, bad, bad < 0 ? 0 : buf[bad]);
      }
      free(buf);
    }
    MPI_Type_free(&v);
  }

  /* One block at an offset: 5 ints starting 3 ints in (true lower bound
   * 12 bytes). Dense, but a struct, so a receive classifies it for the
   * general delivery, not the direct copy of contiguous and predefined
   * types: the data land at the offset and the ints around them stay.
   * Round 0: the receive waits before the
   * message comes (a token tells the sender to go); round 1: the message
   * is unexpected (the token comes after it, in order from the same
   * sender). */
  {
    const int lens[1] = {5};
    const MPI_Aint disps[1] = {3 * (MPI_Aint)sizeof(int)};
    const MPI_Datatype types[1] = {MPI_INT};
    MPI_Datatype off;
    MPI_Type_create_struct(1, lens, disps, types, &off);
    MPI_Type_commit(&off);
    for (int round = 0; round < 2; round++) {
      int buf[10];
      if (rank == 0) {
        for (int i = 0; i < 10; i++) buf[i] = 70 + i;
        if (round == 0) MPI_Recv(NULL, 0, MPI_INT, peer, 8, comm, MPI_STATUS_IGNORE);
        MPI_Send(buf, 1, off, peer, 7, comm);
        if (round == 1) MPI_Send(NULL, 0, MPI_INT, peer, 8, comm);
      } else {
        for (int i = 0; i < 10; i++) buf[i] = -1;
        MPI_Request q = MPI_REQUEST_NULL;
        if (round == 0) {
          MPI_Irecv(buf, 1, off, peer, 7, comm, &q);
          MPI_Send(NULL, 0, MPI_INT, peer, 8, comm);
        } else {
          MPI_Recv(NULL, 0, MPI_INT, peer, 8, comm, MPI_STATUS_IGNORE);
          MPI_Irecv(buf, 1, off, peer, 7, comm, &q);
        }
        MPI_Wait(&q, &st);
        expect_counts(tc, round == 0 ? "offset type, posted" : "offset type, unexpected", &st, off, 1, 5);
        int bad = -1;
        for (int i = 0; i < 10 && bad < 0; i++)
          if (buf[i] != (i >= 3 && i < 8 ? 70 + i : -1)) bad = i;
        MTEST_CHECK(bad < 0, "offset type (round %d) on %s: int %d = %d", round, tc->name, bad, bad < 0 ? 0 : buf[bad]);
      }
    }
    MPI_Type_free(&off);
  }

  /* Absolute addresses: two separate arrays in one message from MPI_BOTTOM. */
  {
    int xs[4];
    double ys[3];
    MPI_Aint addr[2];
    MPI_Get_address(xs, &addr[0]);
    MPI_Get_address(ys, &addr[1]);
    const int lens[2] = {4, 3};
    const MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Datatype abs_t;
    MPI_Type_create_struct(2, lens, addr, types, &abs_t);
    MPI_Type_commit(&abs_t);
    if (rank == 0) {
      for (int i = 0; i < 4; i++) xs[i] = 40 + i;
      for (int i = 0; i < 3; i++) ys[i] = 0.25 * i;
      MPI_Send(MPI_BOTTOM, 1, abs_t, peer, 6, comm);
    } else {
      for (int i = 0; i < 4; i++) xs[i] = 0;
      for (int i = 0; i < 3; i++) ys[i] = -1;
      MPI_Recv(MPI_BOTTOM, 1, abs_t, peer, 6, comm, &st);
      expect_counts(tc, "MPI_BOTTOM", &st, abs_t, 1, 7);
      MTEST_CHECK(xs[0] == 40 && xs[3] == 43 && ys[0] == 0 && ys[2] == 0.5, "MPI_BOTTOM data on %s", tc->name);
    }
    MPI_Type_free(&abs_t);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  tcomm_t comms[3];
  MPI_Comm nw, info_dup;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_source", "true");
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &nw);
  mtest_check_handled(nw, "MPIX_Comm_dup_nowildcard");
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &info_dup);
  MPI_Info_free(&info);
  comms[0] = (tcomm_t){MPI_COMM_WORLD, "MPI_COMM_WORLD"};
  comms[1] = (tcomm_t){nw, "MPIX_Comm_dup_nowildcard"};
  comms[2] = (tcomm_t){info_dup, "dup_with_info(no_any_source,no_any_tag)"};
  for (int i = 0; i < 3; i++) check_types(&comms[i]);
  MPI_Comm_free(&nw);
  MPI_Comm_free(&info_dup);
  return mtest_finalize();
}
