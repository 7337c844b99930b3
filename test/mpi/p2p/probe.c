/* MPI_Probe, MPI_Iprobe, MPI_Mprobe, MPI_Improbe, MPI_Mrecv, MPI_Imrecv on
 * each communicator under test: statuses (source, tag, count) of eager,
 * zero-size and rendezvous-size messages, probes seeing the oldest message of
 * a (source, tag), a matched message leaving the queue (a receive after
 * MPI_Mprobe gets the next message), Iprobe finding nothing, MPI_PROC_NULL
 * (MPI_MESSAGE_NO_PROC), and wildcard probes where the communicator allows
 * them. Ranks 1.. each send to rank 0. Fails unless mpix carries its
 * no-wildcard communicator (mtest_check_handled). */
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

typedef mtest_comm_t tcomm_t;

static int rank, size;

static unsigned char pat(unsigned seed, size_t i) {
  return (unsigned char)((seed * 2654435761u) ^ (i * 40503u) ^ (i >> 7));
}
static void fill(void *buf, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) ((unsigned char *)buf)[i] = pat(seed, i);
}
static int verify(const void *buf, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (((const unsigned char *)buf)[i] != pat(seed, i)) return 0;
  return 1;
}

static void expect_status(const tcomm_t *tc, const char *what, const MPI_Status *st, int source, int tag, int bytes) {
  int got = -1;
  MPI_Get_count(st, MPI_BYTE, &got);
  MTEST_CHECK(st->MPI_SOURCE == source && st->MPI_TAG == tag && got == bytes,
              "%s on %s: status source %d tag %d count %d, expected %d %d %d", what, tc->name, st->MPI_SOURCE,
              st->MPI_TAG, got, source, tag, bytes);
}

/* What source s sends to rank 0: message i has tag tags[i], size bytes[i]. */
#define NMSG 8
static const int tags[NMSG] = {1, 2, 1, 3, 1, 2, 4, 4};
static const int bytes[NMSG] = {100, 0, 200000, 7, 300, 65536, 1, 2};
static unsigned seed_of(int source, int i) { return (unsigned)(source * 1000 + i); }

