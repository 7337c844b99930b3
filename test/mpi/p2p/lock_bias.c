/* mpix's engine lock biased to the application (MPIX_LOCK_BIAS): below
 * MPI_THREAD_MULTIPLE the application takes the lock with a plain store,
 * and mpix's liveness thread, which progresses a posted receive while the
 * application is away from MPI, first revokes the bias. The two alternate
 * here, 40 rounds of:
 *   - a burst: 3000 ping-pongs and 20 streamed windows of 64 messages
 *     (enough acquisitions in a row for the application to earn the bias
 *     back), every payload checked;
 *   - a pause: rank 1 posts a receive and stays out of MPI for 12 ms
 *     (longer than the liveness thread's longest period, 5 ms) while rank 0
 *     sends into it, so the liveness thread takes the message in (revoking
 *     the bias) and the receive completes with the right bytes.
 * Meanwhile a second thread of rank 1 reads mpix's MPI_T counters in a
 * loop through the first rounds (MPI_T's thread level is its own: where it
 * gives MPI_THREAD_MULTIPLE): it takes the lock as mpix's threads do,
 * never on the application's bias beside it.
 * mpix carried it: mpix_lock_fast_takes and mpix_lock_revocations rose on
 * rank 1 at MPI_THREAD_SINGLE; both stay at 0 at MPI_THREAD_MULTIPLE
 * (MTEST_THREAD_LEVEL=multiple) and with MPIX_LOCK_BIAS=off. Where the bias
 * cannot be had (membarrier refused, ThreadSanitizer) the counters are
 * "not checked". Ranks beyond 2 only join. */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mpix.h"
#include "mtest.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

#define ROUNDS 40
#define PINGS 3000
#define WINDOWS 20
#define W 64

static int rank;

static uint64_t word_of(int round, int i) { return ((uint64_t)round << 40) ^ ((uint64_t)i * 0x9e3779b97f4a7c15u); }

static void burst(MPI_Comm c, int round) {
  uint64_t v = 0;
  for (int i = 0; i < PINGS; i++) {
    if (rank == 0) {
      v = word_of(round, i);
      MPI_Send(&v, 1, MPI_UINT64_T, 1, 1, c);
      MPI_Recv(&v, 1, MPI_UINT64_T, 1, 2, c, MPI_STATUS_IGNORE);
      MTEST_CHECK(v == ~word_of(round, i), "round %d ping %d: reply %llx", round, i, (unsigned long long)v);
    } else {
      MPI_Recv(&v, 1, MPI_UINT64_T, 0, 1, c, MPI_STATUS_IGNORE);
      MTEST_CHECK(v == word_of(round, i), "round %d ping %d: got %llx", round, i, (unsigned long long)v);
      v = ~v;
      MPI_Send(&v, 1, MPI_UINT64_T, 0, 2, c);
    }
  }
  uint64_t buf[W];
  MPI_Request q[W];
  for (int k = 0; k < WINDOWS; k++) {
    for (int w = 0; w < W; w++) {
      if (rank == 0) {
        buf[w] = word_of(round, k * W + w);
        MPI_Isend(&buf[w], 1, MPI_UINT64_T, 1, 10 + w, c, &q[w]);
      } else {
        buf[w] = 0;
        MPI_Irecv(&buf[w], 1, MPI_UINT64_T, 0, 10 + w, c, &q[w]);
      }
    }
    MPI_Waitall(W, q, MPI_STATUSES_IGNORE);
    if (rank == 1)
      for (int w = 0; w < W; w++)
        MTEST_CHECK(buf[w] == word_of(round, k * W + w), "round %d window %d message %d: got %llx", round, k, w,
                    (unsigned long long)buf[w]);
  }
}

