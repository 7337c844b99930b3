# GPU code. With CUDA: .cu files compiled by nvcc into the core library.
# Without: stubs that report no GPU.
if HAVE_CUDA
noinst_LTLIBRARIES += device/libmpixdevice.la
device_libmpixdevice_la_SOURCES = device/gpu_query.cu device/gpu.h
src_libmpixcore_la_LIBADD += device/libmpixdevice.la
else
src_libmpixcore_la_SOURCES += device/gpu_none.cc device/gpu.h
endif
EXTRA_DIST += device/gpu_none.cc device/gpu_query.cu
