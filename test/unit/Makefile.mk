# GoogleTest unit tests of the matching engine (match/), plain and under
# AddressSanitizer/UndefinedBehaviorSanitizer (the engine sources compiled
# into the test, not taken from the library). MPIX_TEST_SCALE=<factor> scales
# the randomised tests (default 1: millions of operations).
MPIX_MATCH_TEST_SOURCES = \
	test/unit/reference_matcher.h \
	test/unit/test_match_batch.cc \
	test/unit/test_match_differential.cc \
	test/unit/test_match_internals.cc \
	test/unit/test_match_memory.cc \
	test/unit/test_match_rules.cc \
	test/unit/test_match_sharded.cc
# (In a sanitizer build the configured -fsanitize flags instrument them instead.)
if SANITIZED_BUILD
MPIX_MATCH_SANITIZE =
else
MPIX_MATCH_SANITIZE = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
endif

if HAVE_GTEST
check_PROGRAMS += test/unit/test_match
MPIX_UNIT_TESTS += test/unit/test_match
# A sanitizer build instruments test_match already (and TSan cannot be
# combined with ASan).
if !SANITIZED_BUILD
check_PROGRAMS += test/unit/test_match_asan
MPIX_UNIT_TESTS += test/unit/test_match_asan
endif
endif

test_unit_test_match_SOURCES = $(MPIX_MATCH_TEST_SOURCES)
test_unit_test_match_CPPFLAGS = $(GTEST_CPPFLAGS) -I$(top_srcdir)
test_unit_test_match_CXXFLAGS = $(MPIX_CXXFLAGS)
test_unit_test_match_LDADD = match/libmpixmatch.la $(GTEST_LIBS)

test_unit_test_match_asan_SOURCES = $(MPIX_MATCH_TEST_SOURCES) $(MPIX_MATCH_ENGINE_SOURCES)
test_unit_test_match_asan_CPPFLAGS = $(GTEST_CPPFLAGS) -I$(top_srcdir)
test_unit_test_match_asan_CXXFLAGS = $(MPIX_CXXFLAGS) $(MPIX_MATCH_SANITIZE)
test_unit_test_match_asan_LDFLAGS = $(MPIX_MATCH_SANITIZE)
test_unit_test_match_asan_LDADD = $(GTEST_LIBS)

# Host-side logic of the GPU point-to-point paths (chunk plans, IPC cache,
# pinned pool, memory-type detection against a fake driver), under
# AddressSanitizer/UBSan; runs without a GPU.
if HAVE_GTEST
check_PROGRAMS += test/unit/test_gpu_host
MPIX_UNIT_TESTS += test/unit/test_gpu_host
endif
test_unit_test_gpu_host_SOURCES = test/unit/test_gpu_host.cc device/memtype.cc
test_unit_test_gpu_host_CPPFLAGS = $(GTEST_CPPFLAGS) -I$(top_srcdir)
test_unit_test_gpu_host_CXXFLAGS = $(MPIX_CXXFLAGS) $(MPIX_MATCH_SANITIZE)
test_unit_test_gpu_host_LDFLAGS = $(MPIX_MATCH_SANITIZE)
test_unit_test_gpu_host_LDADD = $(GTEST_LIBS) -ldl

# The host ranges under UCX's memory hooks (no sanitizer: it intercepts
# the calls UCX patches).
if HAVE_GTEST
if HAVE_UCX
check_PROGRAMS += test/unit/test_memtype_ucm
MPIX_UNIT_TESTS += test/unit/test_memtype_ucm
endif
test_unit_test_memtype_ucm_SOURCES = test/unit/test_memtype_ucm.cc device/memtype.cc
test_unit_test_memtype_ucm_CPPFLAGS = $(GTEST_CPPFLAGS) $(UCX_CPPFLAGS) -I$(top_srcdir)
test_unit_test_memtype_ucm_CXXFLAGS = $(MPIX_CXXFLAGS)
test_unit_test_memtype_ucm_LDADD = $(GTEST_LIBS) -lucm $(UCX_LIBS) -ldl -lpthread
endif

# The device send/recv queue protocol (include/mpix_device/proto.h, the
# same header kernels use) on host threads; no GPU needed.
if HAVE_GTEST
check_PROGRAMS += test/unit/test_dev_proto
MPIX_UNIT_TESTS += test/unit/test_dev_proto
endif
test_unit_test_dev_proto_SOURCES = test/unit/test_dev_proto.cc
test_unit_test_dev_proto_CPPFLAGS = $(GTEST_CPPFLAGS) -I$(top_srcdir)/include
test_unit_test_dev_proto_CXXFLAGS = $(MPIX_CXXFLAGS) $(MPIX_MATCH_SANITIZE)
test_unit_test_dev_proto_LDFLAGS = $(MPIX_MATCH_SANITIZE)
test_unit_test_dev_proto_LDADD = $(GTEST_LIBS) -lpthread

