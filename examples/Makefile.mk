# examples/ring: an unmodified MPI program (no mpix header, no -lmpix), run
# under LD_PRELOAD; examples/ring_relinked: the same source linked with -lmpix.
noinst_PROGRAMS += examples/ring examples/ring_relinked
examples_ring_SOURCES = examples/ring.c
examples_ring_CFLAGS = $(MPIX_CFLAGS)
examples_ring_LDADD = $(MPI_LIBS)
examples_ring_relinked_SOURCES = examples/ring.c
examples_ring_relinked_CFLAGS = $(MPIX_CFLAGS)
examples_ring_relinked_LDADD = src/libmpix.la $(MPI_LIBS)
examples_ring_relinked_LDFLAGS = -no-install

MPIX_DEMO_NP = 4
# The newcomer's demo: the same unmodified program natively, under
# LD_PRELOAD (MPIX_VERBOSE=1 shows the library attaching) and relinked.
demo: all
	@echo "== examples/ring, plain MPI ($(MPIX_MPI_IMPL))"
	$(MPIEXEC) $(MPIEXEC_FLAGS) -n $(MPIX_DEMO_NP) examples/ring
	@echo "== the same binary under LD_PRELOAD=libmpix.so, MPIX_VERBOSE=1"
	$(MPIEXEC) $(MPIEXEC_FLAGS) -n $(MPIX_DEMO_NP) env MPIX_VERBOSE=1 \
	  LD_PRELOAD=$(abs_top_builddir)/src/.libs/libmpix.so examples/ring
	@echo "== relinked: -lmpix before the MPI library"
	$(MPIEXEC) $(MPIEXEC_FLAGS) -n $(MPIX_DEMO_NP) env MPIX_VERBOSE=1 examples/ring_relinked
	@echo "== mpix_info"
	src/mpix_info
.PHONY: demo
