# GPU tests: compiled with nvcc when CUDA is configured; test/gpu/run.sh runs
# them (and the rest) on the GPU machine.
if HAVE_CUDA
MPIX_GPU_TESTS = test/gpu/gpu_smoke
check_PROGRAMS += $(MPIX_GPU_TESTS)
test_gpu_gpu_smoke_SOURCES = test/gpu/gpu_smoke.cu
test_gpu_gpu_smoke_LDADD = src/libmpix.la $(MPI_LIBS) $(CUDA_LIBS)
test_gpu_gpu_smoke_LDFLAGS = -no-install
test_gpu_gpu_smoke_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(test_gpu_gpu_smoke_LDFLAGS) $(LDFLAGS) -o $@
# Device buffers in every point-to-point call (IPC and staging paths).
MPIX_GPU_TESTS += test/gpu/p2p_device
check_PROGRAMS += test/gpu/p2p_device
test_gpu_p2p_device_SOURCES = test/gpu/p2p_device.cu
test_gpu_p2p_device_LDADD = src/libmpix.la $(MPI_LIBS) $(CUDA_LIBS)
test_gpu_p2p_device_LDFLAGS = -no-install
test_gpu_p2p_device_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(test_gpu_p2p_device_LDFLAGS) $(LDFLAGS) -o $@
# MPI's progress rule with device buffers (the liveness thread answers for
# a receiver blocked in a call mpix does not intercept).
MPIX_GPU_TESTS += test/gpu/progress_device
check_PROGRAMS += test/gpu/progress_device
test_gpu_progress_device_SOURCES = test/gpu/progress_device.cu
test_gpu_progress_device_LDADD = src/libmpix.la $(MPI_LIBS) $(CUDA_LIBS)
test_gpu_progress_device_LDFLAGS = -no-install
test_gpu_progress_device_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(test_gpu_progress_device_LDFLAGS) $(LDFLAGS) -o $@
# Small device messages through the resident copy kernel (issue 25).
MPIX_GPU_TESTS += test/gpu/p2p_kernel_copy
check_PROGRAMS += test/gpu/p2p_kernel_copy
test_gpu_p2p_kernel_copy_SOURCES = test/gpu/p2p_kernel_copy.cu
test_gpu_p2p_kernel_copy_LDADD = src/libmpix.la $(MPI_LIBS) $(CUDA_LIBS)
test_gpu_p2p_kernel_copy_LDFLAGS = -no-install
test_gpu_p2p_kernel_copy_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(test_gpu_p2p_kernel_copy_LDFLAGS) $(LDFLAGS) -o $@
MPIX_TESTLISTS += test/gpu/testlist
else
MPIX_TEST_SKIPS += --skip test/gpu "built without CUDA"
endif
EXTRA_DIST += test/gpu/testlist test/gpu/run.sh test/gpu/gpu_common.h
# Stream-triggered operations on a CUDA stream (MPIX_*_enqueue).
if HAVE_CUDA
MPIX_GPU_TESTS += test/gpu/stream_enqueue
check_PROGRAMS += test/gpu/stream_enqueue
test_gpu_stream_enqueue_SOURCES = test/gpu/stream_enqueue.cu
test_gpu_stream_enqueue_LDADD = src/libmpix.la $(MPI_LIBS) $(CUDA_LIBS)
test_gpu_stream_enqueue_LDFLAGS = -no-install
test_gpu_stream_enqueue_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(test_gpu_stream_enqueue_LDFLAGS) $(LDFLAGS) -o $@
endif
# The semantics of *_enqueue on either path (GPU-run and host-driven).
if HAVE_CUDA
MPIX_GPU_TESTS += test/gpu/stream_kernel
check_PROGRAMS += test/gpu/stream_kernel
test_gpu_stream_kernel_SOURCES = test/gpu/stream_kernel.cu
test_gpu_stream_kernel_LDADD = src/libmpix.la $(MPI_LIBS) $(CUDA_LIBS)
test_gpu_stream_kernel_LDFLAGS = -no-install
test_gpu_stream_kernel_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(test_gpu_stream_kernel_LDFLAGS) $(LDFLAGS) -o $@
endif
# GPU batch matcher against the CPU one (device/match_gpu.h, match/batch.h).
if HAVE_CUDA
MPIX_GPU_TESTS += test/gpu/gpu_match
check_PROGRAMS += test/gpu/gpu_match
test_gpu_gpu_match_SOURCES = test/gpu/gpu_match.cu test/gpu/match_gen.h
test_gpu_gpu_match_LDADD = device/libmpixdevice.la match/libmpixmatch.la $(CUDA_LIBS)
test_gpu_gpu_match_LDFLAGS = -no-install
test_gpu_gpu_match_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(test_gpu_gpu_match_LDFLAGS) $(LDFLAGS) -o $@
endif
EXTRA_DIST += test/gpu/match_gen.h
# Device-callable send/recv (include/mpix_device.h): header-only device code.
if HAVE_CUDA
MPIX_GPU_TESTS += test/gpu/dev_p2p
check_PROGRAMS += test/gpu/dev_p2p
test_gpu_dev_p2p_SOURCES = test/gpu/dev_p2p.cu
test_gpu_dev_p2p_LDADD = src/libmpix.la $(MPI_LIBS) $(CUDA_LIBS)
test_gpu_dev_p2p_LDFLAGS = -no-install
test_gpu_dev_p2p_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(test_gpu_dev_p2p_LDFLAGS) $(LDFLAGS) -o $@
endif
# Every rank with every other at once, each GPU path (issue 26's four GPUs).
if HAVE_CUDA
MPIX_GPU_TESTS += test/gpu/all_pairs
check_PROGRAMS += test/gpu/all_pairs
test_gpu_all_pairs_SOURCES = test/gpu/all_pairs.cu
test_gpu_all_pairs_LDADD = src/libmpix.la $(MPI_LIBS) $(CUDA_LIBS)
test_gpu_all_pairs_LDFLAGS = -no-install
test_gpu_all_pairs_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(test_gpu_all_pairs_LDFLAGS) $(LDFLAGS) -o $@
endif
# `make gpu-bundle`: what the GPU machine runs (the GPU testlist's programs,
# the GPU benchmarks, libmpix.so), built here and copied, stripped, to their
# tree paths under .gpu-bundle/. Carried to the GPU machine, it spares
# test/gpu/run.sh the build there (minutes of the device budget).
if HAVE_CUDA
MPIX_GPU_BUNDLE = $(MPIX_GPU_TESTS) test/mpi/p2p/region_batch test/mpi/p2p/region examples/matching_demo bench/bench_gpu_p2p bench/bench_gpu_suite \
	bench/bench_stream bench/bench_jacobi bench/bench_gpu_copy bench/bench_gpu_match bench/bench_dev_p2p \
	bench/bench_match_threads
