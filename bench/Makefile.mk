# bench_match: matching rate of the engine (match/) against the reference
# matcher, per mode, depth and order; results in bench/RESULTS.md.
noinst_PROGRAMS += bench/bench_match
bench_bench_match_SOURCES = bench/bench_match.cc
bench_bench_match_CPPFLAGS = -I$(top_srcdir)
bench_bench_match_CXXFLAGS = $(MPIX_CXXFLAGS) -O3
bench_bench_match_LDADD = match/libmpixmatch.la
# bench_match_threads: threads matching side by side, one lock against
# the sharded matcher (issue 27).
noinst_PROGRAMS += bench/bench_match_threads
bench_bench_match_threads_SOURCES = bench/bench_match_threads.cc
bench_bench_match_threads_CPPFLAGS = -I$(top_srcdir)
bench_bench_match_threads_CXXFLAGS = $(MPIX_CXXFLAGS) -O3
bench_bench_match_threads_LDADD = match/libmpixmatch.la

# Point-to-point benchmarks: plain MPI programs (no -lmpix) run natively and
# under LD_PRELOAD=libmpix.so by bench/run_p2p_benchmarks.sh.
noinst_PROGRAMS += bench/bench_matching_rate bench/bench_pingpong bench/bench_unordered_region
MPIX_BENCH_MPI_LIBS = $(MPI_LIBS) -ldl
bench_bench_matching_rate_SOURCES = bench/bench_matching_rate.c bench/bench_common.h
bench_bench_matching_rate_CFLAGS = $(MPIX_CFLAGS)
bench_bench_matching_rate_LDADD = $(MPIX_BENCH_MPI_LIBS) -lm
bench_bench_pingpong_SOURCES = bench/bench_pingpong.c bench/bench_common.h
bench_bench_pingpong_CFLAGS = $(MPIX_CFLAGS)
bench_bench_pingpong_LDADD = $(MPIX_BENCH_MPI_LIBS) -lm
bench_bench_unordered_region_SOURCES = bench/bench_unordered_region.c bench/bench_common.h
bench_bench_unordered_region_CFLAGS = $(MPIX_CFLAGS)
bench_bench_unordered_region_LDADD = $(MPIX_BENCH_MPI_LIBS) -lm
# Matching throughput with several threads per rank (issue 27).
noinst_PROGRAMS += bench/bench_threads
bench_bench_threads_SOURCES = bench/bench_threads.c bench/bench_common.h
bench_bench_threads_CFLAGS = $(MPIX_CFLAGS)
bench_bench_threads_LDADD = $(MPIX_BENCH_MPI_LIBS) -lpthread
EXTRA_DIST += bench/README.md bench/callgrind_per_message.sh bench/run_p2p_benchmarks.sh bench/run_scaling.sh bench/bench_nvshmem.cu

# bench_gpu_p2p: device-buffer ping-pong through mpix against native MPI with
# cudaMemcpy staging and NCCL (loaded at run time), in one program.
if HAVE_CUDA
noinst_PROGRAMS += bench/bench_gpu_p2p
bench_bench_gpu_p2p_SOURCES = bench/bench_gpu_p2p.cu bench/nccl_loader.h
bench_bench_gpu_p2p_LDADD = src/libmpix.la $(MPI_LIBS) $(CUDA_LIBS) -ldl
bench_bench_gpu_p2p_LDFLAGS = -no-install
bench_bench_gpu_p2p_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(bench_bench_gpu_p2p_LDFLAGS) $(LDFLAGS) -o $@
endif

# bench_gpu_suite: the OSU shapes (latency, bw and bibw with a window of 64,
# message rate) on device buffers: mpix, staged native MPI and NCCL.
if HAVE_CUDA
noinst_PROGRAMS += bench/bench_gpu_suite
bench_bench_gpu_suite_SOURCES = bench/bench_gpu_suite.cu bench/nccl_loader.h
bench_bench_gpu_suite_LDADD = src/libmpix.la $(MPI_LIBS) $(CUDA_LIBS) -ldl
bench_bench_gpu_suite_LDFLAGS = -no-install
bench_bench_gpu_suite_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(bench_bench_gpu_suite_LDFLAGS) $(LDFLAGS) -o $@
endif

# bench_stream: MPIX_Send_enqueue/MPIX_Recv_enqueue ping-pong on a CUDA
# stream against NCCL send/recv (loaded at run time), in one program.
if HAVE_CUDA
noinst_PROGRAMS += bench/bench_stream
bench_bench_stream_SOURCES = bench/bench_stream.cu bench/nccl_loader.h
bench_bench_stream_LDADD = src/libmpix.la $(MPI_LIBS) $(CUDA_LIBS) -ldl
bench_bench_stream_LDFLAGS = -no-install
bench_bench_stream_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(bench_bench_stream_LDFLAGS) $(LDFLAGS) -o $@
endif

