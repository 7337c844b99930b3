/* Soak (issue 17): randomized traffic for a set time or message count, on
 * communicators that are created and freed while other communicators still
 * have traffic in flight; every message is checked to arrive exactly once
 * and intact, and the process memory (PSS, else RSS) must stay flat.
 *
 * Each round carries 1-3 batches, each on a communicator from a pool of
 * slots. A slot holds MPI_Comm_dup of MPI_COMM_WORLD or of another slot
 * (handled when its parent is, or under MPIX_INTERCEPT=all),
 * MPIX_Comm_dup_nowildcard, MPI_Comm_dup_with_info with both assertions, or
 * a random split of MPI_COMM_WORLD dup'ed with mpi_assert_no_any_tag. Between
 * batches a slot not in use is freed and recreated (collective calls while
 * the earlier batches' requests are pending), and a slot may be freed right
 * after its batch was posted (MPI_Comm_free with operations pending).
 *
 * A batch: every member sends 0-40 messages of 0 B .. 256 KiB (across the
 * eager limit) with mostly few tags, to random members, itself included.
 * Patterns: all receives pre-posted, then Isend/Issend/Send/Ssend (and
 * Rsend after a barrier); sends and receives interleaved, the last receives
 * blocking; all sends first, then receives (unexpected messages).
 * Completion of all batches of a round at once: Waitall, Waitany, Waitsome,
 * Testsome, Testall or single Waits, over arrays that mix communicators.
 * Receivers may open an unordered region around a batch's receives, cancel
 * receives that cannot match (MPI_Test_cancelled must say so), and cancel a
 * receive of a real message at once (either outcome is legal; the message
 * must then arrive exactly once, by that receive or by its replacement).
 *
 * Every plan comes from one seed that all ranks share, so each receiver
 * knows the exact set of (sender, sequence) it must get. A message carries a
 * header (sequence, sender, size) and a checksum of its body; receives check
 * status, header, checksum, the untouched bytes after the message, that no
 * message comes twice or from another round, and (outside regions and racy
 * cancels) MPI's non-overtaking order. A lost message hangs the round: a
 * watchdog (SOAK_ROUND_TIMEOUT seconds) names the round and phase and exits.
 *
 * Environment: SOAK_SECONDS (default 10 when SOAK_MESSAGES is unset),
 * SOAK_MESSAGES (stop after this many messages in all), SOAK_SEED,
 * SOAK_RSS_SLACK_MB (allowed RSS growth beyond 10%, default 16; negative:
 * memory not judged, for sanitizer builds whose own memory grows),
 * SOAK_ROUND_TIMEOUT (default 60), SOAK_LEAK_KB (leak this much per round:
 * shows that the memory check fails), SOAK_TRACE (print every batch's plan
 * on stderr). Built twice: relinked with libmpix
 * (soak) and as a plain MPI program for LD_PRELOAD (soak_preload, which
 * finds the MPIX functions at run time and fails without them). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mtest.h"

/* ---- MPIX entry points: linked, or looked up when preloaded ---- */
typedef int (*handled_fn)(MPI_Comm, int *);
typedef int (*dup_fn)(MPI_Comm, MPI_Comm *);
typedef int (*region_fn)(MPI_Comm);
static handled_fn p_is_handled;
static dup_fn p_dup_nowildcard;
static region_fn p_region_open, p_region_close;

static int resolve_mpix(void) {
#ifdef SOAK_PRELOAD
  p_is_handled = (handled_fn)dlsym(RTLD_DEFAULT, "MPIX_Comm_is_handled");
  p_dup_nowildcard = (dup_fn)dlsym(RTLD_DEFAULT, "MPIX_Comm_dup_nowildcard");
  p_region_open = (region_fn)dlsym(RTLD_DEFAULT, "MPIX_Unordered_region_open");
  p_region_close = (region_fn)dlsym(RTLD_DEFAULT, "MPIX_Unordered_region_close");
#else
  p_is_handled = MPIX_Comm_is_handled;
  p_dup_nowildcard = MPIX_Comm_dup_nowildcard;
  p_region_open = MPIX_Unordered_region_open;
  p_region_close = MPIX_Unordered_region_close;
#endif
  return p_is_handled && p_dup_nowildcard && p_region_open && p_region_close;
}

/* ---- deterministic randomness ---- */
static uint64_t splitmix(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int below(uint64_t *st, int n) { return n <= 1 ? 0 : (int)(splitmix(st) % (uint64_t)n); }
static uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t s = a ^ (b * 0xD6E8FEB86659FD93ull);
  return splitmix(&s);
}

/* ---- configuration and totals ---- */
#define NSLOT 6
#define MAXBATCH 3
#define MAXMSG 40               /* per sender and batch */
#define MAXBYTES (256 * 1024)
#define SLACK 16                /* receive buffers exceed what they need by up to this */
#define NSAMPLE 32              /* RSS samples after the warm-up */
#define WARMUP 0.2              /* fraction of the run before the first sample */