# The MPIX_* settings: one table of defaults (src/config.cc) that the code
# runs with and README.md documents.
if HAVE_GTEST
check_PROGRAMS += test/unit/test_config
MPIX_UNIT_TESTS += test/unit/test_config
endif
test_unit_test_config_SOURCES = test/unit/test_config.cc src/config.cc
test_unit_test_config_CPPFLAGS = $(GTEST_CPPFLAGS) -I$(top_srcdir) -DMPIX_SRCDIR='"$(abs_top_srcdir)"'
test_unit_test_config_CXXFLAGS = $(MPIX_CXXFLAGS) $(MPIX_MATCH_SANITIZE)
test_unit_test_config_LDFLAGS = $(MPIX_MATCH_SANITIZE)
test_unit_test_config_LDADD = $(GTEST_LIBS)

# Host numbering of GPU-run *_enqueue operations (mpix/key_numbers.h).
if HAVE_GTEST
check_PROGRAMS += test/unit/test_key_numbers
MPIX_UNIT_TESTS += test/unit/test_key_numbers
endif
test_unit_test_key_numbers_SOURCES = test/unit/test_key_numbers.cc
test_unit_test_key_numbers_CPPFLAGS = $(GTEST_CPPFLAGS) -I$(top_srcdir)
test_unit_test_key_numbers_CXXFLAGS = $(MPIX_CXXFLAGS) $(MPIX_MATCH_SANITIZE)
test_unit_test_key_numbers_LDFLAGS = $(MPIX_MATCH_SANITIZE)
test_unit_test_key_numbers_LDADD = $(GTEST_LIBS)

# Every decoder of bytes from a peer or a GPU thread (progress/wire.h,
# progress/ucx/ucx_wire.h, progress/ofi/ofi_wire.h, src/p2p/gpu_wire.h,
# mpix/proxy_desc.h): round trips, truncations and out-of-range fields,
# under ASan/UBSan (an over-read of a truncated buffer is an error).
# test/fuzz fuzzes the same functions.
if HAVE_GTEST
check_PROGRAMS += test/unit/test_decoders
MPIX_UNIT_TESTS += test/unit/test_decoders
endif
test_unit_test_decoders_SOURCES = test/unit/test_decode_wire.cc test/unit/test_decode_gpu.cc \
	test/unit/test_decode_proxy.cc test/unit/test_decode_ofi.cc progress/wire.cc progress/ucx/ucx_wire.cc \
	progress/ofi/ofi_wire.cc src/p2p/gpu_wire.cc mpix/proxy_desc.cc
test_unit_test_decoders_CPPFLAGS = $(GTEST_CPPFLAGS) -I$(top_srcdir) -I$(top_srcdir)/include
test_unit_test_decoders_CXXFLAGS = $(MPIX_CXXFLAGS) $(MPIX_MATCH_SANITIZE)
test_unit_test_decoders_LDFLAGS = $(MPIX_MATCH_SANITIZE)
test_unit_test_decoders_LDADD = $(GTEST_LIBS)

# The libfabric transport's choice of provider (progress/ofi/ofi_provider.h):
# pure, built whether or not libfabric is.
if HAVE_GTEST
check_PROGRAMS += test/unit/test_ofi_provider
MPIX_UNIT_TESTS += test/unit/test_ofi_provider
endif
test_unit_test_ofi_provider_SOURCES = test/unit/test_ofi_provider.cc progress/ofi/ofi_provider.cc
test_unit_test_ofi_provider_CPPFLAGS = $(GTEST_CPPFLAGS) -I$(top_srcdir)
test_unit_test_ofi_provider_CXXFLAGS = $(MPIX_CXXFLAGS)
test_unit_test_ofi_provider_LDADD = $(GTEST_LIBS)

# The UCX and libfabric links' arrival ordering (progress/link_core.h):
# randomized reordering against each sender's sending order.
if HAVE_GTEST
check_PROGRAMS += test/unit/test_in_order
MPIX_UNIT_TESTS += test/unit/test_in_order
endif
test_unit_test_in_order_SOURCES = test/unit/test_in_order.cc
test_unit_test_in_order_CPPFLAGS = $(GTEST_CPPFLAGS) $(MPI_CPPFLAGS) -I$(top_srcdir)
test_unit_test_in_order_CXXFLAGS = $(MPIX_CXXFLAGS) $(MPIX_MATCH_SANITIZE)
test_unit_test_in_order_LDFLAGS = $(MPIX_MATCH_SANITIZE)
test_unit_test_in_order_LDADD = $(GTEST_LIBS)

