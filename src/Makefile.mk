# The interposer: intercepted MPI_* entry points, communicator table, errors,
# configuration. libmpixcore holds all library code; libmpix.so exports it.
noinst_LTLIBRARIES += src/libmpixcore.la
src_libmpixcore_la_SOURCES = \
	src/comm_table.cc src/comm_table.h \
	src/config.cc src/config.h \
	src/errors.cc src/errors.h \
	src/init.cc \
	src/mpit.cc src/mpit_vars.cc src/mpit_vars.h \
	src/runtime.cc src/runtime.h \
	src/visibility.h \
	src/p2p/api_comm.cc src/p2p/comm_idup.cc src/p2p/api_common.h src/p2p/api_common.cc src/p2p/api_probe.cc src/p2p/api_recv.cc \
	src/p2p/api_more.cc src/p2p/api_send.cc src/p2p/api_wait.cc src/p2p/comms.h src/p2p/datatype.h src/p2p/liveness.cc src/p2p/liveness.h \
	src/p2p/engine.cc src/p2p/engine.h src/p2p/hints.cc src/p2p/hints.h \
	src/p2p/gpu_pack.cc src/p2p/gpu_pack.h src/p2p/gpu_path.cc src/p2p/gpu_path.h src/p2p/gpu_ops.h src/p2p/gpu_send.cc src/p2p/gpu_recv.cc src/p2p/gpu_cache.h src/p2p/gpu_tags.h \
	src/p2p/gpu_wire.cc src/p2p/gpu_wire.h \
	src/p2p/request.cc src/p2p/request.h src/p2p/staged_native.cc src/p2p/staged_native.h \
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
bin_PROGRAMS += src/mpix_info
src_mpix_info_SOURCES = src/mpix_info.cc
src_mpix_info_CXXFLAGS = $(MPIX_CXXFLAGS)
src_mpix_info_LDADD = src/libmpixcore.la $(MPI_LIBS) $(CUDA_LIBS)