static void pause_with_receive(MPI_Comm c, int round) {
  uint64_t v = 0;
  if (rank == 0) {
    usleep(1000);
    v = ~word_of(round, -1);
    MPI_Send(&v, 1, MPI_UINT64_T, 1, 3, c);
  } else {
    MPI_Request r;
    MPI_Irecv(&v, 1, MPI_UINT64_T, 0, 3, c, &r);
    usleep(12000); /* no MPI call: only the liveness thread can take it in */
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MTEST_CHECK(v == ~word_of(round, -1), "round %d: the receive left posted got %llx", round,
                (unsigned long long)v);
  }
}

static atomic_int reader_stop;
static long long reader_reads;

static void *read_counters(void *arg) {
  (void)arg;
  mtest_pvar_t p = mtest_pvar_open("mpix_matches");
  long long last = 0;
  while (p.ok && !atomic_load(&reader_stop)) {
    const long long v = mtest_pvar_read(&p);
    MTEST_CHECK(v >= last, "mpix_matches went back from %lld to %lld", last, v);
    last = v;
    reader_reads++;
    usleep(100);
  }
  return NULL;
}

static int bias_possible(void) {
#ifdef UNDER_TSAN
  return 0;
#else
  const long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  return q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0;
#endif
}

int main(int argc, char **argv) {
  const char *level = getenv("MTEST_THREAD_LEVEL");
  const int multiple = level != NULL && strcmp(level, "multiple") == 0;
  const char *off = getenv("MPIX_LOCK_BIAS");
  const int bias_off = off != NULL && (strcmp(off, "off") == 0 || strcmp(off, "0") == 0);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm c;
  MPIX_Comm_dup_nowildcard(MPI_COMM_WORLD, &c);
  mtest_check_handled(c, "the no-wildcard duplicate");
  mtest_pvar_t fast = mtest_pvar_open("mpix_lock_fast_takes");
  mtest_pvar_t revoked = mtest_pvar_open("mpix_lock_revocations");
  MTEST_CHECK(fast.ok && revoked.ok, "no performance variables mpix_lock_fast_takes / mpix_lock_revocations");
  const long long fast0 = mtest_pvar_read(&fast), revoked0 = mtest_pvar_read(&revoked);

  /* MPI_T was initialised by mtest_pvar_open; its level is asked again. */
  int t_level = MPI_THREAD_SINGLE;
  MPI_T_init_thread(MPI_THREAD_MULTIPLE, &t_level);
  pthread_t reader;
  const int reading = rank == 1 && t_level == MPI_THREAD_MULTIPLE && pthread_create(&reader, NULL, read_counters, NULL) == 0;
  if (rank < 2)
    for (int round = 0; round < ROUNDS; round++) {
      burst(c, round);
      pause_with_receive(c, round);
      if (round == ROUNDS / 4 && reading) {
        atomic_store(&reader_stop, 1);
        pthread_join(reader, NULL);
        MTEST_CHECK(reader_reads > 0, "the reading thread read nothing");
      }
    }
  if (rank == 1 && !reading) mtest_printf("not checked: MPI_T read from a second thread (MPI_T_init_thread gave %d)\n", t_level);
  MPI_T_finalize();

  const long long fast_n = mtest_pvar_read(&fast) - fast0, revoked_n = mtest_pvar_read(&revoked) - revoked0;
  if (rank == 1) {
    if (multiple || bias_off) {
      MTEST_CHECK(fast_n == 0 && revoked_n == 0, "the lock was biased (%lld fast takes, %lld revocations) %s", fast_n,
                  revoked_n, multiple ? "at MPI_THREAD_MULTIPLE" : "with MPIX_LOCK_BIAS=off");
    } else if (!bias_possible() && fast_n == 0) {
      mtest_printf("not checked: the lock bias (membarrier refused or ThreadSanitizer: never biased)\n");
    } else {
      MTEST_CHECK(fast_n > 0, "the application never took the lock on its bias");
      MTEST_CHECK(revoked_n > 0, "the liveness thread never revoked the bias (%lld fast takes)", fast_n);
    }
  }
  MPI_Comm_free(&c);
  return mtest_finalize();
}
