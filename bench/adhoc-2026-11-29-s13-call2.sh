# Session 13, call 2 (two H200s, one rank per GPU), issue 25: ff51d61 (one
# driver query per device send; a receive's GPU classified once when it
# starts) beside e1009e6 (the commit before; its CUDA libmpix.so carried as
# .gpu-bundle/extra/old/libmpix.so.0, found first through LD_LIBRARY_PATH),
# same run:
#   1. bench_gpu_copy -b 8: what the classification's driver calls cost
#      (attrs-*), beside the resident kernel's floor and copy;
#   2. bench_gpu_suite 1 B - 64 KiB with BENCH_SPLIT=1, 3 alternating rounds
#      of the new and the old library;
#   3. bench_gpu_suite 1 B - 4 MiB once on the new library (the issue's
#      table, staged MPICH and NCCL in the same program run).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
[ -e "$ex/old/libmpix.so.0" ] || { echo "missing extra/old/libmpix.so.0"; return 1; }
timeout 60 bench/bench_gpu_copy -b 8 >"$OUT/bench_gpu_copy.txt" 2>&1
echo "-- bench_gpu_copy: exit $?"; grep -vE "^csv" "$OUT/bench_gpu_copy.txt"
for round in 1 2 3; do
  for who in new old; do
    lp=$LD_LIBRARY_PATH
    [ $who = old ] && lp=$ex/old:$LD_LIBRARY_PATH
    timeout 100 "$MPIEXEC" -n 2 env LD_LIBRARY_PATH="$lp" BENCH_SPLIT=1 MPIX_VERBOSE=0 bench/bench_gpu_suite \
      "$OUT/suite_${who}_r$round.csv" 65536 >"$OUT/suite_${who}_r$round.txt" 2>&1
    echo "-- suite $who round $round: exit $?"
    grep -E "^ +(8|128|1024|8192|16384) +mpix|split (8|1024) B" "$OUT/suite_${who}_r$round.txt"
  done
done
timeout 200 "$MPIEXEC" -n 2 env BENCH_SPLIT=1 MPIX_VERBOSE=0 bench/bench_gpu_suite "$OUT/suite_full.csv" 4194304 \
  >"$OUT/suite_full.txt" 2>&1
echo "-- suite full: exit $?"; grep -v "^# split" "$OUT/suite_full.txt"
