# The progress engine: operations in flight on the transport underneath.
src_libmpixcore_la_SOURCES += progress/inflight.cc progress/inflight.h
