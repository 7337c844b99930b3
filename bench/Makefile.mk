# bench_match: matching rate of the engine (src/match) against the reference
# matcher, per mode, depth and order; results in bench/RESULTS.md.
noinst_PROGRAMS += bench/bench_match
bench_bench_match_SOURCES = bench/bench_match.cc
bench_bench_match_CPPFLAGS = -I$(top_srcdir)/src -I$(top_srcdir)/test/unit
bench_bench_match_CXXFLAGS = $(MPIX_CXXFLAGS) -O3
bench_bench_match_LDADD = src/match/libmpixmatch.la

# Point-to-point benchmarks: plain MPI programs (no -lmpix) run natively and
# under LD_PRELOAD=libmpix.so by bench/run_p2p_benchmarks.sh.
noinst_PROGRAMS += bench/bench_matching_rate bench/bench_pingpong bench/bench_unordered_region
MPIX_BENCH_MPI_LIBS = $(MPI_LIBS) -ldl
bench_bench_matching_rate_SOURCES = bench/bench_matching_rate.c
bench_bench_matching_rate_CFLAGS = $(MPIX_CFLAGS)
bench_bench_matching_rate_LDADD = $(MPIX_BENCH_MPI_LIBS) -lm
bench_bench_pingpong_SOURCES = bench/bench_pingpong.c
bench_bench_pingpong_CFLAGS = $(MPIX_CFLAGS)
bench_bench_pingpong_LDADD = $(MPIX_BENCH_MPI_LIBS) -lm
bench_bench_unordered_region_SOURCES = bench/bench_unordered_region.c
bench_bench_unordered_region_CFLAGS = $(MPIX_CFLAGS)
bench_bench_unordered_region_LDADD = $(MPIX_BENCH_MPI_LIBS) -lm
EXTRA_DIST += bench/README.md bench/run_p2p_benchmarks.sh
