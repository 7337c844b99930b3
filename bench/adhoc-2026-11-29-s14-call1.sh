# Session 14, call 1 (two H200s, one rank per GPU), issue 25: 2c6ed9c (GPU
# operations wait where their next event can be seen: a receive behind its
# kernel copy, a send until its answer or buffering deadline; 8-byte pieces
# loaded together) beside c7c2a80 (extra/old), same run:
#   1. bench_gpu_suite at 8 B only, BENCH_SPLIT=1, 5 alternating rounds
#      (the rate's two modes: is the slow one gone?);
#   2. bench_gpu_suite 1 B - 64 KiB, BENCH_SPLIT=1, 2 alternating rounds;
#   3. bench_gpu_suite 1 B - 4 MiB once on the new library (the issue's
#      table, staged MPICH and NCCL in the same program run);
#   4. compute-sanitizer memcheck of p2p_kernel_copy (2 ranks: offsets now
#      include 8, the kernel's 8-byte pieces);
#   5. the whole GPU testlist (run.sh's sublist stage, after this).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
[ -e "$ex/old/libmpix.so.0" ] || { echo "missing extra/old/libmpix.so.0"; return 1; }
run_suite() {  # who name max min
  local lp=$LD_LIBRARY_PATH
  [ "$1" = new ] || lp=$ex/$1:$LD_LIBRARY_PATH
  timeout 100 "$MPIEXEC" -n 2 env LD_LIBRARY_PATH="$lp" BENCH_SPLIT=1 MPIX_VERBOSE=0 bench/bench_gpu_suite \
    "$OUT/$2.csv" "$3" "$4" >"$OUT/$2.txt" 2>&1
  echo "-- $2: exit $?"
}
for round in 1 2 3 4 5; do
  for who in new old; do
    run_suite $who rate_${who}_r$round 8 8
    grep -E "^ +8 +mpix|split 8 B" "$OUT/rate_${who}_r$round.txt"
  done
done
for round in 1 2; do
  for who in new old; do
    run_suite $who suite_${who}_r$round 65536 1
    grep -E "^ +(8|1024|2048|8192|16384) +mpix|split 8 B" "$OUT/suite_${who}_r$round.txt"
  done
done
timeout 200 "$MPIEXEC" -n 2 env MPIX_VERBOSE=0 bench/bench_gpu_suite "$OUT/suite_full.csv" 4194304 \
  >"$OUT/suite_full.txt" 2>&1
echo "-- suite full: exit $?"; cat "$OUT/suite_full.txt"
if timeout 240 "$MPIEXEC" -n 2 compute-sanitizer --tool memcheck --error-exitcode 9 test/gpu/p2p_kernel_copy \
  >"$OUT/sanitizer-p2p_kernel_copy.log" 2>&1; then
  echo "memcheck clean (2 ranks): p2p_kernel_copy"
else
  echo "memcheck FAILED (2 ranks): p2p_kernel_copy"; tail -n 30 "$OUT/sanitizer-p2p_kernel_copy.log"
fi
