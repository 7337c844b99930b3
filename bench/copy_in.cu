// device/copy.cu built into bench_gpu_copy on its own (the resident copy
// kernel falls back to it): see kernel_copy_in.cu.
#include "device/copy.cu"
