# The progress engine: operations in flight on the transport underneath.
src_libmpixcore_la_SOURCES += progress/inflight.cc progress/inflight.h
# Process-lifetime registries that outlive exit() (threads may still poll them).
src_libmpixcore_la_SOURCES += progress/immortal.h
# The progress thread: started by the first GPU stream, parked when idle.
src_libmpixcore_la_SOURCES += progress/thread.cc progress/thread.h
# Datatype layouts, packing (the protocol and the transports).
src_libmpixcore_la_SOURCES += progress/datatype.cc progress/datatype.h
# Transports under the point-to-point protocol: selection, pmpi, ucx, ofi.
src_libmpixcore_la_SOURCES += progress/transport.cc progress/transport.h \
	progress/wire.cc progress/wire.h \
	progress/pmpi_link.cc progress/pmpi_link.h progress/ucx.h progress/transport_kind.h \
	progress/link_core.cc progress/link_core.h \
	progress/check_link.cc progress/check_link.h \
	progress/single_copy.cc progress/single_copy.h \
	progress/shm_ring.cc progress/shm_ring.h
if HAVE_UCX
src_libmpixcore_la_SOURCES += progress/ucx.cc progress/ucx_worker.cc progress/ucx_worker.h \
	progress/ucx_link.cc progress/ucx_link.h progress/ucx_wire.cc progress/ucx_wire.h
else
src_libmpixcore_la_SOURCES += progress/ucx_none.cc
endif
src_libmpixcore_la_LIBADD += $(UCX_LIBS)
src_libmpixcore_la_SOURCES += progress/ofi.h
if HAVE_OFI
src_libmpixcore_la_SOURCES += progress/ofi.cc progress/ofi_fabric.cc progress/ofi_fabric.h \
	progress/ofi_link.cc progress/ofi_link.h progress/ofi_wire.cc progress/ofi_wire.h \
	progress/ofi_provider.cc progress/ofi_provider.h
else
src_libmpixcore_la_SOURCES += progress/ofi_none.cc
endif
src_libmpixcore_la_LIBADD += $(OFI_LIBS)
