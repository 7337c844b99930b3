# Session 20, call 1 (nvidia-h200-x2), before the GPU testlist (`sublist`
# with MPIX_SUBLIST=.): issue 27 on the host, the bundle's library (0cf8272:
# region batches from 16384 waiting entries, the default session 19 left
# unmeasured for threads). bench_threads ordered and region at 1, 2, 4 and 8
# receiving threads, native MPICH (world) beside, 2 rounds; then
# bench_matching_rate native against mpix at N = 1024 and 16384 (average
# and worst, unexpected, probed in first), 2 alternating rounds.
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
host_bench_tools
mylib=$lib
nproc; uptime
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread || echo "bench_threads: build failed"
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_matching_rate" bench/bench_matching_rate.c || echo "bench_matching_rate: build failed"
for round in 1 2; do
  timeout 100 "$MPIEXEC" -n 2 -bind-to none env LD_PRELOAD="$mylib" "$OUT/bench_threads" \
    -m ordered,region -t 1,2,4,8 -i 500 -r 5 -l mpix -o "$OUT/threads_mpix_r$round.csv" >"$OUT/threads_mpix_r$round.txt" 2>&1
  echo "-- threads mpix round $round: exit $?"; grep -E "^ *[0-9]|ordered|region|payload" "$OUT/threads_mpix_r$round.txt" | head -20
  timeout 60 "$MPIEXEC" -n 2 -bind-to none "$OUT/bench_threads" \
    -m ordered -t 1,2,4 -i 500 -r 5 -l native -o "$OUT/threads_native_r$round.csv" >"$OUT/threads_native_r$round.txt" 2>&1
  echo "-- threads native round $round: exit $?"; grep -E "^ *[0-9]|ordered|payload" "$OUT/threads_native_r$round.txt" | head -10
done
for round in 1 2; do
  for who in native mpix; do
    pre=""; [ $who = mpix ] && pre="-genv LD_PRELOAD $mylib"
    timeout 120 "$MPIEXEC" -n 2 -bind-to core $pre "$OUT/bench_matching_rate" -m 1024 -n 16384 -O average,worst \
      -q unexpected -r 3 -t 16384 -T 2 -a -l $who -o "$OUT/match_${who}_r$round.csv" >"$OUT/match_${who}_r$round.txt" 2>&1
    echo "-- matching $who round $round: exit $?"; grep -E "^ +[0-9]+ " "$OUT/match_${who}_r$round.txt"
  done
done
