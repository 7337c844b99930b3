# GPU code. With CUDA: .cu files compiled by nvcc into the core library.
# Without: stubs that report no GPU.
if HAVE_CUDA
noinst_LTLIBRARIES += device/libmpixdevice.la
device_libmpixdevice_la_SOURCES = device/gpu_query.cu device/gpu.h \
	device/copy.cu device/copy.h device/cuda_check.h device/ipc.h device/device_scope.h \
	device/kernel_copy.cu device/kernel_copy.h device/kernel_copy_desc.h
src_libmpixcore_la_LIBADD += device/libmpixdevice.la
else
src_libmpixcore_la_SOURCES += device/gpu_none.cc device/gpu.h \
	device/copy_none.cc device/copy.h device/ipc.h \
	device/kernel_copy_none.cc device/kernel_copy.h
endif
# Where a buffer lives: host C++ in both builds (the driver is dlopen'ed).
src_libmpixcore_la_SOURCES += device/memtype.cc device/memtype.h device/status.h
EXTRA_DIST += device/gpu_none.cc device/gpu_query.cu device/copy_none.cc device/copy.cu \
	device/kernel_copy.cu device/kernel_copy_none.cc
# Stream triggers: the words a CUDA stream and the progress thread share for
# stream-triggered operations (mpix/enqueue.cc); the stub refuses CUDA streams.
if HAVE_CUDA
device_libmpixdevice_la_SOURCES += device/stream_trigger.cu device/stream_trigger.h
else
src_libmpixcore_la_SOURCES += device/stream_trigger_none.cc device/stream_trigger.h
endif
EXTRA_DIST += device/stream_trigger.cu device/stream_trigger_none.cc
# Batch matching on the GPU (match_batch_fifo/unordered of match/batch.h
# on device); the stub answers "no CUDA" so that the engine stays on the CPU.
if HAVE_CUDA
device_libmpixdevice_la_SOURCES += device/match_gpu.cu device/match_gpu.h
else
src_libmpixcore_la_SOURCES += device/match_gpu_none.cc device/match_gpu.h
endif
EXTRA_DIST += device/match_gpu.cu device/match_gpu_none.cc
# Device-callable send/recv: the mailboxes behind MPIX_Device_comm.
if HAVE_CUDA
device_libmpixdevice_la_SOURCES += device/devcomm.cu device/devcomm.h
else
src_libmpixcore_la_SOURCES += device/devcomm_none.cc device/devcomm.h
endif
EXTRA_DIST += device/devcomm.cu device/devcomm_none.cc
# Enqueued send/recv run by kernels on the application's stream (IPC
# device communicators); the stub leaves stream communicators host-driven.
if HAVE_CUDA
device_libmpixdevice_la_SOURCES += device/stream_exec.cu device/stream_exec.h
else
src_libmpixcore_la_SOURCES += device/stream_exec_none.cc device/stream_exec.h
endif
EXTRA_DIST += device/stream_exec.cu device/stream_exec_none.cc