# The programs are made after `all` (a make of its own), not beside it: under
# -j both would link src/libmpix.la at once, and a program's link then found
# no libmpix.so.
gpu-bundle: all
	$(MAKE) $(AM_MAKEFLAGS) $(MPIX_GPU_BUNDLE) bench/libktrace.so
	rm -rf .gpu-bundle
	for p in $(MPIX_GPU_BUNDLE) src/.libs/libmpix.so.0; do \
	  mkdir -p .gpu-bundle/$$(dirname $$p) && cp -L $$p .gpu-bundle/$$p && strip --strip-debug .gpu-bundle/$$p || exit 1; \
	done
	cp bench/libktrace.so .gpu-bundle/bench/ && \
	  cp -L $(CUDA_HOME)/lib64/$$(objdump -p bench/libktrace.so | sed -n 's/ *NEEDED *\(libcupti\.so[.0-9]*\)$$/\1/p') .gpu-bundle/bench/
	(cd $(top_srcdir) && git describe --always --dirty 2>/dev/null || echo unknown) >.gpu-bundle/source
	@du -sh .gpu-bundle
else
gpu-bundle:
	@echo "gpu-bundle: built without CUDA"; exit 1
endif
.PHONY: gpu-bundle
# Buffers reused as soon as a send returns, for every way a device buffer
# is sent (device-initiated, host calls, enqueued), under load.
if HAVE_CUDA
MPIX_GPU_TESTS += test/gpu/dev_reuse
check_PROGRAMS += test/gpu/dev_reuse
test_gpu_dev_reuse_SOURCES = test/gpu/dev_reuse.cu
test_gpu_dev_reuse_LDADD = src/libmpix.la $(MPI_LIBS) $(CUDA_LIBS)
test_gpu_dev_reuse_LDFLAGS = -no-install
test_gpu_dev_reuse_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(test_gpu_dev_reuse_LDFLAGS) $(LDFLAGS) -o $@
# Device buffers on communicators the MPI library matches: a plain MPI
# program (no libmpix), run under LD_PRELOAD.
MPIX_GPU_TESTS += test/gpu/p2p_native
check_PROGRAMS += test/gpu/p2p_native
test_gpu_p2p_native_SOURCES = test/gpu/p2p_native.cu
test_gpu_p2p_native_LDADD = $(MPI_LIBS) $(CUDA_LIBS)
test_gpu_p2p_native_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(LDFLAGS) -o $@
endif
