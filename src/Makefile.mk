# The interposer, in three layers (docs/DESIGN.md, "Layers"): src/mpi the
# intercepted MPI_* entry points, the library's start and stop and MPI_T, on
# top of src/p2p the point-to-point engine, on top of src/ itself
# (communicator table, errors, configuration, the process state).
# libmpixcore holds all library code; libmpix.so exports it.
noinst_LTLIBRARIES += src/libmpixcore.la
src_libmpixcore_la_SOURCES = \
	src/comm_table.cc src/comm_table.h \
	src/config.cc src/config.h \
	src/errors.cc src/errors.h \
	src/mpi/init.cc \
	src/mpi/mpit.cc src/mpi/mpit_vars.cc src/mpi/mpit_vars.h \
	src/mpi/runtime.cc src/mpi/runtime.h src/runtime_state.cc src/runtime_state.h \
	src/visibility.h \
	src/mpi/api_comm.cc src/mpi/comm_idup.cc src/mpi/api_common.h src/mpi/api_common.cc src/mpi/api_probe.cc src/mpi/api_recv.cc \
	src/mpi/api_barrier.cc src/mpi/api_more.cc src/mpi/api_send.cc src/mpi/api_wait.cc src/p2p/comms.h src/p2p/datatype.h src/p2p/liveness.cc src/p2p/liveness.h \
	src/p2p/engine.cc src/p2p/engine.h src/p2p/split_copy.cc src/p2p/hints.cc src/p2p/hints.h \
	src/p2p/gpu_pack.cc src/p2p/gpu_pack.h src/p2p/gpu_path.cc src/p2p/gpu_path.h src/p2p/gpu_ops.h src/p2p/gpu_send.cc src/p2p/gpu_recv.cc src/p2p/gpu_cache.h src/p2p/gpu_tags.h src/p2p/stage_clock.h \
	src/p2p/gpu_wire.cc src/p2p/gpu_wire.h \
	src/p2p/request.cc src/p2p/request.h src/p2p/lanes.cc src/p2p/lanes.h src/p2p/unexpected.h src/p2p/staged_native.cc src/p2p/staged_native.h \
	src/p2p/region_batch.cc src/p2p/region_batch.h
src_libmpixcore_la_CXXFLAGS = $(MPIX_CXXFLAGS)
src_libmpixcore_la_LIBADD = match/libmpixmatch.la

lib_LTLIBRARIES += src/libmpix.la
src_libmpix_la_SOURCES =
# libtool needs one C++ source to pick the C++ linker for a library built
# only from convenience libraries.
nodist_EXTRA_src_libmpix_la_SOURCES = src/force-cxx-link.cc
src_libmpix_la_LIBADD = src/libmpixcore.la $(MPI_LIBS) $(CUDA_LIBS)
src_libmpix_la_LDFLAGS = -version-info 0:0:0 -Wl,--version-script=$(srcdir)/src/libmpix.map $(MPIX_NO_UNDEFINED)
EXTRA_DIST += src/libmpix.map
EXTRA_src_libmpix_la_DEPENDENCIES = $(srcdir)/src/libmpix.map

# mpix_info: the build configuration and every MPIX_* variable (like ucx_info -c).
bin_PROGRAMS += src/mpi/mpix_info
src_mpi_mpix_info_SOURCES = src/mpi/mpix_info.cc
src_mpi_mpix_info_CXXFLAGS = $(MPIX_CXXFLAGS)
src_mpi_mpix_info_LDADD = src/libmpixcore.la $(MPI_LIBS) $(CUDA_LIBS)