static int wrank, wsize, intercept_all, tag_max, trace;
static uint64_t seed;
static double t_start;
static long long n_msgs, n_bytes, n_cancel_never, n_cancel_racy, n_cancel_won, n_regions, n_comms, n_pending_free;
static volatile sig_atomic_t wd_round;
static void *volatile leaked; /* SOAK_LEAK_KB: kept where the compiler must keep it */
static const char *volatile wd_phase = "start";

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The process's memory in MB: its proportional set size (Pss in
 * /proc/self/smaps_rollup: private pages whole, shared ones divided among
 * the processes mapping them), else its resident set. RSS counts every page
 * of a peer's shared-memory segment this rank ever touched, as UCX's
 * shared-memory FIFOs are (each entry's receive buffer sits in the
 * receiver's segment and every local sender writes into it), so 8 ranks'
 * RSS grew by 8 MB a peer over minutes while the memory in use barely did
 * (bench/RESULTS.md, "Soak"). */
static double rss_mb(void) {
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  if (f) {
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "Pss: %ld kB", &kb) == 1) break;
    fclose(f);
    if (kb >= 0) return (double)kb / 1024.0;
  }
  long pages = 0, resident = 0;
  f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  fclose(f);
  return resident < 0 ? -1 : (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

/* A lost message leaves a receive waiting forever; say where, then leave
 * (the launcher ends the other ranks). Only async-signal-safe calls. */
static void watchdog(int sig) {
  (void)sig;
  char msg[256];
  int n = snprintf(msg, sizeof msg, "[rank %d] soak: round %d stuck in %s (SOAK_SEED=%llu)\n", wrank,
                   (int)wd_round, wd_phase, (unsigned long long)seed);
  if (n > 0 && write(2, msg, (size_t)n) < 0) _exit(98);
  _exit(99);
}

/* ---- communicator slots ---- */
typedef struct {
  MPI_Comm comm;  /* MPI_COMM_NULL: empty */
  int kind, handled, size, rank;
  int world[64];  /* world rank of each member */
  const char *name;
} slot_t;
static slot_t slots[NSLOT];

static const char *kind_name[] = {"MPI_Comm_dup", "MPIX_Comm_dup_nowildcard", "dup_with_info(no_any_source,no_any_tag)",
                                  "split+dup_with_info(no_any_tag)"};

/* Fills slot s; st is the shared random state, so every rank makes the same
 * collective calls. The parent may be a slot with requests in flight. */
static void slot_create(int s, uint64_t *st) {
  slot_t *sl = &slots[s];
  int live[NSLOT], nlive = 0;
  for (int i = 0; i < NSLOT; i++)
    if (i != s && slots[i].comm != MPI_COMM_NULL) live[nlive++] = i;
  const int kind = below(st, 4);
  const int from_slot = nlive > 0 && below(st, 2);
  const int parent_slot = from_slot ? live[below(st, nlive)] : -1;
  MPI_Comm parent = from_slot ? slots[parent_slot].comm : MPI_COMM_WORLD;
  int expect_handled = 1;
  switch (kind) {
    case 0:
      MPI_Comm_dup(parent, &sl->comm);
      /* MPI-4: a dup keeps its parent's assertions (and so mpix's handling) */
      expect_handled = intercept_all || (from_slot && slots[parent_slot].handled);
      break;
    case 1: p_dup_nowildcard(parent, &sl->comm); break;
    case 2: sl->comm = mtest_dup_asserting(parent, 1, 1); break;
    default: {
      int color = 0;
      for (int r = 0; r <= wrank; r++) color = below(st, 2);
      for (int r = wrank + 1; r < wsize; r++) (void)below(st, 2); /* keep st shared */
      MPI_Comm split;
      MPI_Comm_split(MPI_COMM_WORLD, color, (int)(mix(seed, (uint64_t)wrank) & 0xffff), &split);
      sl->comm = mtest_dup_asserting(split, 0, 1);
      MPI_Comm_free(&split);
      break;
    }
  }
  sl->kind = kind;
  MPI_Comm_size(sl->comm, &sl->size);
  MPI_Comm_rank(sl->comm, &sl->rank);
  MPI_Group g, wg;
  MPI_Comm_group(sl->comm, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  int idx[64];
  for (int i = 0; i < sl->size; i++) idx[i] = i;
  MPI_Group_translate_ranks(g, sl->size, idx, wg, sl->world);
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
  sl->handled = 0;
  p_is_handled(sl->comm, &sl->handled);
  sl->name = kind_name[kind];
  /* The soak means to test mpix's engine: a communicator that should be
   * handled and is not would let native MPI pass the test. */
  MTEST_CHECK(sl->handled == expect_handled, "%s (from %s): handled %d, expected %d", sl->name,
              from_slot ? "a slot" : "MPI_COMM_WORLD", sl->handled, expect_handled);
  n_comms++;
}

static void slot_free(int s) {
  MPI_Comm_free(&slots[s].comm);
  slots[s].comm = MPI_COMM_NULL;
}

/* ---- messages ---- */
typedef struct {
  uint64_t seq;
  uint32_t sender, bytes; /* world rank; whole message size */
  uint64_t sum;           /* of the body after the header */
} header_t;
#define HDR ((int)sizeof(header_t))

enum { M_ISEND, M_ISSEND, M_SEND, M_SSEND, M_RSEND };
enum { P_PREPOST, P_PREPOST_BARRIER, P_INTERLEAVE, P_SENDS_FIRST, NPATTERN };

typedef struct {
  int dest, tag, bytes, mode;
  uint64_t seq;
} msg_t;

static uint64_t body_word(uint64_t key, size_t j) {
  uint64_t s = key + j * 0x9E3779B97F4A7C15ull;
  return splitmix(&s);
}

/* Messages shorter than a header are all body: their bytes depend on the
 * (sender, sequence), so a receiver can tell them apart. */
static void fill(unsigned char *buf, int bytes, uint32_t sender, uint64_t seq) {
  const uint64_t key = mix(seq, sender);
  if (bytes < HDR) {
    for (int i = 0; i < bytes; i++) buf[i] = (unsigned char)(body_word(key, (size_t)i / 8) >> (8 * (i % 8)));
    return;
  }
  header_t h = {seq, sender, (uint32_t)bytes, 0};
  uint64_t sum = 0xcbf29ce484222325ull;
  unsigned char *b = buf + HDR;
  const size_t n = (size_t)bytes - HDR;
  for (size_t j = 0; j * 8 < n; j++) {
    uint64_t w = body_word(key, j);
    const size_t k = n - j * 8 < 8 ? n - j * 8 : 8;
    memcpy(b + j * 8, &w, k);
  }
  for (size_t i = 0; i < n; i++) sum = (sum ^ b[i]) * 0x100000001b3ull;
  h.sum = sum;
  memcpy(buf, &h, sizeof h);
}

static int small_matches(const unsigned char *buf, int bytes, uint32_t sender, uint64_t seq) {
  unsigned char tmp[HDR];
  fill(tmp, bytes, sender, seq);
  return memcmp(tmp, buf, (size_t)bytes) == 0;
}

static int pick_bytes(uint64_t *st) {
  const int k = below(st, 100);
  if (k < 60) return below(st, 257);
  if (k < 90) return 256 + below(st, 16 * 1024);
  if (k < 98) return 16 * 1024 + below(st, 48 * 1024);
  return 64 * 1024 + below(st, MAXBYTES - 64 * 1024 + 1);
}

/* What sender (world rank) sends in batch b of round r on a communicator of
 * csize members under pattern pat; the same on every rank. */
static int make_plan(int r, int b, int sender, int csize, int pat, msg_t *plan) {
  uint64_t st = mix(mix(seed, (uint64_t)r), (uint64_t)(b * 1000 + sender));
  const int n = below(&st, MAXMSG + 1);
  for (int i = 0; i < n; i++) {
    msg_t *m = &plan[i];
    m->dest = below(&st, csize);
    m->tag = below(&st, 10) == 0 ? below(&st, tag_max) : below(&st, 4);
    m->bytes = pick_bytes(&st);
    m->seq = ((uint64_t)r << 24) | ((uint64_t)b << 16) | (uint64_t)i;
    const int k = below(&st, 20);
    /* blocking sends only where every receive was posted before any send */
    if (pat == P_PREPOST || pat == P_PREPOST_BARRIER)
      m->mode = k < 10 ? M_ISEND : k < 13 ? M_ISSEND : k < 16 ? M_SEND : k < 18 ? M_SSEND
              : pat == P_PREPOST_BARRIER ? M_RSEND : M_ISEND;
    else
      m->mode = k < 16 ? M_ISEND : M_ISSEND;
  }
  return n;
}

/* ---- one round ---- */
typedef struct {
  int batch, src, srcw, tag, bytes, group;
  uint64_t seq;
  int got; /* times received */
} expect_t;

typedef struct {
  int batch, group, capacity, blocking, ordered, want; /* want: expect_t index (ordered) */
  unsigned char *buf;
  MPI_Request req;
  MPI_Status st;
  int done;
} recv_t;

typedef struct {
  int slot, pattern, free_after, region, region_early;
  int nexp, exp0; /* expect_t range */
  int set_only;
} batch_t;

static expect_t *exps;
static recv_t *recvs;
static int nexps, nrecvs, cap_exps, cap_recvs;
static MPI_Request *sreqs, *creqs; /* sends; cancelled never-matching receives */
static unsigned char **sbufs;
static int nsreqs, ncreqs, cap_sreqs, cap_creqs;

static void grow(void **p, int *cap, int need, size_t elem) {
  if (need <= *cap) return;
  int c = *cap ? *cap : 256;
  while (c < need) c *= 2;
  *p = realloc(*p, (size_t)c * elem);
  *cap = c;
}

static int group_max(int e0, int ne, int group) {
  int m = 0;
  for (int i = e0; i < e0 + ne; i++)
    if (exps[i].group == group && exps[i].bytes > m) m = exps[i].bytes;
  return m;
}

static void post_recv(recv_t *rv, MPI_Comm comm) {
  const expect_t *e = &exps[rv->want];
  rv->buf = malloc((size_t)rv->capacity + 1);
  memset(rv->buf, 0xCD, (size_t)rv->capacity);
  if (rv->blocking) {
    MPI_Recv(rv->buf, rv->capacity, MPI_BYTE, e->src, e->tag, comm, &rv->st);
    rv->done = 1;
    rv->req = MPI_REQUEST_NULL;
  } else {
    MPI_Irecv(rv->buf, rv->capacity, MPI_BYTE, e->src, e->tag, comm, &rv->req);
  }
}

/* A receive for a message that can never come (a tag no plan uses). */
static void cancel_never(MPI_Comm comm, int csize, uint64_t *st) {
  static int buf[4];
  MPI_Request req;
  MPI_Irecv(buf, 4, MPI_INT, below(st, csize), tag_max, comm, &req);
  MPI_Cancel(&req);
  n_cancel_never++;
  if (below(st, 2)) {
    MPI_Status s;
    int flag = -1;
    MPI_Wait(&req, &s);
    MPI_Test_cancelled(&s, &flag);
    MTEST_CHECK(flag == 1, "round %d: receive that cannot match not cancelled", (int)wd_round);
  } else {
    /* completed later beside the real requests */
    grow((void **)&creqs, &cap_creqs, ncreqs + 1, sizeof(MPI_Request));
    creqs[ncreqs++] = req;
  }
}

/* Cancels at once a receive of a real message: it may already have matched
 * (then it completes with its message) or not (then the message must go to
 * a replacement receive); either way the message arrives exactly once. */
static void racy_cancel(recv_t *rv, MPI_Comm comm) {
  if (rv->req == MPI_REQUEST_NULL) return;
  MPI_Cancel(&rv->req);
  MPI_Wait(&rv->req, &rv->st);
  int c = 0;
  MPI_Test_cancelled(&rv->st, &c);
  n_cancel_racy++;
  if (c) {
    free(rv->buf);
    post_recv(rv, comm);
  } else {
    n_cancel_won++;
    rv->done = 1;
  }
}

static void send_one(const msg_t *m, MPI_Comm comm) {
  unsigned char *sb = malloc((size_t)m->bytes + 1);
  fill(sb, m->bytes, (uint32_t)wrank, m->seq);
  MPI_Request *rq = &sreqs[nsreqs];
  sbufs[nsreqs++] = sb;
  *rq = MPI_REQUEST_NULL;
  switch (m->mode) {
    case M_ISEND: MPI_Isend(sb, m->bytes, MPI_BYTE, m->dest, m->tag, comm, rq); break;
    case M_ISSEND: MPI_Issend(sb, m->bytes, MPI_BYTE, m->dest, m->tag, comm, rq); break;
    case M_SEND: MPI_Send(sb, m->bytes, MPI_BYTE, m->dest, m->tag, comm); break;
    case M_SSEND: MPI_Ssend(sb, m->bytes, MPI_BYTE, m->dest, m->tag, comm); break;
    default: MPI_Rsend(sb, m->bytes, MPI_BYTE, m->dest, m->tag, comm); break;
  }
}

static void check_recv(int r, const batch_t *bt, recv_t *rv) {
  const slot_t *sl = &slots[bt->slot];
  const expect_t *want = &exps[rv->want];
  int n = -1, cancelled = -1;
  MPI_Get_count(&rv->st, MPI_BYTE, &n);
  MPI_Test_cancelled(&rv->st, &cancelled);
  if (rv->done != 1 || cancelled || rv->st.MPI_SOURCE != want->src || rv->st.MPI_TAG != want->tag || n < 0 ||
      n > rv->capacity) {
    MTEST_CHECK(0, "round %d batch %d on %s: receive from %d tag %d completed %d times, cancelled %d, status "
                "source %d tag %d count %d", r, rv->batch, sl->name, want->src, want->tag, rv->done, cancelled,
                rv->st.MPI_SOURCE, rv->st.MPI_TAG, n);
    return;
  }
  /* Which message of the group is it? */
  int found = -1;
  if (n >= HDR) {
    header_t h;
    memcpy(&h, rv->buf, sizeof h);
    for (int i = bt->exp0; i < bt->exp0 + bt->nexp && found < 0; i++)
      if (exps[i].group == rv->group && exps[i].seq == h.seq) found = i;
    uint64_t sum = 0xcbf29ce484222325ull;
    for (int i = HDR; i < n; i++) sum = (sum ^ rv->buf[i]) * 0x100000001b3ull;
    MTEST_CHECK(found >= 0 && h.sender == (uint32_t)want->srcw && h.bytes == (uint32_t)n && h.sum == sum &&
                    exps[found].bytes == n,
                "round %d batch %d on %s: from %d tag %d, %d bytes: header seq %llx sender %u bytes %u, checksum "
                "%s, %s", r, rv->batch, sl->name, want->src, want->tag, n, (unsigned long long)h.seq, h.sender,
                h.bytes, h.sum == sum ? "ok" : "WRONG", found >= 0 ? "expected" : "NOT EXPECTED in this batch");
    if (found < 0) return;
  } else {
    /* identical short messages are interchangeable; prefer the one the
     * order says, so a 1-byte coincidence is no error */
    if (want->bytes == n && want->got == 0 && small_matches(rv->buf, n, (uint32_t)want->srcw, want->seq))
      found = rv->want;
    for (int i = bt->exp0; i < bt->exp0 + bt->nexp && found < 0; i++)
      if (exps[i].group == rv->group && exps[i].bytes == n && exps[i].got == 0 &&
          small_matches(rv->buf, n, (uint32_t)exps[i].srcw, exps[i].seq))
        found = i;
    MTEST_CHECK(found >= 0, "round %d batch %d on %s: from %d tag %d, %d bytes: content of no message still due",
                r, rv->batch, sl->name, want->src, want->tag, n);
    if (found < 0) return;
  }
  MTEST_CHECK(exps[found].got == 0, "round %d batch %d on %s: message seq %llx from %d received twice", r,
              rv->batch, sl->name, (unsigned long long)exps[found].seq, want->src);
  exps[found].got++;
  MTEST_CHECK(!rv->ordered || found == rv->want,
              "round %d batch %d on %s: from %d tag %d: got seq %llx, MPI order says seq %llx", r, rv->batch,
              sl->name, want->src, want->tag, (unsigned long long)exps[found].seq, (unsigned long long)want->seq);
  int bad = -1;
  for (int i = n; i < rv->capacity && bad < 0; i++)
    if (rv->buf[i] != 0xCD) bad = i;
  MTEST_CHECK(bad < 0, "round %d batch %d on %s: byte %d after the %d-byte message overwritten", r, rv->batch,
              sl->name, bad, n);
}

static void complete_all(uint64_t *st) {
  /* one array: receives, sends, cancelled receives */
  const int n = nrecvs + nsreqs + ncreqs;
  MPI_Request *reqs = malloc((size_t)(n + 1) * sizeof(MPI_Request));
  MPI_Status *sts = malloc((size_t)(n + 1) * sizeof(MPI_Status));
  int *idx = malloc((size_t)(n + 1) * sizeof(int));
  for (int i = 0; i < nrecvs; i++) reqs[i] = recvs[i].req;
  for (int i = 0; i < nsreqs; i++) reqs[nrecvs + i] = sreqs[i];
  for (int i = 0; i < ncreqs; i++) reqs[nrecvs + nsreqs + i] = creqs[i];
  /* Blocking sends and receives, and a receive whose cancel came too
   * late, are complete already: their null requests must never be
   * reported complete again. */
  int *hit = calloc((size_t)n + 1, sizeof(int)); /* completions per request */
  char *active = malloc((size_t)n + 1);
  MPI_Status *out_sts = malloc((size_t)(n + 1) * sizeof(MPI_Status));
  for (int i = 0; i < n; i++) active[i] = reqs[i] != MPI_REQUEST_NULL;
  const int how = below(st, 6);
  switch (how) {
    case 0:
      wd_phase = "MPI_Waitall";
      MPI_Waitall(n, reqs, sts);
      for (int i = 0; i < n; i++) hit[i] += active[i];
      break;
    case 1:
      wd_phase = "MPI_Waitany";
      for (;;) {
        int i = -1;
        MPI_Status s;
        MPI_Waitany(n, reqs, &i, &s);
        if (i == MPI_UNDEFINED) break;
        sts[i] = s;
        hit[i]++;
      }
      break;
    case 2:
    case 3:
      wd_phase = how == 2 ? "MPI_Testsome" : "MPI_Waitsome";
      for (;;) {
        int out = 0;
        if (how == 2) MPI_Testsome(n, reqs, &out, idx, out_sts);
        else MPI_Waitsome(n, reqs, &out, idx, out_sts);
        if (out == MPI_UNDEFINED) break;
        /* oversubscribed, the peers need this core */
        if (out == 0) sched_yield();
        for (int j = 0; j < out; j++) {
          hit[idx[j]]++;
          sts[idx[j]] = out_sts[j];
        }
      }
      break;
    case 4:
      wd_phase = "MPI_Testall";
      for (int flag = 0; !flag;) {
        MPI_Testall(n, reqs, &flag, sts);
        if (!flag) sched_yield();
      }
      for (int i = 0; i < n; i++) hit[i] += active[i];
      break;
    default:
      wd_phase = "MPI_Wait";
      for (int i = n - 1; i >= 0; i--) {
        if (reqs[i] == MPI_REQUEST_NULL) continue;
        MPI_Wait(&reqs[i], &sts[i]);
        hit[i]++;
      }
      break;
  }
  for (int i = 0; i < n; i++) {
    MTEST_CHECK(hit[i] == active[i] && reqs[i] == MPI_REQUEST_NULL,
                "round %d: request %d of %d completed %d times (%s)", (int)wd_round, i, n, hit[i], wd_phase);
    if (i < nrecvs && active[i]) {
      recvs[i].st = sts[i];
      recvs[i].done += hit[i];
    }
    if (i >= nrecvs + nsreqs) {
      int flag = -1;
      MPI_Test_cancelled(&sts[i], &flag);
      MTEST_CHECK(flag == 1, "round %d: receive that cannot match not cancelled (%s)", (int)wd_round, wd_phase);
    }
  }
  free(out_sts);
  free(active);
  free(hit);
  free(idx);
  free(sts);
  free(reqs);
}

static void run_round(int r, long long *msgs, long long *bytes) {
  uint64_t shared = mix(seed, 0x5eed0000ull + (uint64_t)r); /* same on every rank */
  uint64_t mine = mix(shared, 0x1000u + (uint64_t)wrank); /* this rank's own choices */
  wd_round = r;
  nexps = nrecvs = nsreqs = ncreqs = 0;

  /* an empty pool would leave nothing to send on */
  int nlive = 0;
  for (int s = 0; s < NSLOT; s++) nlive += slots[s].comm != MPI_COMM_NULL;
  if (nlive == 0) {
    wd_phase = "communicator creation";
    slot_create(0, &shared);
  }

  batch_t bts[MAXBATCH];
  int nb = 1 + below(&shared, MAXBATCH);
  int used[NSLOT] = {0};
  msg_t plan[MAXMSG + 1];
  int open_regions[MAXBATCH], nopen = 0;

  for (int b = 0; b < nb; b++) {
    /* Churn: recreate a slot this round does not use, while the earlier
     * batches are in flight. */
    if (b > 0 && below(&shared, 4) == 0) {
      int s = below(&shared, NSLOT);
      if (!used[s]) {
        wd_phase = "communicator churn";
        if (slots[s].comm != MPI_COMM_NULL) slot_free(s);
        slot_create(s, &shared);
      }
    }
    int cand[NSLOT], nc = 0;
    for (int s = 0; s < NSLOT; s++)
      if (!used[s] && slots[s].comm != MPI_COMM_NULL) cand[nc++] = s;
    if (nc == 0) {
      nb = b;
      break;
    }
    batch_t *bt = &bts[b];
    bt->slot = cand[below(&shared, nc)];
    used[bt->slot] = 1;
    bt->pattern = below(&shared, NPATTERN);
    bt->free_after = below(&shared, 12) == 0;
    slot_t *sl = &slots[bt->slot];
    MPI_Comm comm = sl->comm;

    /* What this rank must receive: every member's plan, in send order. */
    bt->exp0 = nexps;
    int ngroups = 0, gsrc[MAXMSG * 64], gtag[MAXMSG * 64];
    for (int j = 0; j < sl->size; j++) {
      const int n = make_plan(r, b, sl->world[j], sl->size, bt->pattern, plan);
      for (int i = 0; i < n; i++) {
        if (plan[i].dest != sl->rank) continue;
        int g = 0;
        while (g < ngroups && !(gsrc[g] == j && gtag[g] == plan[i].tag)) g++;
        if (g == ngroups) {
          gsrc[g] = j;
          gtag[g] = plan[i].tag;
          ngroups++;
        }
        grow((void **)&exps, &cap_exps, nexps + 1, sizeof(expect_t));
        exps[nexps++] = (expect_t){b, j, sl->world[j], plan[i].tag, plan[i].bytes, g, plan[i].seq, 0};
      }
    }
    bt->nexp = nexps - bt->exp0;

    /* Receiver's own choices: a region, cancels. Regions need mpix. */
    bt->region = sl->handled && below(&mine, 4) == 0;
    bt->region_early = bt->free_after || below(&mine, 2);
    const int racy = bt->nexp > 0 && below(&mine, 6) == 0;
    bt->set_only = bt->region || racy;
    const int never = below(&mine, 3) == 0;

    /* Receives in a random posting order; in order mode the k-th receive of
     * a (source, tag) must get its k-th message. */
    const int r0 = nrecvs;
    grow((void **)&recvs, &cap_recvs, nrecvs + bt->nexp + 1, sizeof(recv_t));
    int *order = malloc((size_t)bt->nexp * sizeof(int) + 1);
    char *assigned = calloc((size_t)bt->nexp + 1, 1);
    for (int i = 0; i < bt->nexp; i++) order[i] = i;
    for (int i = bt->nexp - 1; i > 0; i--) {
      int j = below(&mine, i + 1), t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    for (int k = 0; k < bt->nexp; k++) {
      const expect_t *e = &exps[bt->exp0 + order[k]];
      int pick = 0;
      while (assigned[pick] || exps[bt->exp0 + pick].group != e->group) pick++;
      assigned[pick] = 1;
      recv_t *rv = &recvs[nrecvs++];
      memset(rv, 0, sizeof *rv);
      rv->batch = b;
      rv->want = bt->exp0 + pick;
      rv->group = e->group;
      rv->ordered = !bt->set_only;
      rv->capacity = (bt->set_only ? group_max(bt->exp0, bt->nexp, e->group) : exps[rv->want].bytes) +
                     below(&mine, SLACK + 1);
      rv->req = MPI_REQUEST_NULL;
    }
    free(order);
    free(assigned);
    const int nrb = nrecvs - r0;
    /* blocking receives only after this rank's sends are all posted and only
     * where no sender blocks (see make_plan) */
    const int nblocking = bt->pattern >= P_INTERLEAVE ? nrb / 8 : 0;
    for (int k = nrb - nblocking; k < nrb; k++) recvs[r0 + k].blocking = 1;

    const int n = make_plan(r, b, wrank, sl->size, bt->pattern, plan);
    grow((void **)&sreqs, &cap_sreqs, nsreqs + n + 1, sizeof(MPI_Request));
    sbufs = realloc(sbufs, (size_t)cap_sreqs * sizeof(unsigned char *));
    grow((void **)&creqs, &cap_creqs, ncreqs + 4, sizeof(MPI_Request));

    if (trace)
      fprintf(stderr, "[rank %d] round %d batch %d: slot %d %s (size %d, handled %d) pattern %d, %d sends, %d receives "
              "(%d blocking), region %d, racy %d, never %d, free after %d\n", wrank, r, b, bt->slot, sl->name, sl->size,
              sl->handled, bt->pattern, n, nrb, nblocking, bt->region, racy, never, bt->free_after);
    wd_phase = "posting";
    if (bt->region) {
      p_region_open(comm);
      n_regions++;
    }
    const int nnb = nrb - nblocking;
    const int cancel_at = never ? below(&mine, nnb + 1) : -1; /* among the receives */
    int nr = 0, ns = 0, presend_done = 0;
    /* Pre-posted patterns post every receive before the first send; the
     * interleaved one mixes them at random; sends-first posts receives
     * last. The extra pass (nr == nnb, ns == n) runs what must precede the
     * sends when this rank has none: the barrier is collective. */
    for (;;) {
      int recv_now;
      if (nr == nnb) recv_now = 0;
      else if (ns == n) recv_now = 1;
      else if (bt->pattern == P_INTERLEAVE) recv_now = below(&mine, 2);
      else recv_now = bt->pattern != P_SENDS_FIRST;
      if (!recv_now && !presend_done) {
        presend_done = 1;
        if (racy && (bt->pattern == P_PREPOST || bt->pattern == P_PREPOST_BARRIER)) racy_cancel(&recvs[r0], comm);
        if (bt->pattern == P_PREPOST_BARRIER) {
          wd_phase = "barrier before ready sends";
          MPI_Barrier(comm);
        }
        wd_phase = "sending";
      }
      if (nr == nnb && ns == n) break;
      if (recv_now) {
        if (nr == cancel_at) cancel_never(comm, sl->size, &mine);
        post_recv(&recvs[r0 + nr++], comm);
      } else {
        send_one(&plan[ns++], comm);
      }
    }
    if (racy && bt->pattern != P_PREPOST && bt->pattern != P_PREPOST_BARRIER) racy_cancel(&recvs[r0], comm);
    if (cancel_at == nnb) cancel_never(comm, sl->size, &mine);
    wd_phase = "blocking receives";
    for (int k = nnb; k < nrb; k++) post_recv(&recvs[r0 + k], comm);

    if (bt->region) {
      if (bt->region_early) p_region_close(comm);
      else open_regions[nopen++] = bt->slot;
    }
    if (bt->free_after) {
      /* MPI_Comm_free with this batch's operations pending */
      wd_phase = "MPI_Comm_free with operations pending";
      slot_free(bt->slot);
      n_pending_free++;
    }
  }

  wd_phase = "completion";
  complete_all(&mine);
  for (int i = 0; i < nopen; i++) p_region_close(slots[open_regions[i]].comm);

  wd_phase = "checking";
  for (int i = 0; i < nrecvs; i++) {
    const batch_t *bt = &bts[recvs[i].batch];
    check_recv(r, bt, &recvs[i]);
    free(recvs[i].buf);
  }
  for (int i = 0; i < nexps; i++) {
    MTEST_CHECK(exps[i].got == 1, "round %d batch %d: message seq %llx from %d tag %d (%d bytes) received %d times",
                r, exps[i].batch, (unsigned long long)exps[i].seq, exps[i].src, exps[i].tag, exps[i].bytes,
                exps[i].got);
    *msgs += 1;
    *bytes += exps[i].bytes;
  }
  for (int i = 0; i < nsreqs; i++) free(sbufs[i]);
  /* the slots freed with operations pending come back in later rounds */
  for (int b = 0; b < nb; b++)
    if (bts[b].free_after && below(&shared, 2)) {
      wd_phase = "communicator creation";
      slot_create(bts[b].slot, &shared);
    }
}

static double env_num(const char *name, double dflt) {
  const char *v = getenv(name);
  return v && *v ? strtod(v, NULL) : dflt;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  if (!resolve_mpix()) {
    MTEST_CHECK(0, "the MPIX functions are not in the running program (LD_PRELOAD=libmpix.so missing?)");
    return mtest_finalize();
  }
  if (wsize > 64) {
    MTEST_CHECK(0, "at most 64 ranks");
    return mtest_finalize();
  }
  const char *v = getenv("MPIX_INTERCEPT");
  intercept_all = v && strcmp(v, "all") == 0;
  trace = getenv("SOAK_TRACE") != NULL;
  seed = (uint64_t)env_num("SOAK_SEED", 20261125);
  double seconds = env_num("SOAK_SECONDS", 0);
  const double max_msgs = env_num("SOAK_MESSAGES", 0);
  if (seconds <= 0 && max_msgs <= 0) seconds = 10;
  const double slack_mb = env_num("SOAK_RSS_SLACK_MB", 16);
  const unsigned timeout = (unsigned)env_num("SOAK_ROUND_TIMEOUT", 60);
  const size_t leak = (size_t)env_num("SOAK_LEAK_KB", 0) * 1024;
  int *ub = NULL, flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  /* tag_max itself is the tag of receives that cannot match */
  tag_max = flag && *ub < (1 << 20) ? *ub : (1 << 20);
  signal(SIGALRM, watchdog);

  for (int s = 0; s < NSLOT; s++) slots[s].comm = MPI_COMM_NULL;
  uint64_t st = mix(seed, 0xC0FFEEu);
  for (int s = 0; s < NSLOT; s++) slot_create(s, &st);

  double samples[NSAMPLE + 1];
  int nsamples = 0;
  long long msgs = 0, bytes = 0;
  double progress = 0, elapsed = 0;
  int r = 0;
  t_start = now();
  while (progress < 1) {
    alarm(timeout);
    long long m = 0, b = 0;
    run_round(r, &m, &b);
    if (leak) {
      leaked = malloc(leak);
      if (leaked) memset(leaked, 1, leak);
    }
    msgs += m;
    bytes += b;
    /* Rank 0's clock decides for all, so every rank runs the same rounds. */
    wd_phase = "end-of-round reduction";
    double mine[2] = {(double)msgs, wrank == 0 ? now() - t_start : 0}, sum[2];
    MPI_Allreduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    elapsed = sum[1];
    const double pt = seconds > 0 ? elapsed / seconds : 0, pm = max_msgs > 0 ? sum[0] / max_msgs : 0;
    const double p = pt > pm ? pt : pm;
    /* a sample each time the run passes the next 1/NSAMPLE after the warm-up */
    if (p >= WARMUP + (1 - WARMUP) * nsamples / NSAMPLE && nsamples < NSAMPLE + 1) samples[nsamples++] = rss_mb();
    progress = p;
    r++;
  }
  alarm(0);

  n_msgs = msgs;
  n_bytes = bytes;
  /* Memory: the mean of the last quarter of the samples against the first. */
  const int q = nsamples / 4;
  double first = 0, last = 0;
  const int judge_memory = slack_mb >= 0;
  MTEST_CHECK(q >= 1 || !judge_memory, "only %d memory samples: the run is too short to judge memory (%d rounds)",
              nsamples, r);
  if (q >= 1 && judge_memory) {
    for (int i = 0; i < q; i++) {
      first += samples[i] / q;
      last += samples[nsamples - q + i] / q;
    }
    MTEST_CHECK(last <= first * 1.10 + slack_mb,
                "memory grew from %.1f MB (first quarter) to %.1f MB (last quarter), more than 10%% + %.0f MB", first,
                last, slack_mb);
  }
  for (int s = 0; s < NSLOT; s++)
    if (slots[s].comm != MPI_COMM_NULL) slot_free(s);

  /* Report: totals over ranks, every rank's samples. */
  long long loc[8] = {n_msgs, n_bytes, n_cancel_never, n_cancel_racy, n_cancel_won, n_regions, n_comms,
                      n_pending_free};
  long long tot[8];
  MPI_Reduce(loc, tot, 8, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  double row[NSAMPLE + 2] = {0};
  row[0] = nsamples;
  for (int i = 0; i < nsamples; i++) row[i + 1] = samples[i];
  double *rows = wrank == 0 ? malloc(sizeof row * (size_t)wsize) : NULL;
  MPI_Gather(row, NSAMPLE + 2, MPI_DOUBLE, rows, NSAMPLE + 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  double fl[2] = {first, last}, maxfl[2];
  MPI_Reduce(fl, maxfl, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (wrank == 0) {
    for (int k = 0; k < wsize; k++) {
      const double *rw = rows + (size_t)k * (NSAMPLE + 2);
      printf("soak: rank %d memory MB (PSS):", k);
      for (int i = 0; i < (int)rw[0]; i++) printf(" %.1f", rw[i + 1]);
      printf("\n");
    }
    free(rows);
    printf("soak: %d ranks, seed %llu, %d rounds, %lld messages, %.1f MB, %.1f s, %.0f messages/s, %.1f MB/s\n",
           wsize, (unsigned long long)seed, r, tot[0], (double)tot[1] / 1048576.0, elapsed,
           (double)tot[0] / elapsed, (double)tot[1] / 1048576.0 / elapsed);
    printf("soak: communicators created %lld (freed with operations pending %lld), regions %lld, cancels: "
           "unmatchable %lld, of real messages %lld (%lld too late)\n",
           tot[6], tot[7], tot[5], tot[2], tot[3], tot[4]);
    if (judge_memory)
      printf("soak: memory (PSS) first quarter %.1f MB, last quarter %.1f MB (max over ranks; allowed growth 10%% + %.0f MB)\n",
             maxfl[0], maxfl[1], slack_mb);
    else
      printf("soak: memory not judged (SOAK_RSS_SLACK_MB < 0)\n");
    fflush(stdout);
  }
  if (mtest_errors)
    fprintf(stderr, "[rank %d] soak failed with SOAK_SEED=%llu (%d errors)\n", wrank, (unsigned long long)seed,
            mtest_errors);
  return mtest_finalize();
}
