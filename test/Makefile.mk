# `make check`: unit tests, MPI tests (under mpiexec) and GPU tests (skipped
# visibly without a GPU), all run by test/runtests, which prints the tally.
EXTRA_DIST += test/runtests test/check-symbols.sh test/check-install.sh test/gpu/check-ptx.sh test/install/consumer.c \
	test/fuzz/run.sh test/fuzz/fuzz_matcher.cc test/fuzz/corpus test/check-errors-doc.sh test/check-cu-deps.sh test/check-plots.sh test/check-demo.sh \
	test/fuzz/fuzz_wire.cc test/fuzz/fuzz_gpu_wire.cc test/fuzz/fuzz_proxy.cc test/fuzz/seeds.py \
	test/install/CMakeLists.txt
MPIX_TESTLISTS = test/mpi/testlist
MPIX_TEST_SKIPS =
MPIX_TEST_ENV = MPIEXEC="$(MPIEXEC)" MPIEXEC_FLAGS="$(MPIEXEC_FLAGS)" \
	MPIX_LIB="$(abs_top_builddir)/src/.libs/libmpix.so" NM="$(NM)" MAKE="$(MAKE)" \
	MPIX_BUILDDIR="$(abs_top_builddir)" MPIX_SRCDIR="$(abs_top_srcdir)" MPIX_SANITIZED="$(MPIX_SANITIZED)" \
	NVCC="$(NVCC)" NVCC_ARCHFLAGS="$(NVCC_ARCHFLAGS)" MPI_CPPFLAGS="$(MPI_CPPFLAGS)"

# The host MPI tests once more on each transport (the first pass above runs
# them on the default, auto: ucx where it is built and usable). Over UCX
# with TCP as well: MPIX_UCX_TLS=tcp,self puts mpix's own UCX on the network
# path between hosts while the MPI library keeps its default (MPICH 4.0.2
# with UCX_TLS=tcp,self itself hangs in MPI_Finalize at 3 ranks or more);
# the TCP passes turn single-copy and the shared-memory rings off
# (MPIX_SINGLE_COPY=off MPIX_SHM_RING=off), which do not reach other hosts,
# so that they test what goes between hosts.
MPIX_TRANSPORT_TESTLISTS = test/mpi/testlist test/mpi/p2p/testlist test/mpi/stream/testlist
MPIX_UCX_TCP = tcp,self
# The libfabric transport likewise, once with its shm provider and once
# with tcp (FI_PROVIDER, libfabric's own variable: MPICH here does not use
# libfabric). Which of those extra passes run: .ci/run's sanitizer builds
# run none (their default pass already runs the UCX code, over shared
# memory) to stay inside its time budget.
MPIX_TRANSPORT_PASSES = ucx-tcp pmpi ofi-shm ofi-tcp
MPIX_UCX_BUILT =
if HAVE_UCX
MPIX_UCX_BUILT += yes
endif
MPIX_OFI_BUILT =
if HAVE_OFI
MPIX_OFI_BUILT += yes
endif
EXTRA_DIST += test/mpi/transport/testlist test/mpi/transport/testlist.ofi

check-local: all
	@$(MPIX_TEST_ENV) $(top_srcdir)/test/runtests \
	  $(foreach t,$(MPIX_UNIT_TESTS),--unit $(t)) \
	  --script $(top_srcdir)/test/check-symbols.sh \
	  --script $(top_srcdir)/test/check-install.sh \
	  --script $(top_srcdir)/test/gpu/check-ptx.sh \
	  --script $(top_srcdir)/test/fuzz/run.sh \
	  --script $(top_srcdir)/test/check-errors-doc.sh \
	  --script $(top_srcdir)/test/check-cu-deps.sh \
	  --script $(top_srcdir)/test/check-plots.sh \
	  --script $(top_srcdir)/test/check-demo.sh \
	  $(foreach l,$(MPIX_TESTLISTS),--testlist $(l)) $(MPIX_TEST_SKIPS) \
	  $(if $(strip $(MPIX_UCX_BUILT)),--testlist test/mpi/transport/testlist \
	    $(if $(filter ucx-tcp,$(MPIX_TRANSPORT_PASSES)),--env MPIX_TRANSPORT=ucx --env MPIX_UCX_TLS=$(MPIX_UCX_TCP) \
	      --env MPIX_SINGLE_COPY=off --env MPIX_SHM_RING=off \
	      $(foreach l,$(MPIX_TRANSPORT_TESTLISTS),--testlist $(l)) --noenv) \
	    $(if $(filter pmpi,$(MPIX_TRANSPORT_PASSES)),--env MPIX_TRANSPORT=pmpi \
	      $(foreach l,$(MPIX_TRANSPORT_TESTLISTS),--testlist $(l)) --noenv), \
	    --skip test/mpi/transport "built without UCX (configure --with-ucx)") \
	  $(if $(strip $(MPIX_OFI_BUILT)),--testlist test/mpi/transport/testlist.ofi \
	    $(foreach p,shm tcp,$(if $(filter ofi-$(p),$(MPIX_TRANSPORT_PASSES)),--env MPIX_TRANSPORT=ofi --env FI_PROVIDER=$(p) \
	      $(if $(filter tcp,$(p)),--env MPIX_SINGLE_COPY=off --env MPIX_SHM_RING=off) \
	      $(foreach l,$(MPIX_TRANSPORT_TESTLISTS),--testlist $(l)) --noenv)), \
	    --skip test/mpi/transport/testlist.ofi "built without libfabric (configure --with-ofi)")