# The checking link (MPIX_LINK_CHECK=defer) over a fake link: payloads read
# only when forwarded, order kept, completions and counts.
if HAVE_GTEST
check_PROGRAMS += test/unit/test_check_link
MPIX_UNIT_TESTS += test/unit/test_check_link
endif
test_unit_test_check_link_SOURCES = test/unit/test_check_link.cc progress/check_link.cc
test_unit_test_check_link_CPPFLAGS = $(GTEST_CPPFLAGS) $(MPI_CPPFLAGS) -I$(top_srcdir)
test_unit_test_check_link_CXXFLAGS = $(MPIX_CXXFLAGS) $(MPIX_MATCH_SANITIZE)
test_unit_test_check_link_LDFLAGS = $(MPIX_MATCH_SANITIZE)
test_unit_test_check_link_LDADD = $(GTEST_LIBS)

# Cross-memory reads of the single-copy path against a child process
# (memory there, partly there, process gone).
if HAVE_GTEST
check_PROGRAMS += test/unit/test_single_copy
MPIX_UNIT_TESTS += test/unit/test_single_copy
endif
test_unit_test_single_copy_SOURCES = test/unit/test_single_copy.cc progress/single_copy.cc
test_unit_test_single_copy_CPPFLAGS = $(GTEST_CPPFLAGS) $(MPI_CPPFLAGS) -I$(top_srcdir)
test_unit_test_single_copy_CXXFLAGS = $(MPIX_CXXFLAGS) $(MPIX_MATCH_SANITIZE)
test_unit_test_single_copy_LDFLAGS = $(MPIX_MATCH_SANITIZE)
test_unit_test_single_copy_LDADD = $(GTEST_LIBS) $(MPI_LIBS)

# The resident copy kernel's descriptor (device/kernel_copy_desc.h): lap
# tags, inline payloads, half-written lines never taken. No GPU needed.
if HAVE_GTEST
check_PROGRAMS += test/unit/test_kernel_copy_desc
MPIX_UNIT_TESTS += test/unit/test_kernel_copy_desc
endif
test_unit_test_kernel_copy_desc_SOURCES = test/unit/test_kernel_copy_desc.cc device/kernel_copy_desc.h
test_unit_test_kernel_copy_desc_CPPFLAGS = $(GTEST_CPPFLAGS) -I$(top_srcdir)
test_unit_test_kernel_copy_desc_CXXFLAGS = $(MPIX_CXXFLAGS) $(MPIX_MATCH_SANITIZE)
test_unit_test_kernel_copy_desc_LDFLAGS = $(MPIX_MATCH_SANITIZE)
test_unit_test_kernel_copy_desc_LDADD = $(GTEST_LIBS)

# The shared-memory rings of the transports' fast lane within a node
# (issue 27): between threads and between processes.
if HAVE_GTEST
check_PROGRAMS += test/unit/test_shm_ring
MPIX_UNIT_TESTS += test/unit/test_shm_ring
endif
test_unit_test_shm_ring_SOURCES = test/unit/test_shm_ring.cc progress/shm_ring.cc progress/single_copy.cc
test_unit_test_shm_ring_CPPFLAGS = $(GTEST_CPPFLAGS) $(MPI_CPPFLAGS) -I$(top_srcdir)
test_unit_test_shm_ring_CXXFLAGS = $(MPIX_CXXFLAGS) $(MPIX_MATCH_SANITIZE)
test_unit_test_shm_ring_LDFLAGS = $(MPIX_MATCH_SANITIZE) -pthread
test_unit_test_shm_ring_LDADD = $(GTEST_LIBS) $(MPI_LIBS)

# The engine's test-and-set lock (issue 27): exclusion under contention,
# try_lock, a long wait. Under TSan in the sanitizer build.
if HAVE_GTEST
check_PROGRAMS += test/unit/test_engine_mutex
MPIX_UNIT_TESTS += test/unit/test_engine_mutex
endif
test_unit_test_engine_mutex_SOURCES = test/unit/test_engine_mutex.cc progress/engine_mutex.cc
test_unit_test_engine_mutex_CPPFLAGS = $(GTEST_CPPFLAGS) -I$(top_srcdir)
test_unit_test_engine_mutex_CXXFLAGS = $(MPIX_CXXFLAGS) $(MPIX_MATCH_SANITIZE)
test_unit_test_engine_mutex_LDFLAGS = $(MPIX_MATCH_SANITIZE) -pthread
test_unit_test_engine_mutex_LDADD = $(GTEST_LIBS)
