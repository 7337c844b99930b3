# Tests of the MPIX stream API on host streams and its bad input:
# self-checking programs run under mpiexec by test/runtests at the rank
# counts in test/mpi/stream/testlist. They link libmpix (the relink use).
MPIX_STREAM_TEST_CFLAGS = $(MPIX_CFLAGS) -I$(top_srcdir)/test/mpi
check_PROGRAMS += test/mpi/stream/hoststream
test_mpi_stream_hoststream_SOURCES = test/mpi/stream/hoststream.c
test_mpi_stream_hoststream_CFLAGS = $(MPIX_STREAM_TEST_CFLAGS)
test_mpi_stream_hoststream_LDADD = src/libmpix.la $(MPI_LIBS)
test_mpi_stream_hoststream_LDFLAGS = -no-install
check_PROGRAMS += test/mpi/stream/stream_err
test_mpi_stream_stream_err_SOURCES = test/mpi/stream/stream_err.c
test_mpi_stream_stream_err_CFLAGS = $(MPIX_STREAM_TEST_CFLAGS)
test_mpi_stream_stream_err_LDADD = src/libmpix.la $(MPI_LIBS)
test_mpi_stream_stream_err_LDFLAGS = -no-install
check_PROGRAMS += test/mpi/stream/stream_threads
test_mpi_stream_stream_threads_SOURCES = test/mpi/stream/stream_threads.c
test_mpi_stream_stream_threads_CFLAGS = $(MPIX_STREAM_TEST_CFLAGS) -pthread
test_mpi_stream_stream_threads_LDADD = src/libmpix.la $(MPI_LIBS)
test_mpi_stream_stream_threads_LDFLAGS = -no-install -pthread
check_PROGRAMS += test/mpi/stream/thread_level
test_mpi_stream_thread_level_SOURCES = test/mpi/stream/thread_level.c
test_mpi_stream_thread_level_CFLAGS = $(MPIX_STREAM_TEST_CFLAGS)
test_mpi_stream_thread_level_LDADD = src/libmpix.la $(MPI_LIBS)
test_mpi_stream_thread_level_LDFLAGS = -no-install
EXTRA_DIST += test/mpi/stream/testlist
MPIX_TESTLISTS += test/mpi/stream/testlist
