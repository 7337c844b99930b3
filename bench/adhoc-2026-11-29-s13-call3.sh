# Session 13, call 3 (two H200s, one rank per GPU), issue 25: fc1d903 (the
# resident kernel's last pieces loaded together; the IPC cache's key without
# allocation) beside ff51d61 (extra/mid) and e1009e6 (extra/old), same run:
#   1. bench_gpu_suite 1 B - 64 KiB with BENCH_SPLIT=1, 3 alternating rounds
#      of new, mid and old;
#   2. bench_gpu_suite 1 B - 4 MiB once on the new library (the issue's
#      table, staged MPICH and NCCL in the same program run);
#   3. compute-sanitizer memcheck of p2p_kernel_copy (2 ranks).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
for d in old mid; do [ -e "$ex/$d/libmpix.so.0" ] || { echo "missing extra/$d/libmpix.so.0"; return 1; }; done
for round in 1 2 3; do
  for who in new mid old; do
    lp=$LD_LIBRARY_PATH
    [ $who = new ] || lp=$ex/$who:$LD_LIBRARY_PATH
    timeout 100 "$MPIEXEC" -n 2 env LD_LIBRARY_PATH="$lp" BENCH_SPLIT=1 MPIX_VERBOSE=0 bench/bench_gpu_suite \
      "$OUT/suite_${who}_r$round.csv" 65536 >"$OUT/suite_${who}_r$round.txt" 2>&1
    echo "-- suite $who round $round: exit $?"
    grep -E "^ +(8|1024|2048|8192|16384) +mpix|split 8 B" "$OUT/suite_${who}_r$round.txt"
  done
done
timeout 200 "$MPIEXEC" -n 2 env MPIX_VERBOSE=0 bench/bench_gpu_suite "$OUT/suite_full.csv" 4194304 \
  >"$OUT/suite_full.txt" 2>&1
echo "-- suite full: exit $?"; cat "$OUT/suite_full.txt"
if timeout 300 "$MPIEXEC" -n 2 compute-sanitizer --tool memcheck --error-exitcode 9 test/gpu/p2p_kernel_copy \
  >"$OUT/sanitizer-p2p_kernel_copy.log" 2>&1; then
  echo "memcheck clean (2 ranks): p2p_kernel_copy"
else
  echo "memcheck FAILED (2 ranks): p2p_kernel_copy"; tail -n 30 "$OUT/sanitizer-p2p_kernel_copy.log"
fi
