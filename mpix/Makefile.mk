# The MPIX API: queries, no-wildcard communicators, unordered regions, streams.
src_libmpixcore_la_SOURCES += mpix/query.cc mpix/nowildcard.cc
