/* The whole MPIX stream API on host streams (no CUDA stream): streams,
 * stream communicators, MPIX_Comm_get_stream, MPIX_Info_set_hex, and every
 * *_enqueue operation, which on a host stream runs at once on the calling
 * thread, in call order. Odd ranks also build a stream communicator without
 * a local stream (MPIX_STREAM_NULL) to show that only the local side needs
 * one. */
#include <stdint.h>
#include <stdlib.h>

#include "mpix.h"
#include "mtest.h"

static int rank, size;

static void check_hex(void) {
  MPI_Info info;
  char value[MPI_MAX_INFO_VAL + 1];
  int flag = 0;
  const unsigned char bytes[4] = {0x01, 0xab, 0x00, 0xff};
  MPI_Info_create(&info);
  MTEST_CHECK(MPIX_Info_set_hex(info, "value", bytes, 4) == MPI_SUCCESS, "MPIX_Info_set_hex");
  MPI_Info_get(info, "value", MPI_MAX_INFO_VAL, value, &flag);
  /* Byte by byte in memory order, as MPICH encodes it. */
  MTEST_CHECK(flag && strcmp(value, "01AB00FF") == 0, "hex value \"%s\"", flag ? value : "(none)");
  MPI_Info_free(&info);
}

/* Blocking enqueued ring: each rank sends to the right, receives from the
 * left (even ranks send first so the ring cannot deadlock). */
static void ring(MPI_Comm comm) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int out[64], in[64];
  MPI_Status st;
  for (int i = 0; i < 64; ++i) out[i] = rank * 1000 + i;
  if (rank % 2 == 0) {
    MPIX_Send_enqueue(out, 64, MPI_INT, right, 7, comm);
    MPIX_Recv_enqueue(in, 64, MPI_INT, left, 7, comm, &st);
  } else {
    MPIX_Recv_enqueue(in, 64, MPI_INT, left, 7, comm, &st);
    MPIX_Send_enqueue(out, 64, MPI_INT, right, 7, comm);
  }
  int n = -1;
  MPI_Get_count(&st, MPI_INT, &n);
  MTEST_CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 7 && n == 64, "status src %d tag %d count %d",
              st.MPI_SOURCE, st.MPI_TAG, n);
  for (int i = 0; i < 64; ++i) MTEST_CHECK(in[i] == left * 1000 + i, "ring in[%d] = %d", i, in[i]);
}

/* Many nonblocking enqueued operations in flight, completed by one
 * MPIX_Waitall_enqueue; statuses checked, order per (source, tag) kept. */
static void many(MPI_Comm comm, int nmsg) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int *out = malloc(sizeof(int) * nmsg), *in = malloc(sizeof(int) * nmsg);
  MPI_Request *req = malloc(sizeof(MPI_Request) * 2 * nmsg);
  MPI_Status *st = malloc(sizeof(MPI_Status) * 2 * nmsg);
  for (int i = 0; i < nmsg; ++i) {
    out[i] = rank * 100000 + i;
    in[i] = -1;
    MPIX_Irecv_enqueue(&in[i], 1, MPI_INT, left, 3, comm, &req[i]);
  }
  for (int i = 0; i < nmsg; ++i) MPIX_Isend_enqueue(&out[i], 1, MPI_INT, right, 3, comm, &req[nmsg + i]);
  MTEST_CHECK(MPIX_Waitall_enqueue(2 * nmsg, req, st) == MPI_SUCCESS, "MPIX_Waitall_enqueue");
  for (int i = 0; i < nmsg; ++i) {
    MTEST_CHECK(in[i] == left * 100000 + i, "many in[%d] = %d", i, in[i]);
    MTEST_CHECK(st[i].MPI_SOURCE == left && st[i].MPI_TAG == 3, "many status %d", i);
    MTEST_CHECK(req[i] == MPI_REQUEST_NULL && req[nmsg + i] == MPI_REQUEST_NULL, "request %d not freed", i);
  }
  free(out);
  free(in);
  free(req);
  free(st);
}

/* One request at a time through MPIX_Wait_enqueue, a wildcard receive
 * (stream communicators allow them) and a derived datatype. */
