/* Large messages on each communicator under test: 8 MiB by Send/Recv,
 * Ssend, both directions at once by Isend/Irecv, sent before the receive is
 * posted (unexpected), received by MPI_Mprobe/MPI_Mrecv; 64 MiB both ways
 * by MPI_Sendrecv. Every byte is checked against a pattern that differs per
 * message, and the byte after each receive buffer stays untouched. Ranks 0
 * and 1; other ranks only join. Fails unless mpix carries its
 * no-wildcard communicator (mtest_check_handled). */
#include <stdint.h>
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

typedef struct {
  MPI_Comm comm;
  const char *name;
} tcomm_t;

static int rank, size;

#define MIB (1024 * 1024)

/* 64-bit words of a pattern: cheap to make and check at 64 MiB. */
static uint64_t word(uint64_t seed, size_t i) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + i;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 29);
}
static void fill(void *buf, size_t bytes, uint64_t seed) {
  uint64_t *w = buf;
  for (size_t i = 0; i < bytes / 8; i++) w[i] = word(seed, i);
}
/* Index of the first wrong word, or -1. */
static long verify(const void *buf, size_t bytes, uint64_t seed) {
  const uint64_t *w = buf;
  for (size_t i = 0; i < bytes / 8; i++)
    if (w[i] != word(seed, i)) return (long)i;
  return -1;
}

static char *out, *in;

static void expect(const tcomm_t *tc, const char *what, const MPI_Status *st, size_t bytes, uint64_t seed,
                   int source, int tag) {
  int n = -1;
  MPI_Get_count(st, MPI_BYTE, &n);
  MTEST_CHECK(n == (int)bytes && st->MPI_SOURCE == source && st->MPI_TAG == tag,
              "%s on %s: count %d source %d tag %d", what, tc->name, n, st->MPI_SOURCE, st->MPI_TAG);
  long bad = verify(in, bytes, seed);
  MTEST_CHECK(bad < 0, "%s on %s: word %ld of %zu wrong", what, tc->name, bad, bytes / 8);
  MTEST_CHECK((unsigned char)in[bytes] == 0xEE, "%s on %s: byte after the buffer written", what, tc->name);
  in[bytes] = (char)0xEE;
}

static void check_large(const tcomm_t *tc) {
  MPI_Comm comm = tc->comm;
  MPI_Status st;
  MPI_Request reqs[2];
  const size_t m8 = 8 * MIB, m64 = 64 * MIB;
  if (rank > 1) { /* the barriers of ranks 0 and 1 */
    MPI_Barrier(comm);
    MPI_Barrier(comm);
    return;
  }
  const int peer = 1 - rank;
  in[m8] = in[m64] = (char)0xEE;

  /* 8 MiB one way, Send then Ssend. */
  if (rank == 0) {
    fill(out, m8, 1);
    MPI_Send(out, (int)m8, MPI_BYTE, peer, 1, comm);
    fill(out, m8, 2);
    MPI_Ssend(out, (int)m8, MPI_BYTE, peer, 2, comm);
  } else {
    MPI_Recv(in, (int)m8, MPI_BYTE, peer, 1, comm, &st);
    expect(tc, "8 MiB Send", &st, m8, 1, peer, 1);
    MPI_Recv(in, (int)m8, MPI_BYTE, peer, 2, comm, &st);
    expect(tc, "8 MiB Ssend", &st, m8, 2, peer, 2);
  }

  /* 8 MiB both directions at once. */
  fill(out, m8, 20 + (uint64_t)rank);
  MPI_Irecv(in, (int)m8, MPI_BYTE, peer, 4, comm, &reqs[0]);
  MPI_Isend(out, (int)m8, MPI_BYTE, peer, 4, comm, &reqs[1]);
  MPI_Wait(&reqs[0], &st);
  expect(tc, "8 MiB both ways", &st, m8, 20 + (uint64_t)peer, peer, 4);
  MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);

  /* Unexpected: sent before the receive is posted, two of them with the
   * same tag (order kept), received by Recv and by Mprobe/Mrecv. */
  if (rank == 0) {
    char *out2 = malloc(m8);
    fill(out, m8, 30);
    fill(out2, m8, 31);
    MPI_Isend(out, (int)m8, MPI_BYTE, peer, 5, comm, &reqs[0]);
    MPI_Isend(out2, (int)m8 - 8, MPI_BYTE, peer, 5, comm, &reqs[1]);
    MPI_Barrier(comm);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    free(out2);
  } else {
    MPI_Barrier(comm);
    MPI_Message msg;
    MPI_Recv(in, (int)m8, MPI_BYTE, peer, 5, comm, &st);
    expect(tc, "8 MiB unexpected", &st, m8, 30, peer, 5);
    in[m8 - 8] = (char)0xEE;
    MPI_Mprobe(peer, 5, comm, &msg, &st);
    MPI_Mrecv(in, (int)m8, MPI_BYTE, &msg, &st);
    expect(tc, "8 MiB Mprobe/Mrecv", &st, m8 - 8, 31, peer, 5);
  }

  /* 64 MiB both ways by Sendrecv. */
  fill(out, m64, 40 + (uint64_t)rank);
  MPI_Sendrecv(out, (int)m64, MPI_BYTE, peer, 6, in, (int)m64, MPI_BYTE, peer, 6, comm, &st);
  expect(tc, "64 MiB Sendrecv", &st, m64, 40 + (uint64_t)peer, peer, 6);
  MPI_Barrier(comm);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  out = malloc(64 * MIB);
  in = malloc(64 * MIB + 1);
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
  for (int i = 0; i < 3; i++) check_large(&comms[i]);
  MPI_Comm_free(&nw);
  MPI_Comm_free(&info_dup);
  free(out);
  free(in);
  return mtest_finalize();
}