# bench_jacobi: 2D Jacobi halo exchange per iteration, host-synchronised MPI
# against stream-triggered (with and without overlap) and NCCL, one program.
if HAVE_CUDA
noinst_PROGRAMS += bench/bench_jacobi
bench_bench_jacobi_SOURCES = bench/bench_jacobi.cu bench/nccl_loader.h
bench_bench_jacobi_LDADD = src/libmpix.la $(MPI_LIBS) $(CUDA_LIBS) -ldl
bench_bench_jacobi_LDFLAGS = -no-install
bench_bench_jacobi_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(bench_bench_jacobi_LDFLAGS) $(LDFLAGS) -o $@
endif

# libktrace.so: kernel timelines on the GPU machine (no Nsight Systems
# there), loaded by CUDA through CUDA_INJECTION64_PATH; see bench/ktrace.c.
# CUPTI comes along in the bundle, beside it, found through $$ORIGIN. Made
# for the bundle only: a CUDA install may lack CUPTI's headers, and `all`
# must not need them.
if HAVE_CUDA
bench/libktrace.so: bench/ktrace.c
	$(AM_V_CC)$(CC) -shared -fPIC -O2 -Wall -Wextra -Werror $(CUDA_CPPFLAGS) -o $@ $(srcdir)/bench/ktrace.c \
	  -L$(CUDA_HOME)/lib64 -lcupti -Wl,-rpath,'$$ORIGIN'
CLEANFILES += bench/libktrace.so
endif
EXTRA_DIST += bench/ktrace.c

# bench_gpu_copy: the cost of one small host-driven GPU copy, per method
# (what the small-message device path is built from). No MPI.
if HAVE_CUDA
noinst_PROGRAMS += bench/bench_gpu_copy
bench_bench_gpu_copy_SOURCES = bench/bench_gpu_copy.cu bench/kernel_copy_in.cu bench/copy_in.cu
bench_bench_gpu_copy_LDADD = $(CUDA_LIBS)
bench_bench_gpu_copy_LINK = $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) $(LDFLAGS) -o $@
endif

# bench_gpu_match: GPU batch matcher (device/match_gpu.h) against the CPU
# batch matcher on the same batches: kernel and end-to-end rates, bandwidth
# floor; run by test/gpu/run.sh bench-match.
if HAVE_CUDA
noinst_PROGRAMS += bench/bench_gpu_match
bench_bench_gpu_match_SOURCES = bench/bench_gpu_match.cu test/gpu/match_gen.h
bench_bench_gpu_match_LDADD = device/libmpixdevice.la match/libmpixmatch.la $(CUDA_LIBS)
bench_bench_gpu_match_LDFLAGS = -no-install
bench_bench_gpu_match_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(bench_bench_gpu_match_LDFLAGS) $(LDFLAGS) -o $@
endif

# bench_dev_p2p: device-initiated MPIX_Send/MPIX_Recv (mpix_device.h):
# latency, message rate, bandwidth; see bench/RESULTS.md.
if HAVE_CUDA
noinst_PROGRAMS += bench/bench_dev_p2p
bench_bench_dev_p2p_SOURCES = bench/bench_dev_p2p.cu bench/gpu_span.h
bench_bench_dev_p2p_LDADD = src/libmpix.la $(MPI_LIBS) $(CUDA_LIBS)
bench_bench_dev_p2p_LDFLAGS = -no-install
bench_bench_dev_p2p_LINK = $(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=link $(CXX) $(AM_CXXFLAGS) $(CXXFLAGS) \
	$(bench_bench_dev_p2p_LDFLAGS) $(LDFLAGS) -o $@
endif

# bench_proxy_host: host cost of the device proxy path (mpix/device_proxy.cc)
# against the number of operations in flight, host threads playing the GPU
# threads (MPIX_DEVICE_PROXY_HOSTMEM=1); no GPU needed.
noinst_PROGRAMS += bench/bench_proxy_host
bench_bench_proxy_host_SOURCES = bench/bench_proxy_host.c bench/bench_common.h
bench_bench_proxy_host_CFLAGS = $(MPIX_CFLAGS)
bench_bench_proxy_host_LDADD = src/libmpix.la $(MPI_LIBS) -lpthread
bench_bench_proxy_host_LDFLAGS = -no-install
