# Session 15, call D (two H200s, one rank per GPU), issue 25: the final
# code (4ec6e92, bundle 6ecc459): compute-sanitizer memcheck of
# p2p_kernel_copy on 2 ranks (the copy post lost its full fence), 4 more
# rounds of the 8 B rate (BENCH_SPLIT=1, MPIX_VERBOSE=1), then the whole
# GPU testlist (run.sh's sublist stage, after this).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
nproc; lscpu | grep -E "Model name" | head -1
if timeout 240 "$MPIEXEC" -n 2 compute-sanitizer --tool memcheck --error-exitcode 9 test/gpu/p2p_kernel_copy \
  >"$OUT/sanitizer-p2p_kernel_copy.log" 2>&1; then
  echo "memcheck clean (2 ranks): p2p_kernel_copy"
else
  echo "memcheck FAILED (2 ranks): p2p_kernel_copy"; tail -n 30 "$OUT/sanitizer-p2p_kernel_copy.log"
fi
for round in 1 2 3 4; do
  timeout 60 "$MPIEXEC" -n 2 env BENCH_SPLIT=1 MPIX_VERBOSE=1 bench/bench_gpu_suite \
    "$OUT/rate_r$round.csv" 8 8 >"$OUT/rate_r$round.txt" 2>&1
  echo "-- rate round $round: exit $?"
  grep -E "^ +8 +mpix|split 8 B, rank . \(|found waiting" "$OUT/rate_r$round.txt" |
    sed -E 's/.*(rank [01]).*rendezvous received/\1: rendezvous received/'
done
