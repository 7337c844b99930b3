# The MPIX API: queries, no-wildcard communicators, unordered regions, streams.
src_libmpixcore_la_SOURCES += mpix/query.cc mpix/nowildcard.cc
# Streams and *_enqueue operations (host streams run at once; GPU streams
# through the progress thread and device/stream_trigger).
src_libmpixcore_la_SOURCES += mpix/stream.cc mpix/stream.h mpix/enqueue.cc mpix/enqueue.h \
	mpix/enqueue_kernel.cc mpix/enqueue_kernel.h mpix/key_numbers.h \
	mpix/stream_pull.cc mpix/stream_pull.h
# Device-callable send/recv: the host side (MPIX_Comm_device_handle).
src_libmpixcore_la_SOURCES += mpix/device_handle.cc mpix/device_handle.h
src_libmpixcore_la_SOURCES += mpix/device_proxy.cc mpix/device_proxy.h mpix/proxy_desc.cc mpix/proxy_desc.h
