# Session 17, call 5 (two H200s, one rank per GPU), issue 26: the 2D Jacobi
# halo exchange (bench_jacobi, NCCL beside it) on the session's final build
# (5097b98), with the pull bound at its new default (8193) and at the old
# one (16385, MPIX_STREAM_PULL_MIN), 2 alternating rounds; local grids 256,
# 1024, 2048 (16 KiB halos: pulled with the new bound) and 4096.
# Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
for round in 1 2; do
  for pull in 8193 16385; do
    MPIX_STREAM_PULL_MIN=$pull timeout 120 "$MPIEXEC" -n 2 bench/bench_jacobi -s 256,1024,2048,4096 \
      >"$OUT/jacobi_pull${pull}_r$round.txt" 2>&1
    echo "-- bench_jacobi, MPIX_STREAM_PULL_MIN=$pull, round $round: exit $?"
    grep -vE "^csv," "$OUT/jacobi_pull${pull}_r$round.txt" | tail -n 8
  done
done
