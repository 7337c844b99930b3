/* A stream is a serial context: a second thread entering it while the first
 * is still inside (a host stream's blocking MPIX_Recv_enqueue) gets
 * MPIX_ERR_STREAM and nothing happens; the first operation completes
 * normally. Plain MPI calls on the stream communicator from other threads
 * stay legal. Needs MPI_THREAD_MULTIPLE. */
#include <pthread.h>
#include <unistd.h>

#include "mpix.h"
#include "mtest.h"

static MPI_Comm scomm;
static int received = -1;

static void *receiver(void *arg) {
  (void)arg;
  /* The main thread's probes may hold the stream at the moment this thread
   * enters: then this one is refused (the same rule) and tries again. */
  int rc;
  while ((rc = MPIX_Recv_enqueue(&received, 1, MPI_INT, 1, 5, scomm, MPI_STATUS_IGNORE)) != MPI_SUCCESS &&
         mtest_class(rc) == MPIX_ERR_STREAM)
    usleep(100);
  return NULL;
}

int main(int argc, char **argv) {
  int rank, provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (provided != MPI_THREAD_MULTIPLE) {
    if (rank == 0) mtest_printf("skipped: MPI_THREAD_MULTIPLE not provided\n");
    MPI_Finalize();
    return 77;
  }
  MPIX_Stream s;
  MPIX_Stream_create(MPI_INFO_NULL, &s);
  MPIX_Stream_comm_create(MPI_COMM_WORLD, s, &scomm);
  MPI_Comm_set_errhandler(scomm, MPI_ERRORS_RETURN);
  if (rank == 0) {
    pthread_t th;
    pthread_create(&th, NULL, receiver, NULL);
    /* Probe with an operation that completes at once when the stream is
     * free, until the receiver is inside it. */
    int refused = 0;
    for (int i = 0; i < 5000 && !refused; ++i) {
      const int rc = MPIX_Recv_enqueue(NULL, 0, MPI_INT, MPI_PROC_NULL, 0, scomm, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        MTEST_CHECK(mtest_class(rc) == MPIX_ERR_STREAM, "concurrent use: class %d", mtest_class(rc));
        refused = 1;
      } else {
        usleep(1000);
      }
    }
    MTEST_CHECK(refused, "concurrent use of one stream was never refused");
    int go = 1;
    MPI_Send(&go, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    pthread_join(th, NULL);
    MTEST_CHECK(received == 42, "received %d", received);
  } else if (rank == 1) {
    int go = 0, v = 42;
    MPI_Recv(&go, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPIX_Send_enqueue(&v, 1, MPI_INT, 0, 5, scomm);
  }
  MPI_Comm_free(&scomm);
  MPIX_Stream_free(&s);
  return mtest_finalize();
}
