# The progress engine: operations in flight on the transport underneath.
src_libmpixcore_la_SOURCES += progress/inflight.cc progress/inflight.h
# The engine's lock (one atomic exchange to take, a store to let go; biased
# to the application below MPI_THREAD_MULTIPLE: a plain store).
src_libmpixcore_la_SOURCES += progress/engine_mutex.cc progress/engine_mutex.h
# Process-lifetime registries that outlive exit() (threads may still poll them).
src_libmpixcore_la_SOURCES += progress/immortal.h progress/sanitizers.h
# The progress thread: started by the first GPU stream, parked when idle.
src_libmpixcore_la_SOURCES += progress/thread.cc progress/thread.h
# Datatype layouts, packing (the protocol and the transports).
src_libmpixcore_la_SOURCES += progress/datatype.cc progress/datatype.h
# Transports under the point-to-point protocol: the shared core here
# (selection and the operations table, wire headers, what the message
# transports share, the checking link, single copy and the shared-memory
# rings within a node), one folder per transport beside it.
src_libmpixcore_la_SOURCES += progress/transport.cc progress/transport.h progress/transport_kind.h \
	progress/wire.cc progress/wire.h \
	progress/link_core.cc progress/link_core.h \
	progress/check_link.cc progress/check_link.h \
	progress/single_copy.cc progress/single_copy.h \
	progress/shm_ring.cc progress/shm_ring.h
# pmpi: the MPI library underneath, on shadow communicators.
src_libmpixcore_la_SOURCES += progress/pmpi/pmpi_link.cc progress/pmpi/pmpi_link.h
# ucx: UCP active messages.
src_libmpixcore_la_SOURCES += progress/ucx/ucx.h
if HAVE_UCX
src_libmpixcore_la_SOURCES += progress/ucx/ucx.cc progress/ucx/ucx_worker.cc progress/ucx/ucx_worker.h \
	progress/ucx/ucx_link.cc progress/ucx/ucx_link.h progress/ucx/ucx_wire.cc progress/ucx/ucx_wire.h
else
src_libmpixcore_la_SOURCES += progress/ucx/ucx_none.cc
endif
src_libmpixcore_la_LIBADD += $(UCX_LIBS)
# ofi: libfabric messages and reads.
src_libmpixcore_la_SOURCES += progress/ofi/ofi.h
if HAVE_OFI
src_libmpixcore_la_SOURCES += progress/ofi/ofi.cc progress/ofi/ofi_fabric.cc progress/ofi/ofi_fabric.h \
	progress/ofi/ofi_link.cc progress/ofi/ofi_link.h progress/ofi/ofi_wire.cc progress/ofi/ofi_wire.h \
	progress/ofi/ofi_provider.cc progress/ofi/ofi_provider.h
else
src_libmpixcore_la_SOURCES += progress/ofi/ofi_none.cc
endif
src_libmpixcore_la_LIBADD += $(OFI_LIBS)
