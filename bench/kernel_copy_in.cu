// device/kernel_copy.cu built into bench_gpu_copy on its own (the library
// hides it): automake cannot build one source both with and without libtool.
#include "device/kernel_copy.cu"