static void check_probes(const tcomm_t *tc) {
  MPI_Comm comm = tc->comm;
  MPI_Status st;
  int flag = 0;
  unsigned char *buf = malloc(200000);

  if (rank != 0) {
    MPI_Request reqs[NMSG];
    unsigned char *out[NMSG];
    for (int i = 0; i < NMSG; i++) {
      out[i] = malloc(bytes[i] + 1);
      fill(out[i], bytes[i], seed_of(rank, i));
      MPI_Isend(out[i], bytes[i], MPI_BYTE, 0, tags[i], comm, &reqs[i]);
    }
    MPI_Waitall(NMSG, reqs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < NMSG; i++) free(out[i]);
    MPI_Barrier(comm);
    free(buf);
    return;
  }

  for (int s = 1; s < size; s++) {
    /* Iprobe on a tag nobody sends: nothing, repeatedly. */
    for (int i = 0; i < 3; i++) {
      MPI_Iprobe(s, 99, comm, &flag, &st);
      MTEST_CHECK(!flag, "Iprobe(tag 99) found a message on %s", tc->name);
    }
    /* The oldest message of (s, 1) is message 0; probing twice sees it twice. */
    MPI_Probe(s, 1, comm, &st);
    expect_status(tc, "Probe(s,1)", &st, s, 1, bytes[0]);
    do MPI_Iprobe(s, 1, comm, &flag, &st);
    while (!flag);
    expect_status(tc, "Iprobe(s,1)", &st, s, 1, bytes[0]);
    /* Mprobe takes message 0 out of matching: a receive now gets message 2. */
    MPI_Message m0, m2;
    MPI_Mprobe(s, 1, comm, &m0, &st);
    expect_status(tc, "Mprobe(s,1)", &st, s, 1, bytes[0]);
    MPI_Recv(buf, 200000, MPI_BYTE, s, 1, comm, &st);
    expect_status(tc, "Recv after Mprobe", &st, s, 1, bytes[2]);
    MTEST_CHECK(verify(buf, bytes[2], seed_of(s, 2)), "message 2 payload on %s", tc->name);
    MPI_Mrecv(buf, 200000, MPI_BYTE, &m0, &st);
    MTEST_CHECK(m0 == MPI_MESSAGE_NULL, "Mrecv did not reset the message handle");
    expect_status(tc, "Mrecv", &st, s, 1, bytes[0]);
    MTEST_CHECK(verify(buf, bytes[0], seed_of(s, 0)), "message 0 payload on %s", tc->name);
    /* Improbe until found, then Imrecv. */
    do MPI_Improbe(s, 1, comm, &flag, &m2, &st);
    while (!flag);
    expect_status(tc, "Improbe(s,1)", &st, s, 1, bytes[4]);
    MPI_Request req;
    memset(buf, 0, bytes[4]);
    MPI_Imrecv(buf, 200000, MPI_BYTE, &m2, &req);
    MPI_Wait(&req, &st);
    expect_status(tc, "Imrecv", &st, s, 1, bytes[4]);
    MTEST_CHECK(verify(buf, bytes[4], seed_of(s, 4)), "message 4 payload on %s", tc->name);
    /* Zero-size message (1), then the rendezvous-size one of tag 2 (5). */
    MPI_Message m;
    MPI_Mprobe(s, 2, comm, &m, &st);
    expect_status(tc, "Mprobe zero-size", &st, s, 2, 0);
    MPI_Mrecv(NULL, 0, MPI_BYTE, &m, &st);
    expect_status(tc, "Mrecv zero-size", &st, s, 2, 0);
    MPI_Probe(s, 2, comm, &st);
    expect_status(tc, "Probe large", &st, s, 2, bytes[5]);
    MPI_Mprobe(s, 2, comm, &m, &st);
    MPI_Mrecv(buf, 200000, MPI_BYTE, &m, &st);
    expect_status(tc, "Mrecv large", &st, s, 2, bytes[5]);
    MTEST_CHECK(verify(buf, bytes[5], seed_of(s, 5)), "message 5 payload on %s", tc->name);
    /* Wildcard probes where allowed: the tag-3 message, then tag 4 ones. */
    if (tc->any_tag_ok) {
      /* Left: message 3 (tag 3), 6 and 7 (tag 4); the oldest is 3. */
      MPI_Probe(s, MPI_ANY_TAG, comm, &st);
      expect_status(tc, "Probe(s, ANY_TAG)", &st, s, 3, bytes[3]);
    }
    if (tc->any_source_ok) {
      do MPI_Iprobe(MPI_ANY_SOURCE, 3, comm, &flag, &st);
      while (!flag);
      MTEST_CHECK(st.MPI_TAG == 3 && st.MPI_SOURCE >= s, "Iprobe(ANY_SOURCE,3) on %s: source %d tag %d", tc->name,
                  st.MPI_SOURCE, st.MPI_TAG);
    }
    if (tc->any_source_ok && tc->any_tag_ok) {
      MPI_Mprobe(s, MPI_ANY_TAG, comm, &m, &st);
      MPI_Mrecv(buf, 200000, MPI_BYTE, &m, &st);
    } else {
      MPI_Recv(buf, 200000, MPI_BYTE, s, 3, comm, &st);
    }
    expect_status(tc, "message 3", &st, s, 3, bytes[3]);
    MTEST_CHECK(verify(buf, bytes[3], seed_of(s, 3)), "message 3 payload on %s", tc->name);
    /* Two messages of tag 4: Improbe sees message 6, then Iprobe message 7
     * once 6 is received. */
    do MPI_Improbe(s, 4, comm, &flag, &m, &st);
    while (!flag);
    expect_status(tc, "Improbe(s,4)", &st, s, 4, bytes[6]);
    do MPI_Iprobe(s, 4, comm, &flag, &st);
    while (!flag);
    expect_status(tc, "Iprobe after Improbe", &st, s, 4, bytes[7]);
    MPI_Mrecv(buf, 200000, MPI_BYTE, &m, &st);
    MTEST_CHECK(verify(buf, bytes[6], seed_of(s, 6)), "message 6 payload on %s", tc->name);
    MPI_Recv(buf, 200000, MPI_BYTE, s, 4, comm, &st);
    expect_status(tc, "Recv message 7", &st, s, 4, bytes[7]);
    MTEST_CHECK(verify(buf, bytes[7], seed_of(s, 7)), "message 7 payload on %s", tc->name);
  }

  /* MPI_PROC_NULL: probes find "a message" at once. */
  MPI_Probe(MPI_PROC_NULL, 5, comm, &st);
  expect_status(tc, "Probe(PROC_NULL)", &st, MPI_PROC_NULL, MPI_ANY_TAG, 0);
  flag = 0;
  MPI_Iprobe(MPI_PROC_NULL, 5, comm, &flag, &st);
  MTEST_CHECK(flag, "Iprobe(PROC_NULL) flag 0 on %s", tc->name);
  expect_status(tc, "Iprobe(PROC_NULL)", &st, MPI_PROC_NULL, MPI_ANY_TAG, 0);
  MPI_Message m;
  MPI_Mprobe(MPI_PROC_NULL, 5, comm, &m, &st);
  MTEST_CHECK(m == MPI_MESSAGE_NO_PROC, "Mprobe(PROC_NULL) message is not MPI_MESSAGE_NO_PROC on %s", tc->name);
  expect_status(tc, "Mprobe(PROC_NULL)", &st, MPI_PROC_NULL, MPI_ANY_TAG, 0);
  MPI_Mrecv(buf, 10, MPI_BYTE, &m, &st);
  expect_status(tc, "Mrecv(NO_PROC)", &st, MPI_PROC_NULL, MPI_ANY_TAG, 0);
  flag = 0;
  MPI_Improbe(MPI_PROC_NULL, 5, comm, &flag, &m, &st);
  MTEST_CHECK(flag && m == MPI_MESSAGE_NO_PROC, "Improbe(PROC_NULL) on %s", tc->name);
  MPI_Request req;
  MPI_Imrecv(buf, 10, MPI_BYTE, &m, &req);
  MPI_Wait(&req, &st);
  MTEST_CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "Imrecv(NO_PROC) source %d on %s", st.MPI_SOURCE, tc->name);

  /* Everything was received: nothing is left to probe. */
  for (int s = 1; s < size; s++)
    for (int t = 1; t <= 4; t++) {
      MPI_Iprobe(s, t, comm, &flag, &st);
      MTEST_CHECK(!flag, "message (%d,%d) left over on %s", s, t, tc->name);
    }
  MPI_Barrier(comm);
  free(buf);
}

int main(int argc, char **argv) {
  tcomm_t comms[MTEST_MAX_COMMS];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = mtest_get_comms(MTEST_COMM_ALL & ~MTEST_COMM_DUP_OF_NOWILDCARD, comms);
  for (int i = 0; i < n; i++) check_probes(&comms[i]);
  mtest_free_comms(comms, n);
  return mtest_finalize();
}