# A subset of make check, for a CI stage that cannot afford all of it
# (.ci/run's Open MPI stage, through test/external/check-openmpi.sh --ci):
# the lists in MPIX_CHECK_LISTS on the default transport only, with
# check-symbols.sh; only the programs those lists run are built (no unit
# tests, fuzz targets or the other lists' programs). make check runs these
# lists too, and on every transport.
MPIX_CHECK_LISTS = test/mpi/testlist test/mpi/p2p/testlist
check-lists: all
	@progs=`for l in $(MPIX_CHECK_LISTS); do \
	  d=\`dirname $$l\`; \
	  sed -n 's/^\([^#[:space:]][^[:space:]]*\)[[:space:]].*/\1/p' $(top_srcdir)/$$l | \
	    while read -r p; do realpath -m --relative-to=. "$$d/$$p"; done; \
	done | sort -u`; \
	$(MAKE) $(AM_MAKEFLAGS) $$progs
	@$(MPIX_TEST_ENV) $(top_srcdir)/test/runtests \
	  --script $(top_srcdir)/test/check-symbols.sh \
	  $(foreach l,$(MPIX_CHECK_LISTS),--testlist $(l))

.PHONY: check-lists

# MPICH's own test suite: natively, under LD_PRELOAD, and its pt2pt tests
# with every communicator carried by the engine (MPIX_INTERCEPT=all), on the
# default transport (ucx where built), on ucx over TCP and on pmpi.
CHECK_MPICH_RUNS = --run preload --run preload:MPIX_INTERCEPT=all@pt2pt
if HAVE_UCX
CHECK_MPICH_RUNS += --run preload:MPIX_INTERCEPT=all,MPIX_TRANSPORT=ucx,MPIX_UCX_TLS=tcp,self@pt2pt \
	--run preload:MPIX_INTERCEPT=all,MPIX_TRANSPORT=pmpi@pt2pt
endif
check-mpich: all
	$(top_srcdir)/test/external/check-mpich.sh --lib $(abs_top_builddir)/src/.libs/libmpix.so $(CHECK_MPICH_RUNS)

.PHONY: check-mpich

# mpi4py's own test suite (17 modules: point-to-point, communicators,
# requests, status, datatypes, errors; see test/external/check-mpi4py.sh),
# mpi4py built against $(MPICC) in a cached venv, with 1 and 2 ranks:
# natively, under LD_PRELOAD, with MPIX_INTERCEPT=all (every message through
# mpix's engine), the same with every message as rendezvous
# (MPIX_EAGER_LIMIT=0), and on the pmpi transport where ucx is the default.
CHECK_MPI4PY_RUNS = --run preload --run preload:MPIX_INTERCEPT=all \
	--run preload:MPIX_INTERCEPT=all,MPIX_EAGER_LIMIT=0
if HAVE_UCX
CHECK_MPI4PY_RUNS += --run preload:MPIX_INTERCEPT=all,MPIX_TRANSPORT=pmpi
endif
check-mpi4py: all
	$(top_srcdir)/test/external/check-mpi4py.sh --lib $(abs_top_builddir)/src/.libs/libmpix.so \
	  --mpicc "$(MPICC)" --mpiexec "$(MPIEXEC)" --mpiexec-flags "$(MPIEXEC_FLAGS)" $(CHECK_MPI4PY_RUNS)

.PHONY: check-mpi4py
