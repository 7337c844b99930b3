#!/usr/bin/env bash
# Scaling run of issue 8 on every GPU of one host (one rank per GPU), after
# the build (test/gpu/run.sh scaling calls this with its MPICH):
#
#   1. all pairs of GPUs: device-buffer MPI_Send/Recv ping-pong through mpix
#      against staged MPICH and NCCL (bench_gpu_p2p, 8 B .. 16 MiB);
#   2. Jacobi halo exchange, weak scaling over 1, 2, 4, 8 ranks (fixed N x N
#      per rank): host-synchronised vs stream-triggered vs overlap vs NCCL;
#   3. device-initiated ping-pong and message rate between GPU 0 and every
#      other GPU (bench_dev_p2p; an all-to-all program is not written yet);
#   4. unordered-region matching at 8 ranks, GPU batch matching forced on
#      (MPIX_GPU_MATCH_THRESHOLD=1) and off, under LD_PRELOAD=libmpix.so.
#
# Usage: bench/run_scaling.sh -o OUTDIR [-e MPIEXEC] [-g NGPUS]
# Never NVLink multicast on shared machines (device README).
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1
out=scaling-out mpiexec=${MPIEXEC:-mpiexec} ngpu=
while getopts "o:e:g:" opt; do
  case $opt in
    o) out=$OPTARG ;;
    e) mpiexec=$OPTARG ;;
    g) ngpu=$OPTARG ;;
    *) echo "usage: $0 -o OUTDIR [-e MPIEXEC] [-g NGPUS]" >&2; exit 2 ;;
  esac
done
[ -n "$ngpu" ] || ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
lib=$here/../src/.libs/libmpix.so
fail=0
run() {  # name, then the command; output kept in $out/name.txt
  local name=$1; shift
  echo "== $name: $*"
  if ! timeout 300 "$@" >"$out/$name.txt" 2>&1; then echo "   FAILED (see $name.txt)"; fail=1; fi
  tail -n 30 "$out/$name.txt"
}

if [ "$ngpu" -lt 2 ]; then
  echo "run_scaling: $ngpu GPU(s): the GPU parts need at least 2 (skipped)"
else
  for ((i = 0; i < ngpu; i++)); do
    for ((j = i + 1; j < ngpu; j++)); do
      CUDA_VISIBLE_DEVICES=$i,$j run "pair-$i-$j" "$mpiexec" -n 2 "$here/bench_gpu_p2p" "$out/pair-$i-$j.csv" 16777216
    done
  done
  {
    printf '%-6s %14s %14s %14s %16s %16s %16s\n' pair "mpix 8B us" "staged 8B us" "nccl 8B us" "mpix 16M GB/s" \
      "staged 16M GB/s" "nccl 16M GB/s"
    for f in "$out"/pair-*.txt; do
      p=$(basename "$f" .txt)
      awk -v p="${p#pair-}" '$1 == 8 { s = $2 " " $4 " " ($6 == "" ? "n/a" : $6) }
        $1 == 16777216 { b = $3 " " $5 " " ($7 == "" ? "n/a" : $7) }
        END { split(s, a, " "); split(b, c, " ");
              printf "%-6s %14s %14s %14s %16s %16s %16s\n", p, a[1], a[2], a[3], c[1], c[2], c[3] }' "$f"
    done
  } | tee "$out/pairs-summary.txt"
  for ((r = 1; r <= ngpu; r *= 2)); do
    run "jacobi-$r" "$mpiexec" -n $r "$here/bench_jacobi" -s 1024,4096
  done
  for ((j = 1; j < ngpu; j++)); do
    CUDA_VISIBLE_DEVICES=0,$j MPIX_DEVICE_CHANNELS=128 run "dev-0-$j" "$mpiexec" -n 2 "$here/bench_dev_p2p" \
      "$out/dev-0-$j.csv"
  done
fi
for thr in 1 0; do
  MPIX_GPU_MATCH_THRESHOLD=$thr MPIX_VERBOSE=1 run "region-8-gpu$thr" "$mpiexec" -n 8 \
    env LD_PRELOAD="$lib" "$here/bench_unordered_region" -m 64 -n 4096 -r 3 -V region -s random -y \
    -o "$out/region-8-gpu$thr.csv" -l "gpu-threshold-$thr"
done
exit $fail
