# Session 13, call 4 (one H200, two ranks under MPS), issue 25: fc1d903's
# device-buffer suite on one GPU (the issue's "same rows on one GPU under
# MPS"), and the resident kernel's floor on this host; then the GPU testlist.
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
timeout 60 bench/bench_gpu_copy -b 8 >"$OUT/bench_gpu_copy.txt" 2>&1
echo "-- bench_gpu_copy: exit $?"; grep -E "^(resident|attrs|ptr)" "$OUT/bench_gpu_copy.txt"
mps_start
timeout 200 "$MPIEXEC" -n 2 env BENCH_SPLIT=1 MPIX_VERBOSE=0 bench/bench_gpu_suite "$OUT/suite_mps.csv" 4194304 \
  >"$OUT/suite_mps.txt" 2>&1
echo "-- suite one GPU, MPS: exit $?"; grep -v "^# split" "$OUT/suite_mps.txt"; grep "split 8 B" "$OUT/suite_mps.txt"
