# CPU matching engine, namespace mpix::match (design: src/match/README.md).
# Depends on nothing MPI-specific; unit tests in test/unit/test_match_*.cc.
MPIX_MATCH_ENGINE_SOURCES = \
	src/match/batch.cc src/match/batch.h \
	src/match/exact_queues.h \
	src/match/huge_page_array.h \
	src/match/intrusive_list.h \
	src/match/key.h \
	src/match/key_table.cc src/match/key_table.h \
	src/match/matcher.cc src/match/matcher.h src/match/matcher_types.h \
	src/match/node_pool.cc src/match/node_pool.h \
	src/match/queue_core.cc src/match/queue_core.h \
	src/match/wildcard_queues.cc src/match/wildcard_queues.h

noinst_LTLIBRARIES += src/match/libmpixmatch.la
src_match_libmpixmatch_la_SOURCES = $(MPIX_MATCH_ENGINE_SOURCES)
src_match_libmpixmatch_la_CPPFLAGS = -I$(top_srcdir)/src
src_match_libmpixmatch_la_CXXFLAGS = $(MPIX_CXXFLAGS)
EXTRA_DIST += src/match/README.md
