# The soak (issue 17): randomized traffic for a set time, communicators made
# and freed while traffic flows, exactly-once delivery and flat memory
# checked. soak links libmpix (the relink use); soak_preload is the same
# program built as plain MPI, run under LD_PRELOAD. Bounded runs in `make
# check` (test/mpi/soak/testlist, default transport only: the transport
# passes run test/mpi/p2p's randomized traffic already, and CI's time is
# spent); the long run is bench/run_soak.sh. Sanitizer builds run a
# shorter one without the memory check (ASan's quarantine and TSan's
# shadow memory make RSS say nothing): races and memory errors under the
# soak's churn of communicators, regions and cancels.
check_PROGRAMS += test/mpi/soak/soak test/mpi/soak/soak_preload
test_mpi_soak_soak_SOURCES = test/mpi/soak/soak.c test/mpi/mtest.h
test_mpi_soak_soak_CFLAGS = $(MPIX_CFLAGS) -I$(top_srcdir)/test/mpi
test_mpi_soak_soak_LDADD = src/libmpix.la $(MPI_LIBS) -ldl
test_mpi_soak_soak_LDFLAGS = -no-install
test_mpi_soak_soak_preload_SOURCES = test/mpi/soak/soak.c test/mpi/mtest.h
test_mpi_soak_soak_preload_CFLAGS = $(MPIX_CFLAGS) -I$(top_srcdir)/test/mpi -DSOAK_PRELOAD
test_mpi_soak_soak_preload_LDADD = $(MPI_LIBS) -ldl
EXTRA_DIST += test/mpi/soak/testlist test/mpi/soak/testlist.sanitized bench/run_soak.sh
if SANITIZED_BUILD
MPIX_TESTLISTS += test/mpi/soak/testlist.sanitized
else
MPIX_TESTLISTS += test/mpi/soak/testlist
endif
