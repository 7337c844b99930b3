# Session 13, call 5 (one H200, two ranks under MPS), issue 25: whether the
# two modes of the 8 B device message rate are the ranks' placement on the
# host's cores: bench_gpu_suite at 8 B only, BENCH_SPLIT=1, four alternating
# rounds unbound (the suite's default) and with mpiexec -bind-to core; then
# the GPU testlist on the final commit.
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
mps_start
for round in 1 2 3 4; do
  for bind in none core; do
    timeout 60 "$MPIEXEC" -n 2 -bind-to $bind env BENCH_SPLIT=1 MPIX_VERBOSE=0 bench/bench_gpu_suite \
      "$OUT/rate_${bind}_r$round.csv" 8 8 >"$OUT/rate_${bind}_r$round.txt" 2>&1
    echo "-- bind $bind round $round: exit $?"; grep -E "^ +8 +mpix|split 8 B" "$OUT/rate_${bind}_r$round.txt"
  done
done
