# Session 24, call 3 (nvidia-h200): why the host-driven stream path's tests
# failed with the host ranges on (call 2: stream_enqueue's three
# MPIX_STREAM_PATH=host entries; no device data was staged, so device
# buffers were taken for host memory). A probe program prints where
# cuMemAlloc puts device memory against the ranges libmpix took
# (MPIX_VERBOSE=2 prints them) and the process's maps; then the failing
# entries with MPIX_GPU_HOST_RANGES=off and on, and one run with the ranges
# printed.
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
host_bench_tools
cat >"$OUT/probe.c" <<'SRC'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static int seg(struct dl_phdr_info *i, size_t s, void *d) {
  (void)s; (void)d;
  printf("first object '%s' base %#lx\n", i->dlpi_name, (unsigned long)i->dlpi_addr);
  for (int k = 0; k < i->dlpi_phnum; k++)
    if (i->dlpi_phdr[k].p_type == PT_LOAD)
      printf("  PT_LOAD flags %x %#lx + %#lx\n", i->dlpi_phdr[k].p_flags,
             (unsigned long)(i->dlpi_addr + i->dlpi_phdr[k].p_vaddr), (unsigned long)i->dlpi_phdr[k].p_memsz);
  return 1;
}
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  int (*init)(unsigned) = dlsym(h, "cuInit");
  int (*get)(int *, int) = dlsym(h, "cuDeviceGet");
  int (*retain)(void **, int) = dlsym(h, "cuDevicePrimaryCtxRetain");
  int (*set)(void *) = dlsym(h, "cuCtxSetCurrent");
  int (*alloc)(unsigned long long *, size_t) = dlsym(h, "cuMemAlloc_v2");
  int dev; void *ctx; unsigned long long p[3] = {0};
  size_t sz[3] = {4096, 1 << 20, 64 << 20};
  printf("init %d\n", init(0) | get(&dev, 0) | retain(&ctx, dev) | set(ctx));
  for (int i = 0; i < 3; i++) printf("cuMemAlloc %zu: rc %d at %#llx\n", sz[i], alloc(&p[i], sz[i]), p[i]);
  int here;
  printf("sbrk(0) %p, a stack address %p\n", sbrk(0), (void *)&here);
  dl_iterate_phdr(seg, NULL);
  FILE *f = fopen("/proc/self/maps", "r");
  char l[1024];
  while (fgets(l, sizeof l, f)) {
    unsigned long lo, hi;
    int show = strstr(l, "[heap]") || strstr(l, "[stack]");
    if (sscanf(l, "%lx-%lx", &lo, &hi) == 2)
      for (int i = 0; i < 3; i++) show |= p[i] >= lo && p[i] < hi;
    if (show) fputs(l, stdout);
  }
  fclose(f);
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
SRC
"$MP/mpicc" -O1 -o "$OUT/probe" "$OUT/probe.c" -ldl && \
  timeout 60 "$MPIEXEC" -n 1 env LD_PRELOAD="$lib" MPIX_VERBOSE=2 "$OUT/probe" 2>&1 | grep -v "^\[mpix\] MPIX_" | head -60
echo "-- stream_enqueue, host path, ranges printed"
timeout 90 "$MPIEXEC" -n 2 env MPIX_STREAM_PATH=host MPIX_VERBOSE=2 STREAM_TEST_SMALL=1 test/gpu/stream_enqueue 2>&1 |
  grep -v "^\[mpix\] MPIX_" | tail -n 20
for hr in off on; do
  export MPIX_GPU_HOST_RANGES=$hr
  echo "-- stream_enqueue entries with MPIX_GPU_HOST_RANGES=$hr"
  run_sublist "enq_$hr" "stream_enqueue" 150
done
unset MPIX_GPU_HOST_RANGES
