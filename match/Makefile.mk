# CPU matching engine, namespace mpix::match (design: match/README.md).
# Depends on nothing MPI-specific; unit tests in test/unit/test_match_*.cc.
MPIX_MATCH_ENGINE_SOURCES = \
	match/batch.cc match/batch.h \
	match/cpu_relax.h \
	match/exact_queues.h \
	match/huge_page_array.h \
	match/intrusive_list.h \
	match/key.h \
	match/key_table.cc match/key_table.h \
	match/matcher.cc match/matcher.h match/matcher_types.h \
	match/node_pool.cc match/node_pool.h \
	match/queue_core.cc match/queue_core.h \
	match/sharded_matcher.cc match/sharded_matcher.h \
	match/wildcard_queues.cc match/wildcard_queues.h

noinst_LTLIBRARIES += match/libmpixmatch.la
match_libmpixmatch_la_SOURCES = $(MPIX_MATCH_ENGINE_SOURCES)
match_libmpixmatch_la_CPPFLAGS = -I$(top_srcdir)
match_libmpixmatch_la_CXXFLAGS = $(MPIX_CXXFLAGS)
EXTRA_DIST += match/README.md
