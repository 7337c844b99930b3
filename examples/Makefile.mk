# examples/ring: an unmodified MPI program (no mpix header, no -lmpix), run
# under LD_PRELOAD; examples/ring_relinked: the same source linked with -lmpix.
noinst_PROGRAMS += examples/ring examples/ring_relinked examples/matching_demo
examples_ring_SOURCES = examples/ring.c
examples_ring_CFLAGS = $(MPIX_CFLAGS)
examples_ring_LDADD = $(MPI_LIBS)
examples_ring_relinked_SOURCES = examples/ring.c
examples_ring_relinked_CFLAGS = $(MPIX_CFLAGS)
examples_ring_relinked_LDADD = src/libmpix.la $(MPI_LIBS)
examples_ring_relinked_LDFLAGS = -no-install
# What mpix is for: deep receive queues on a no-wildcard communicator, run by
# examples/demo.sh natively and under LD_PRELOAD (MPIX functions by dlsym).
examples_matching_demo_SOURCES = examples/matching_demo.c
examples_matching_demo_CFLAGS = $(MPIX_CFLAGS)
examples_matching_demo_LDADD = $(MPI_LIBS) -ldl
EXTRA_DIST += examples/demo.sh

MPIX_DEMO_NP = 4
# The newcomer's demo: the same unmodified program natively, under
# LD_PRELOAD (MPIX_VERBOSE=1 shows the library attaching) and relinked; then
# what mpix is for, natively and under mpix side by side (examples/demo.sh),
# and a summary of the build (`src/mpi/mpix_info` alone lists every setting).
demo: all
	@echo "== examples/ring, plain MPI ($(MPIX_MPI_IMPL))"
	$(MPIEXEC) $(MPIEXEC_FLAGS) -n $(MPIX_DEMO_NP) examples/ring
	@echo "== the same binary under LD_PRELOAD=libmpix.so, MPIX_VERBOSE=1"
	$(MPIEXEC) $(MPIEXEC_FLAGS) -n $(MPIX_DEMO_NP) env MPIX_VERBOSE=1 \
	  LD_PRELOAD=$(abs_top_builddir)/src/.libs/libmpix.so examples/ring 2>&1 | grep -v '^\[mpix\] MPIX_'
	@echo "== relinked: -lmpix before the MPI library"
	$(MPIEXEC) $(MPIEXEC_FLAGS) -n $(MPIX_DEMO_NP) examples/ring_relinked
	@echo "== mpix_info -s (mpix_info alone: every setting and MPI_T variable)"
	@src/mpi/mpix_info -s
	@echo "== what mpix is for: a receiver with thousands of receives outstanding"
	@$(top_srcdir)/examples/demo.sh "$(MPIEXEC)" "$(MPIEXEC_FLAGS)" $(abs_top_builddir)/src/.libs/libmpix.so
.PHONY: demo

# SVG plots of the committed benchmark CSV (docs/plots/data) into
# docs/plots (bench/plot.py; needs matplotlib: Debian python3-matplotlib).
plots:
	@py=; for p in /usr/bin/python3 python3; do "$$p" -c 'import matplotlib' 2>/dev/null && { py=$$p; break; }; done; \
	  [ -n "$$py" ] || { echo "plots: no python3 with matplotlib (apt-get install python3-matplotlib)"; exit 1; }; \
	  "$$py" $(top_srcdir)/bench/plot.py --data $(top_srcdir)/docs/plots/data --out $(top_srcdir)/docs/plots
.PHONY: plots
