# Session 15, call E (one H200, two ranks under MPS), issue 25: the final
# code's rows on one GPU (4ec6e92, bundle 6ecc459): bench_gpu_suite 1 B -
# 4 MiB once (BENCH_SPLIT=1), then 8 B three more times; then the whole
# GPU testlist (run.sh's sublist stage, after this).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
mps_start
timeout 200 "$MPIEXEC" -n 2 env BENCH_SPLIT=1 MPIX_VERBOSE=0 bench/bench_gpu_suite "$OUT/suite_mps.csv" 4194304 \
  >"$OUT/suite_mps.txt" 2>&1
echo "-- suite mps: exit $?"; cat "$OUT/suite_mps.txt"
for round in 1 2 3; do
  timeout 60 "$MPIEXEC" -n 2 env BENCH_SPLIT=1 MPIX_VERBOSE=1 bench/bench_gpu_suite \
    "$OUT/rate_mps_r$round.csv" 8 8 >"$OUT/rate_mps_r$round.txt" 2>&1
  echo "-- rate mps round $round: exit $?"
  grep -E "^ +8 +mpix|split 8 B, rank . \(|found waiting" "$OUT/rate_mps_r$round.txt" |
    sed -E 's/.*(rank [01]).*rendezvous received/\1: rendezvous received/'
done
