# Session 14, call 4 (two H200s, one rank per GPU), issue 25: d72be31 (2c6ed9c's wait lists backed out; an
# unexpected GPU envelope keeps its descriptor in the message, the transfer
# maps reuse their nodes: no allocation per rendezvous) beside c7c2a80
# (extra/old), same run:
#   1. bench_gpu_suite at 8 B, BENCH_SPLIT=1, 5 alternating rounds of new
#      and old (the rate's two modes; extra/mid left out: 64 MiB carry);
#   2. bench_gpu_suite 1 B - 64 KiB, BENCH_SPLIT=1, new and old, once;
#   3. the whole GPU testlist (run.sh's sublist stage, after this).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
for d in old; do [ -e "$ex/$d/libmpix.so.0" ] || { echo "missing extra/$d/libmpix.so.0"; return 1; }; done
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
    grep -E "^ +8 +mpix|split 8 B, rank . \(" "$OUT/rate_${who}_r$round.txt"
  done
done
for round in 1; do
  for who in new old; do
    run_suite $who suite_${who}_r$round 65536 1
    grep -E "^ +(8|1024|2048|8192|16384) +mpix|split 8 B, rank . \(" "$OUT/suite_${who}_r$round.txt"
  done
done
