# Session 12, call 1 (one H200's 16-core host, then the GPU testlist),
# issue 27: s12a (bba409f: eager messages into contiguous host receives
# copied straight from the transport's buffer) and s12 (its successor:
# threads waiting on their own requests watch their completion flags
# outside the engine lock), both built without CUDA and carried in
# .gpu-bundle/extra/, beside native MPICH in the same rounds:
#   1. bench_threads (1, 2, 4, 8 threads per rank, ordered and region):
#      native (round 1; region mode skipped without libmpix), s12a, s12, two rounds;
#   2. bench_matching_rate (N = 1024 and 16384, average and worst order),
#      native, s12, one round;
#   3. bench/run_p2p_benchmarks.sh: ping-pong, streaming and bidirectional
#      at 8 B - 1 KiB, 5 alternating rounds (native, s12, s12a).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
host_bench_tools
ex=$PWD/extra
"$MP/mpicc" -O2 -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread
for round in 1 2; do
  whos="s12a s12"
  [ $round = 1 ] && whos="native s12a s12"
  for who in $whos; do
    pre=(env -u LD_PRELOAD)
    [ $who = native ] || pre=(env LD_PRELOAD="$ex/libmpix-$who-nocuda.so")
    # Not MPI_COMM_WORLD: native MPICH's matching there with two or more
    # threads ran past any time limit (session 11, call 1).
    timeout 50 "$MPIEXEC" -n 2 -bind-to none "${pre[@]}" "$OUT/bench_threads" -m ordered,region -t 1,2,4,8 -i 500 \
      -r 5 -l "$who" -o "$OUT/threads_${who}_r$round.csv" >"$OUT/threads_${who}_r$round.txt" 2>&1
    echo "-- threads $who round $round: exit $?"; cat "$OUT/threads_${who}_r$round.txt"
  done
done
"$MP/mpicc" -O2 -o "$OUT/bench_matching_rate" bench/bench_matching_rate.c -ldl
for who in native s12; do
  pre=(env -u LD_PRELOAD)
  [ $who = native ] || pre=(env LD_PRELOAD="$ex/libmpix-$who-nocuda.so")
  timeout 60 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_matching_rate" -m 1024 -n 16384 -O average,worst \
    -q unexpected -r 3 -t 16384 -T 2 -l "$who" -o "$OUT/matching_$who.csv" >"$OUT/matching_$who.txt" 2>&1
  echo "-- matching $who: exit $?"; cat "$OUT/matching_$who.txt"
done
PP_ARGS="-m 8 -M 1024 -r 5 -i 20000" MPICC="$MP/mpicc" MPIEXEC="$MPIEXEC" timeout 240 bench/run_p2p_benchmarks.sh \
  -s pingpong -R 5 -V "s12a:LD_PRELOAD=$ex/libmpix-s12a-nocuda.so" -o "$OUT/p2p-s12" \
  "$ex/libmpix-s12-nocuda.so" >"$OUT/p2p_s12.txt" 2>&1
echo "-- run_p2p_benchmarks: exit $?"
tail -n 40 "$OUT/p2p_s12.txt"
