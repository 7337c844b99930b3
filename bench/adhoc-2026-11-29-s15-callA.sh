# Session 15, call A (two H200s, one rank per GPU), issue 25: the current
# code's table (16435fa, with 10e24ad's pause between idle polls):
# bench_gpu_suite 1 B - 4 MiB once with staged MPICH and NCCL in the same
# program run, then 8 rounds at 8 B (BENCH_SPLIT=1): how often the rate's
# slow mode still shows; then the whole GPU testlist (sublist stage).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
nproc; lscpu | grep -E "Model name|MHz" | head -3
timeout 200 "$MPIEXEC" -n 2 env MPIX_VERBOSE=0 bench/bench_gpu_suite "$OUT/suite_full.csv" 4194304 \
  >"$OUT/suite_full.txt" 2>&1
echo "-- suite full: exit $?"; cat "$OUT/suite_full.txt"
for round in 1 2 3 4 5 6 7 8; do
  timeout 60 "$MPIEXEC" -n 2 env BENCH_SPLIT=1 MPIX_VERBOSE=0 bench/bench_gpu_suite \
    "$OUT/rate_r$round.csv" 8 8 >"$OUT/rate_r$round.txt" 2>&1
  echo "-- rate round $round: exit $?"; grep -E "^ +8 +mpix|split 8 B, rank . \(" "$OUT/rate_r$round.txt"
done
