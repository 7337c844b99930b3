/* Bad input to the stream API, each raising a clear error class through
 * the error handler (MPI_ERRORS_RETURN here) and doing nothing else:
 * enqueue on a communicator without a local stream, freed and unknown
 * streams, freeing a stream still in use, bad MPIX_Stream_create info, a
 * cudaStream_t stream where CUDA or a GPU is missing, null arguments. */
#include <stdint.h>

#include "mpix.h"
#include "mtest.h"

#define EXPECT_CLASS(call, cls)                                                                    \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    MTEST_CHECK(rc_ != MPI_SUCCESS && mtest_class(rc_) == (cls), "%s: class %d, expected %d (%s)", \
                #call, rc_ == MPI_SUCCESS ? 0 : mtest_class(rc_), (cls), #cls);                     \
  } while (0)

int main(int argc, char **argv) {
  int rank, size, buf = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  MPI_Request req = MPI_REQUEST_NULL;

  /* Enqueue on communicators without a local stream. */
  EXPECT_CLASS(MPIX_Send_enqueue(&buf, 1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPIX_ERR_STREAM);
  EXPECT_CLASS(MPIX_Recv_enqueue(&buf, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPIX_ERR_STREAM);
  EXPECT_CLASS(MPIX_Isend_enqueue(&buf, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &req), MPIX_ERR_STREAM);
  EXPECT_CLASS(MPIX_Irecv_enqueue(&buf, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &req), MPIX_ERR_STREAM);
  MTEST_CHECK(req == MPI_REQUEST_NULL, "a request was created");
  MPI_Comm nostream;
  MPIX_Stream_comm_create(MPI_COMM_WORLD, MPIX_STREAM_NULL, &nostream);
  MPI_Comm_set_errhandler(nostream, MPI_ERRORS_RETURN);
  EXPECT_CLASS(MPIX_Send_enqueue(&buf, 1, MPI_INT, 0, 0, nostream), MPIX_ERR_STREAM);
  EXPECT_CLASS(MPIX_Send_enqueue(&buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
  MPI_Comm_free(&nostream);

  /* Streams in use, freed, unknown. */
  MPIX_Stream s = MPIX_STREAM_NULL, copy, bogus = (MPIX_Stream)0x12345;
  MPI_Comm scomm;
  MPIX_Stream_create(MPI_INFO_NULL, &s);
  copy = s;
  MPIX_Stream_comm_create(MPI_COMM_WORLD, s, &scomm);
  MPI_Comm_set_errhandler(scomm, MPI_ERRORS_RETURN);
  EXPECT_CLASS(MPIX_Stream_free(&s), MPIX_ERR_STREAM);
  MTEST_CHECK(s == copy, "a failed MPIX_Stream_free changed the handle");
  /* Arguments MPI itself checks, on the host stream's immediate path. */
  EXPECT_CLASS(MPIX_Send_enqueue(&buf, 1, MPI_INT, size, 0, scomm), MPI_ERR_RANK);
  EXPECT_CLASS(MPIX_Recv_enqueue(&buf, -1, MPI_INT, 0, 0, scomm, MPI_STATUS_IGNORE), MPI_ERR_COUNT);
  EXPECT_CLASS(MPIX_Comm_get_stream(scomm, 1, &copy), MPI_ERR_ARG);
  EXPECT_CLASS(MPIX_Comm_get_stream(scomm, 0, NULL), MPI_ERR_ARG);
  MPI_Comm_free(&scomm);
  MTEST_CHECK(MPIX_Stream_free(&s) == MPI_SUCCESS, "free once unused");
  EXPECT_CLASS(MPIX_Stream_free(&copy), MPIX_ERR_STREAM);
  EXPECT_CLASS(MPIX_Stream_free(&bogus), MPIX_ERR_STREAM);
  MPI_Comm never = MPI_COMM_NULL;
  /* Collective, and every rank passes a freed stream: all fail alike. */
  EXPECT_CLASS(MPIX_Stream_comm_create(MPI_COMM_WORLD, copy, &never), MPIX_ERR_STREAM);
  MTEST_CHECK(never == MPI_COMM_NULL, "a communicator was created for a freed stream");

  /* MPIX_Stream_create info. */
  MPI_Info info;
  MPIX_Stream t = MPIX_STREAM_NULL;
  MPI_Info_create(&info);
  MPI_Info_set(info, "type", "hipStream_t");
  EXPECT_CLASS(MPIX_Stream_create(info, &t), MPIX_ERR_STREAM);
  MPI_Info_set(info, "type", "cudaStream_t");
  EXPECT_CLASS(MPIX_Stream_create(info, &t), MPIX_ERR_STREAM); /* no "value" */
  MPI_Info_set(info, "value", "xyz");
  EXPECT_CLASS(MPIX_Stream_create(info, &t), MPIX_ERR_STREAM);
  MTEST_CHECK(t == MPIX_STREAM_NULL, "a stream was created from bad info");
  /* A real value (the legacy default stream, valid wherever a GPU is):
   * without CUDA or a GPU this is MPIX_ERR_NO_CUDA; with one it may work. */
  void *legacy = NULL;
  MPIX_Info_set_hex(info, "value", &legacy, sizeof legacy);
  int rc = MPIX_Stream_create(info, &t);
  if (rc == MPI_SUCCESS) {
    MTEST_CHECK(t != MPIX_STREAM_NULL, "created MPIX_STREAM_NULL");
    MPIX_Stream_free(&t);
  } else {
    MTEST_CHECK(mtest_class(rc) == MPIX_ERR_NO_CUDA || mtest_class(rc) == MPIX_ERR_NO_THREAD,
                "cudaStream_t stream: class %d", mtest_class(rc));
  }
  MPI_Info_free(&info);

  /* Null arguments. */
  EXPECT_CLASS(MPIX_Stream_create(MPI_INFO_NULL, NULL), MPI_ERR_ARG);
  EXPECT_CLASS(MPIX_Stream_free(NULL), MPI_ERR_ARG);
  EXPECT_CLASS(MPIX_Stream_comm_create(MPI_COMM_WORLD, MPIX_STREAM_NULL, NULL), MPI_ERR_ARG);
  EXPECT_CLASS(MPIX_Info_set_hex(MPI_INFO_NULL, "k", &buf, 4), MPI_ERR_ARG);
  EXPECT_CLASS(MPIX_Wait_enqueue(NULL, MPI_STATUS_IGNORE), MPI_ERR_ARG);
  EXPECT_CLASS(MPIX_Waitall_enqueue(-1, &req, MPI_STATUSES_IGNORE), MPI_ERR_ARG);

  /* Every error string names the problem. */
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(MPIX_ERR_STREAM, text, &len);
  MTEST_CHECK(strstr(text, "MPIX_ERR_STREAM") != NULL, "MPIX_ERR_STREAM text \"%s\"", text);
  MPI_Error_string(MPIX_ERR_NO_THREAD, text, &len);
  MTEST_CHECK(strstr(text, "MPIX_ERR_NO_THREAD") != NULL, "MPIX_ERR_NO_THREAD text \"%s\"", text);
  return mtest_finalize();
}
