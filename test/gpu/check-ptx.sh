#!/usr/bin/env bash
# The device API is header-only, so user kernels compile it with their own
# nvcc. nvcc 13.0 miscompiled kernels that pass their by-value handle to
# many inlined device calls: it took the parameter's address in param space
# (cvta.param) and then read it as local memory (cvta.to.local), an invalid
# __local__ read on the GPU (see MPIXD_OF in include/mpix_device/ops.cuh).
# This compiles the programs that use the device API to PTX and fails if
# any local-space conversion is applied to a param-space address. Runs
# where nvcc is (CI included): no GPU needed.
# runtests-timeout: 600
set -u
nvcc=${NVCC:-}
[ -n "$nvcc" ] && command -v "$nvcc" >/dev/null || { echo "skipped: no nvcc (built without CUDA)"; exit 77; }
src=${MPIX_SRCDIR:?MPIX_SRCDIR not set}
build=${MPIX_BUILDDIR:-$src}
tmp=$(mktemp -d)
pids=()
# The compilers go with the script (the runner's time limit kills only it).
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 143' TERM INT
status=0
# The stream kernels go in their timeline build (-DMPIX_STAGE_TRACE,
# bench/stage_timeline.py), which no other build compiles.
files="test/gpu/dev_p2p.cu bench/bench_dev_p2p.cu device/stream_exec.cu"
extra_for() { [ "$1" = device/stream_exec.cu ] && echo "-DMPIX_STAGE_TRACE"; }
# All at once: each is one to two minutes of nvcc on a 2-core CI machine,
# and one after the other they ran into the test runner's time limit.
for f in $files; do
  # shellcheck disable=SC2086
  "$nvcc" ${NVCC_ARCHFLAGS:-} -std=c++17 -O2 -ptx -I"$src" -I"$src/include" -I"$build/include" -I"$build" \
    ${MPI_CPPFLAGS:-} $(extra_for "$f") "$src/$f" -o "$tmp/$(basename "$f" .cu).ptx" >"$tmp/$(basename "$f" .cu).log" 2>&1 &
  pids+=($!)
done
k=0
for f in $files; do
  ptx=$tmp/$(basename "$f" .cu).ptx
  wait "${pids[$k]}"
  rc=$?
  k=$((k + 1))
  if [ $rc != 0 ]; then
    echo "$f: nvcc -ptx failed"; cat "$tmp/$(basename "$f" .cu).log"; status=1; continue
  fi
  # A register set by cvta.param and later converted by cvta.to.local.
  bad=$(awk '/cvta\.param/ { gsub(/[,;]/, ""); p[$2] = 1 }
             /cvta\.to\.local/ { gsub(/[,;]/, ""); if ($3 in p) print NR": "$0 }' "$ptx")
  if [ -n "$bad" ]; then
    echo "$f: a param-space address read as local memory:"; echo "$bad" | head -n 5; status=1
  else
    echo "$f: $(grep -c '^\.entry\|^\.visible \.entry' "$ptx") kernels, no param address read as local"
  fi
done
exit $status
