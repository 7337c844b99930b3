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
MPIX_TESTLISTS += test/gpu/testlist
else
MPIX_TEST_SKIPS += --skip test/gpu "built without CUDA"
endif
EXTRA_DIST += test/gpu/testlist test/gpu/run.sh