static void singles(MPI_Comm comm) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  double out[10], in[10];
  MPI_Datatype strided;
  MPI_Request rr, sr;
  MPI_Status st;
  MPI_Type_vector(5, 1, 2, MPI_DOUBLE, &strided);
  MPI_Type_commit(&strided);
  for (int i = 0; i < 10; ++i) {
    out[i] = rank + i / 10.0;
    in[i] = -1.0;
  }
  MPIX_Irecv_enqueue(in, 1, strided, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &rr);
  MPIX_Isend_enqueue(out, 1, strided, right, 11, comm, &sr);
  MPI_Type_free(&strided);
  MTEST_CHECK(MPIX_Wait_enqueue(&sr, MPI_STATUS_IGNORE) == MPI_SUCCESS && sr == MPI_REQUEST_NULL, "send wait");
  MTEST_CHECK(MPIX_Wait_enqueue(&rr, &st) == MPI_SUCCESS && rr == MPI_REQUEST_NULL, "recv wait");
  MTEST_CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 11, "wildcard status src %d tag %d", st.MPI_SOURCE,
              st.MPI_TAG);
  for (int i = 0; i < 10; ++i) {
    const double want = i % 2 == 0 ? left + i / 10.0 : -1.0;
    MTEST_CHECK(in[i] == want, "strided in[%d] = %g, want %g", i, in[i], want);
  }
  /* MPI_REQUEST_NULL and MPI_PROC_NULL behave as in MPI_Wait / MPI_Recv. */
  MPI_Request null = MPI_REQUEST_NULL;
  MTEST_CHECK(MPIX_Wait_enqueue(&null, &st) == MPI_SUCCESS && st.MPI_SOURCE == MPI_ANY_SOURCE, "null wait");
  MTEST_CHECK(MPIX_Recv_enqueue(in, 1, MPI_DOUBLE, MPI_PROC_NULL, 0, comm, &st) == MPI_SUCCESS &&
                  st.MPI_SOURCE == MPI_PROC_NULL,
              "MPI_PROC_NULL receive");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  check_hex();

  MPIX_Stream stream = MPIX_STREAM_NULL, got = MPIX_STREAM_NULL;
  MTEST_CHECK(MPIX_Stream_create(MPI_INFO_NULL, &stream) == MPI_SUCCESS, "MPIX_Stream_create");
  MTEST_CHECK(stream != MPIX_STREAM_NULL, "stream is MPIX_STREAM_NULL");
  /* An info without "type" is a host stream too. */
  MPI_Info info;
  MPIX_Stream other = MPIX_STREAM_NULL;
  MPI_Info_create(&info);
  MPI_Info_set(info, "unrelated", "1");
  MTEST_CHECK(MPIX_Stream_create(info, &other) == MPI_SUCCESS && other != stream, "second stream");
  MPI_Info_free(&info);

  MPI_Comm scomm = MPI_COMM_NULL, ncomm = MPI_COMM_NULL;
  MTEST_CHECK(MPIX_Stream_comm_create(MPI_COMM_WORLD, stream, &scomm) == MPI_SUCCESS, "stream comm");
  MPIX_Comm_get_stream(scomm, 0, &got);
  MTEST_CHECK(got == stream, "MPIX_Comm_get_stream gives %d, want %d", (int)got, (int)stream);
  MPIX_Comm_get_stream(MPI_COMM_WORLD, 0, &got);
  MTEST_CHECK(got == MPIX_STREAM_NULL, "MPI_COMM_WORLD has a stream");
  int handled = 0, cmp = MPI_UNEQUAL;
  MPIX_Comm_is_handled(scomm, &handled);
  MTEST_CHECK(handled == 1, "stream communicator not handled by mpix");
  MPI_Comm_compare(scomm, MPI_COMM_WORLD, &cmp);
  MTEST_CHECK(cmp == MPI_CONGRUENT, "stream communicator is not a duplicate");

  /* Only the local side needs a stream: odd ranks attach none here. */
  MTEST_CHECK(MPIX_Stream_comm_create(MPI_COMM_WORLD, rank % 2 ? MPIX_STREAM_NULL : other, &ncomm) == MPI_SUCCESS,
              "mixed stream comm");
  MPIX_Comm_get_stream(ncomm, 0, &got);
  MTEST_CHECK(got == (rank % 2 ? MPIX_STREAM_NULL : other), "mixed comm stream");

  for (int iter = 0; iter < 3; ++iter) ring(scomm);
  many(scomm, 500);
  singles(scomm);
  /* Plain MPI on a stream communicator, beside enqueued operations. */
  int token = rank, sum = 0;
  MPI_Allreduce(&token, &sum, 1, MPI_INT, MPI_SUM, scomm);
  MTEST_CHECK(sum == size * (size - 1) / 2, "allreduce %d", sum);
  if (size > 1) {
    /* Ranks with a stream send enqueued; those without receive plainly. */
    int v = rank, w = -1;
    if (rank % 2 == 0 && rank + 1 < size) MPIX_Send_enqueue(&v, 1, MPI_INT, rank + 1, 0, ncomm);
    if (rank % 2 == 1) {
      MPI_Recv(&w, 1, MPI_INT, rank - 1, 0, ncomm, MPI_STATUS_IGNORE);
      MTEST_CHECK(w == rank - 1, "mixed comm got %d", w);
    }
  }

  MPI_Comm_free(&scomm);
  MPI_Comm_free(&ncomm);
  MTEST_CHECK(MPIX_Stream_free(&stream) == MPI_SUCCESS && stream == MPIX_STREAM_NULL, "MPIX_Stream_free");
  MTEST_CHECK(MPIX_Stream_free(&other) == MPI_SUCCESS, "MPIX_Stream_free other");
  return mtest_finalize();
}
