/* Split single-copy transfers (MPIX_SINGLE_COPY_SPLIT, src/p2p/split_copy.cc):
 * a large message within a node read by the receiver up to a page boundary
 * near its middle and written by the sender from there on. Ranks 0 (sender)
 * and 1 (receiver) of a no-wildcard communicator; other ranks only join.
 *
 * 1. Every size around the split threshold and the page boundary, buffers
 *    at odd offsets on both sides, blocking and nonblocking: every byte
 *    checked, the bytes around the receive buffer untouched, the send
 *    buffer scribbled over the moment the send returns (reusable on
 *    return: a part written after that would carry the scribble).
 * 2. Thousands in flight: windows of nonblocking sends whose buffers are
 *    refilled as soon as each one's MPI_Wait returns.
 * 3. Both ranks send to each other at once (MPI_Sendrecv), each a sender
 *    and a receiver of split messages.
 * 4. A sender that computes outside MPI after MPI_Isend must not hold the
 *    receive up: rank 1 finishes its MPI_Recv while rank 0 waits, without
 *    any MPI call, for a file rank 1 creates afterwards. Run with
 *    MPIX_PROGRESS_THREAD=0 (testlist) nobody writes the sender's part then:
 *    the receiver takes it back (mpix_single_copy_writes does not move).
 * Fails unless single copy is in use and, with the threshold above 0 and the
 * shared-memory rings on (their claim words settle who copies), at least
 * one part was written by its sender (mpix_single_copy_writes). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mpix.h"
#include "mtest.h"

static int rank;
static const unsigned char kGuard = 0xA5;

static unsigned char pattern(unsigned seed, size_t i) { return (unsigned char)(seed * 131u + i * 7u + (i >> 12)); }
static void fill(unsigned char *b, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) b[i] = pattern(seed, i);
}
static long first_wrong(const unsigned char *b, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != pattern(seed, i)) return (long)i;
  return -1;
}

/* One message of n bytes, 0 -> 1, at the given offsets into fresh buffers. */
static void one(MPI_Comm c, size_t n, size_t soff, size_t roff, int nonblocking, unsigned seed) {
  const size_t pad = 64;
  if (rank == 0) {
    unsigned char *s = malloc(n + soff);
    fill(s + soff, n, seed);
    if (nonblocking) {
      MPI_Request r;
      MPI_Isend(s + soff, (int)n, MPI_BYTE, 1, (int)(seed % 1000), c, &r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
      MPI_Send(s + soff, (int)n, MPI_BYTE, 1, (int)(seed % 1000), c);
    }
    memset(s + soff, 0x5A, n); /* reusable on return */
    free(s);
  } else if (rank == 1) {
    unsigned char *r = malloc(n + roff + 2 * pad);
    memset(r, kGuard, n + roff + 2 * pad);
    unsigned char *at = r + pad + roff;
    MPI_Status st;
    if (nonblocking) {
      MPI_Request q;
      MPI_Irecv(at, (int)n, MPI_BYTE, 0, (int)(seed % 1000), c, &q);
      MPI_Wait(&q, &st);
    } else {
      MPI_Recv(at, (int)n, MPI_BYTE, 0, (int)(seed % 1000), c, &st);
    }
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    MTEST_CHECK(count == (int)n, "%zu bytes (offsets %zu/%zu): count %d", n, soff, roff, count);
    const long bad = first_wrong(at, n, seed);
    MTEST_CHECK(bad < 0, "%zu bytes (offsets %zu/%zu, %s): byte %ld is %d, want %d", n, soff, roff,
                nonblocking ? "Isend/Irecv" : "Send/Recv", bad, bad < 0 ? 0 : at[bad],
                bad < 0 ? 0 : pattern(seed, (size_t)bad));
    for (size_t i = 0; i < pad + roff; i++)
      if (r[i] != kGuard) {
        MTEST_CHECK(0, "%zu bytes: byte %zu before the buffer changed", n, pad + roff - i);
        break;
      }
    for (size_t i = 0; i < pad; i++)
      if (at[n + i] != kGuard) {
        MTEST_CHECK(0, "%zu bytes: byte %zu after the buffer changed", n, i);
        break;
      }
    free(r);
  }
}

/* Windows of nonblocking sends, each buffer refilled the moment its send's
 * wait returns. */
static void in_flight(MPI_Comm c, size_t n, int total, int window) {
  unsigned char **b = malloc(sizeof *b * (size_t)window);
  MPI_Request *q = malloc(sizeof *q * (size_t)window);
  for (int w = 0; w < window; w++) b[w] = malloc(n);
  for (int base = 0; base < total; base += window) {
    for (int w = 0; w < window && base + w < total; w++) {
      const unsigned seed = 7000u + (unsigned)(base + w);
      if (rank == 0) {
        fill(b[w], n, seed);
        MPI_Isend(b[w], (int)n, MPI_BYTE, 1, w, c, &q[w]);
      } else {
        MPI_Irecv(b[w], (int)n, MPI_BYTE, 0, w, c, &q[w]);
      }
    }
    for (int w = 0; w < window && base + w < total; w++) {
      MPI_Wait(&q[w], MPI_STATUS_IGNORE);
      if (rank == 0) {
        memset(b[w], 0x5A, n);
      } else {
        const long bad = first_wrong(b[w], n, 7000u + (unsigned)(base + w));
        MTEST_CHECK(bad < 0, "message %d in flight: byte %ld wrong", base + w, bad);
      }
    }
  }
  for (int w = 0; w < window; w++) free(b[w]);
  free(b);
  free(q);
}

static void both_ways(MPI_Comm c, size_t n) {
  unsigned char *s = malloc(n), *r = malloc(n);
  fill(s, n, 900u + (unsigned)rank);
  const int peer = 1 - rank;
  MPI_Sendrecv(s, (int)n, MPI_BYTE, peer, 5, r, (int)n, MPI_BYTE, peer, 5, c, MPI_STATUS_IGNORE);
  const long bad = first_wrong(r, n, 900u + (unsigned)peer);
  MTEST_CHECK(bad < 0, "Sendrecv of %zu bytes both ways: byte %ld wrong", n, bad);
  free(s);
  free(r);
}

static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* The sender computes outside MPI while its receiver receives. */
static void busy_sender(MPI_Comm c, size_t n, mtest_pvar_t *writes, int thread_off) {
  char flag[256] = "";
  if (rank == 0) snprintf(flag, sizeof flag, "/tmp/mpix-split-copy-%ld-%ld", (long)getpid(), (long)time(NULL));
  MPI_Bcast(flag, sizeof flag, MPI_CHAR, 0, c);
  unsigned char *b = malloc(n);
  if (rank == 0) {
    const long long before = mtest_pvar_read(writes);
    fill(b, n, 4242u);
    MPI_Request q;
    MPI_Isend(b, (int)n, MPI_BYTE, 1, 6, c, &q);
    /* No MPI call until the receiver says its receive completed. */
    const time_t give_up = time(NULL) + 60;
    while (!file_exists(flag) && time(NULL) < give_up) usleep(1000);
    MTEST_CHECK(file_exists(flag), "the receive waited for a sender computing outside MPI (60 s)");
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    if (thread_off)
      MTEST_CHECK(mtest_pvar_read(writes) == before,
                  "with no progress thread the receiver should have taken the part back (writes %lld -> %lld)",
                  before, mtest_pvar_read(writes));
    unlink(flag);
  } else if (rank == 1) {
    MPI_Recv(b, (int)n, MPI_BYTE, 0, 6, c, MPI_STATUS_IGNORE);
    FILE *f = fopen(flag, "w");
    if (f) fclose(f);
    const long bad = first_wrong(b, n, 4242u);
    MTEST_CHECK(bad < 0, "busy sender's message: byte %ld wrong", bad);
  }
  free(b);
  MPI_Barrier(c);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm c;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &c);
  mtest_check_handled(c, "MPIX_Comm_dup_nowildcard");
  mtest_pvar_t reads = mtest_pvar_open("mpix_single_copy_reads");
  mtest_pvar_t writes = mtest_pvar_open("mpix_single_copy_writes");
  MTEST_CHECK(reads.ok && writes.ok, "mpix's single-copy pvars missing");
  const char *env = getenv("MPIX_SINGLE_COPY_SPLIT");
  const size_t split = env ? (size_t)strtoull(env, NULL, 10) : 65536;
  const char *ring = getenv("MPIX_SHM_RING");
  const int splits = split > 0 && !(ring && strcmp(ring, "off") == 0);
  const char *thread = getenv("MPIX_PROGRESS_THREAD");
  const int thread_off = thread && strcmp(thread, "0") == 0;

  /* Single copy at all? (Off where ptrace rules forbid it, or another node.) */
  one(c, 1 << 20, 0, 0, 0, 1);
  int used = rank != 1 || mtest_pvar_read(&reads) >= 1, all = 0;
  MPI_Allreduce(&used, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (rank == 0) mtest_printf("skipped: single copy not in use in this run\n");
    MPI_Comm_free(&c);
    MPI_Finalize();
    return 0;
  }

  const size_t at = split > 4097 ? split : 65536;
  const size_t sizes[] = {at - 4097, at - 1, at,         at + 1,           at + 4095,
                          at + 4096, at + 4097, 2 * at + 3, (1 << 20) + 7, (8 << 20) + 4093};
  const size_t offsets[][2] = {{0, 0}, {3, 1}, {0, 63}, {1, 4095}, {4096, 2048}};
  unsigned seed = 10;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++)
      for (int nb = 0; nb < 2; nb++) one(c, sizes[s], offsets[o][0], offsets[o][1], nb, seed++);
  if (rank < 2) in_flight(c, 256 * 1024 + 40, 2000, 16);
  if (rank < 2) both_ways(c, 8 << 20);
  busy_sender(c, 4 << 20, &writes, thread_off);

  /* The sender wrote parts (it waited in MPI while its receiver read), or
   * none where splitting is off. */
  if (rank == 0) {
    const long long w = mtest_pvar_read(&writes);
    if (splits)
      MTEST_CHECK(w > 0, "mpix_single_copy_writes %lld: no part was written by its sender", w);
    else
      MTEST_CHECK(w == 0, "splitting off (MPIX_SINGLE_COPY_SPLIT=0 or MPIX_SHM_RING=off) but %lld parts written", w);
  }
  MPI_Comm_free(&c);
  return mtest_finalize();
}
