# Session 21, call 2 (nvidia-h200: one GPU, a 16-core host): what the
# per-message memory-type query costs a host message on a GPU machine.
#   1. A micro-benchmark of cuPointerGetAttributes (the 3 attributes
#      device::device_of asks) on a malloc'd host pointer and on a
#      cuMemAlloc'd one: before cuInit, and with a context current.
#   2. bench_pingpong at 8 B, native MPICH against mpix with the GPU support
#      on (default: the query on every send and receive) and MPIX_GPU=off
#      (no query), 5 alternating rounds. The pingpong never touches CUDA,
#      so its queries are the "before cuInit" kind unless mpix initialised
#      CUDA itself.
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
host_bench_tools
mylib=$lib
nproc; uptime
cat >"$OUT/ptrattr.c" <<'SRC'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef int (*attrs_fn)(unsigned, int *, void **, unsigned long long);
typedef int (*init_fn)(unsigned);
typedef int (*devget_fn)(int *, int);
typedef int (*ctxretain_fn)(void **, int);
typedef int (*ctxset_fn)(void *);
typedef int (*alloc_fn)(unsigned long long *, size_t);
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static attrs_fn get;
static void bench(const char *what, void *p) {
  unsigned long long type = 0, managed = 0, ordinal = 0;
  int attrs[] = {2 /* MEMORY_TYPE */, 8 /* IS_MANAGED */, 9 /* DEVICE_ORDINAL */};
  void *data[] = {&type, &managed, &ordinal};
  const int n = 2000000;
  int rc = 0;
  double t0 = now();
  for (int i = 0; i < n; i++) rc |= get(3, attrs, data, (unsigned long long)p);
  double t = now() - t0;
  printf("%-40s %8.1f ns/call  rc %d type %llu\n", what, t / n * 1e9, rc, type);
}
int main(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) { printf("no libcuda\n"); return 1; }
  get = (attrs_fn)dlsym(h, "cuPointerGetAttributes");
  char *host = malloc(4096);
  bench("host pointer, before cuInit", host);
  ((init_fn)dlsym(h, "cuInit"))(0);
  bench("host pointer, after cuInit, no context", host);
  int dev = 0; void *ctx = NULL;
  ((devget_fn)dlsym(h, "cuDeviceGet"))(&dev, 0);
  ((ctxretain_fn)dlsym(h, "cuDevicePrimaryCtxRetain"))(&ctx, dev);
  ((ctxset_fn)dlsym(h, "cuCtxSetCurrent"))(ctx);
  bench("host pointer, context current", host);
  unsigned long long d = 0;
  ((alloc_fn)dlsym(h, "cuMemAlloc_v2"))(&d, 1 << 20);
  bench("device pointer, context current", (void *)d);
  bench("host pointer again", host);
  return 0;
}
SRC
gcc -O2 -o "$OUT/ptrattr" "$OUT/ptrattr.c" -ldl && "$OUT/ptrattr"
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_pingpong" bench/bench_pingpong.c -ldl || echo "bench_pingpong: build failed"
for round in 1 2 3 4 5; do
  for who in native gpuon gpuoff; do
    pre=""
    [ $who = gpuon ] && pre="-genv LD_PRELOAD $mylib"
    [ $who = gpuoff ] && pre="-genv LD_PRELOAD $mylib -genv MPIX_GPU off"
    timeout 60 "$MPIEXEC" -n 2 -bind-to core $pre "$OUT/bench_pingpong" -m 8 -M 8 -r 5 -s -l $who \
      -o "$OUT/pp_${who}_r$round.csv" >"$OUT/pp_${who}_r$round.txt" 2>&1
    echo "-- pingpong $who round $round: exit $? $(grep -E '^ +8 |stream split' "$OUT/pp_${who}_r$round.txt" | tr '\n' ' ')"
  done
done
