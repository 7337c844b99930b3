# MPI tests: self-checking programs run under mpiexec by test/runtests at the
# rank counts in test/mpi/testlist. They link libmpix (the relink use).
MPIX_MPI_TESTS = test/mpi/version test/mpi/init_thread test/mpi/errclass test/mpi/errhandler \
	test/mpi/errfatal test/mpi/before_init
check_PROGRAMS += $(MPIX_MPI_TESTS)
MPIX_MPI_TEST_LDADD = src/libmpix.la $(MPI_LIBS)
MPIX_MPI_TEST_CFLAGS = $(MPIX_CFLAGS)
test_mpi_version_SOURCES = test/mpi/version.c test/mpi/mtest.h
test_mpi_version_CFLAGS = $(MPIX_MPI_TEST_CFLAGS)
test_mpi_version_LDADD = $(MPIX_MPI_TEST_LDADD)
test_mpi_version_LDFLAGS = -no-install
test_mpi_init_thread_SOURCES = test/mpi/init_thread.c test/mpi/mtest.h
test_mpi_init_thread_CFLAGS = $(MPIX_MPI_TEST_CFLAGS)
test_mpi_init_thread_LDADD = $(MPIX_MPI_TEST_LDADD)
test_mpi_init_thread_LDFLAGS = -no-install
test_mpi_errclass_SOURCES = test/mpi/errclass.c test/mpi/mtest.h
test_mpi_errclass_CFLAGS = $(MPIX_MPI_TEST_CFLAGS)
test_mpi_errclass_LDADD = $(MPIX_MPI_TEST_LDADD)
test_mpi_errclass_LDFLAGS = -no-install
test_mpi_errhandler_SOURCES = test/mpi/errhandler.c test/mpi/mtest.h
test_mpi_errhandler_CFLAGS = $(MPIX_MPI_TEST_CFLAGS)
test_mpi_errhandler_LDADD = $(MPIX_MPI_TEST_LDADD)
test_mpi_errhandler_LDFLAGS = -no-install
test_mpi_errfatal_SOURCES = test/mpi/errfatal.c test/mpi/mtest.h
test_mpi_errfatal_CFLAGS = $(MPIX_MPI_TEST_CFLAGS)
test_mpi_errfatal_LDADD = $(MPIX_MPI_TEST_LDADD)
test_mpi_errfatal_LDFLAGS = -no-install
test_mpi_before_init_SOURCES = test/mpi/before_init.c test/mpi/mtest.h
test_mpi_before_init_CFLAGS = $(MPIX_MPI_TEST_CFLAGS)
test_mpi_before_init_LDADD = $(MPIX_MPI_TEST_LDADD)
test_mpi_before_init_LDFLAGS = -no-install
EXTRA_DIST += test/mpi/testlist
# MPIX_Comm_device_handle from C: argument and communicator errors.
check_PROGRAMS += test/mpi/dev_handle
test_mpi_dev_handle_SOURCES = test/mpi/dev_handle.c test/mpi/mtest.h
test_mpi_dev_handle_CFLAGS = $(MPIX_MPI_TEST_CFLAGS)
test_mpi_dev_handle_LDADD = $(MPIX_MPI_TEST_LDADD)
test_mpi_dev_handle_LDFLAGS = -no-install
# The proxy path of device send/recv, host threads standing in for the GPU.
check_PROGRAMS += test/mpi/dev_proxy
test_mpi_dev_proxy_SOURCES = test/mpi/dev_proxy.c test/mpi/mtest.h
test_mpi_dev_proxy_CFLAGS = $(MPIX_MPI_TEST_CFLAGS)
test_mpi_dev_proxy_LDADD = $(MPIX_MPI_TEST_LDADD)
test_mpi_dev_proxy_LDFLAGS = -no-install
# The proxy path with thousands of operations in flight, payload and order checked.
check_PROGRAMS += test/mpi/dev_proxy_many
test_mpi_dev_proxy_many_SOURCES = test/mpi/dev_proxy_many.c test/mpi/mtest.h
test_mpi_dev_proxy_many_CFLAGS = $(MPIX_MPI_TEST_CFLAGS)
test_mpi_dev_proxy_many_LDADD = $(MPIX_MPI_TEST_LDADD) -lpthread
test_mpi_dev_proxy_many_LDFLAGS = -no-install
# exit() or MPI_Abort without MPI_Finalize ends with the program's status.
check_PROGRAMS += test/mpi/exit_nofinalize
test_mpi_exit_nofinalize_SOURCES = test/mpi/exit_nofinalize.c test/mpi/mtest.h
test_mpi_exit_nofinalize_CFLAGS = $(MPIX_MPI_TEST_CFLAGS)
test_mpi_exit_nofinalize_LDADD = $(MPIX_MPI_TEST_LDADD)
test_mpi_exit_nofinalize_LDFLAGS = -no-install
# MPI_T: mpix's control and performance variables beside the MPI library's.
check_PROGRAMS += test/mpi/mpit
test_mpi_mpit_SOURCES = test/mpi/mpit.c test/mpi/mtest.h
test_mpi_mpit_CFLAGS = $(MPIX_MPI_TEST_CFLAGS)
test_mpi_mpit_LDADD = $(MPIX_MPI_TEST_LDADD)
test_mpi_mpit_LDFLAGS = -no-install
