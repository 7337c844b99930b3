# The progress engine: operations in flight on the transport underneath.
src_libmpixcore_la_SOURCES += progress/inflight.cc progress/inflight.h
# The progress thread: started by the first GPU stream, parked when idle.
src_libmpixcore_la_SOURCES += progress/thread.cc progress/thread.h
