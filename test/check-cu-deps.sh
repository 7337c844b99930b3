#!/usr/bin/env bash
# Every .cu file nvcc compiles must have its .Pd (the headers it read) in
# Makefile.am's MPIX_CU_DEPS: automake does not track nvcc's dependencies,
# and a missing entry leaves that object built against old headers (a
# changed MPIX_Device_comm then breaks it silently: dev_reuse, 2026-11-27).
set -u
src=${MPIX_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
deps=$(sed -n '/^MPIX_CU_DEPS =/,/^[^\t]*[^\\]$/p' "$src/Makefile.am" | tr -d '\\' | tr ' \t' '\n\n' | grep '\.Pd$')
n=0 missing=0
# bench_nvshmem.cu is built on the GPU machine against its NVSHMEM, not here.
for f in $(cd "$src" && ls bench/*.cu device/*.cu test/gpu/*.cu | grep -v bench_nvshmem); do
  n=$((n + 1))
  grep -qx "${f%.cu}.Pd" <<<"$deps" || { echo "not in MPIX_CU_DEPS (Makefile.am): ${f%.cu}.Pd"; missing=$((missing + 1)); }
done
[ "$n" -gt 10 ] || { echo "found only $n .cu files (layout changed?)"; exit 1; }
[ "$missing" = 0 ] || exit 1
echo "all $n .cu files have their dependency file listed"
