# Session 14, call 7 (two H200s), issues 25 and 27: 10e24ad (one pause
# between a waiting thread's idle polls) beside d72be31 (extra/old), same
# run: bench_gpu_suite at 8 B (BENCH_SPLIT=1), 4 alternating rounds; host
# bench_pingpong 8 B latency and streaming (-s), native, new and old, 2
# alternating rounds; then the whole GPU testlist (sublist stage).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
[ -e "$ex/old/libmpix.so.0" ] || { echo "missing extra/old/libmpix.so.0"; return 1; }
for round in 1 2 3 4; do
  for who in new old; do
    lp=$LD_LIBRARY_PATH
    [ $who = new ] || lp=$ex/old:$LD_LIBRARY_PATH
    timeout 40 "$MPIEXEC" -n 2 env LD_LIBRARY_PATH="$lp" BENCH_SPLIT=1 MPIX_VERBOSE=0 bench/bench_gpu_suite \
      "$OUT/rate_${who}_r$round.csv" 8 8 >"$OUT/rate_${who}_r$round.txt" 2>&1
    echo "-- rate $who round $round: exit $?"; grep -E "^ +8 +mpix|split 8 B, rank . \(" "$OUT/rate_${who}_r$round.txt"
  done
done
host_bench_tools
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_pingpong" bench/bench_pingpong.c -ldl
for round in 1 2; do
  for who in native new old; do
    pre=(env -u LD_PRELOAD)
    [ $who = new ] && pre=(env LD_PRELOAD="$lib")
    [ $who = old ] && pre=(env LD_PRELOAD="$ex/old/libmpix.so.0")
    timeout 20 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_pingpong" -m 8 -M 8 -r 3 -i 20000 -s \
      >"$OUT/host_${who}_r$round.txt" 2>&1
    echo "-- host $who round $round: exit $?"; grep -E "^# stream split|^ +8 " "$OUT/host_${who}_r$round.txt"
  done
done
