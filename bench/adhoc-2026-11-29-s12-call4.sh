# Session 12, call 4 (one H200's 16-core host, no GPU work), issue 27:
# s12b (9a09d84: the request's hold on its communicator without atomics;
# built without CUDA like the others, .gpu-bundle/extra/) beside
# s12 (956419a), s11 (0a966c2) and native MPICH, same rounds:
#   1. bench/run_p2p_benchmarks.sh: ping-pong, streaming and bidirectional
#      at 8 B - 1 KiB, 5 alternating rounds (native, s12b, s12, s11);
#   2. bench_pingpong -s at 8 B (where each rank's streaming time goes),
#      native and s12b, three alternating rounds;
#   3. bench_threads (1, 2, 4, 8 threads; ordered, region), s12b and s11,
#      one round (native's ordered run: call 1);
#   4. bench_matching_rate N = 1024 and 16384, native, s12b, s11.
# Run on the GPU machine as: MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
host_bench_tools
ex=$PWD/extra
for f in s12b s12 s11; do [ -e "$ex/libmpix-$f-nocuda.so" ] || { echo "missing $f"; return 1; }; done
PP_ARGS="-m 8 -M 1024 -r 5 -i 20000" MPICC="$MP/mpicc" MPIEXEC="$MPIEXEC" timeout 200 bench/run_p2p_benchmarks.sh \
  -s pingpong -R 5 -V "s12:LD_PRELOAD=$ex/libmpix-s12-nocuda.so" -V "s11:LD_PRELOAD=$ex/libmpix-s11-nocuda.so" \
  -o "$OUT/p2p-s12b" "$ex/libmpix-s12b-nocuda.so" >"$OUT/p2p_s12b.txt" 2>&1
echo "-- run_p2p_benchmarks: exit $?"
tail -n 16 "$OUT/p2p_s12b.txt"
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_pingpong" bench/bench_pingpong.c -ldl
for round in 1 2 3; do
  for who in native s12b; do
    pre=(env -u LD_PRELOAD)
    [ $who = native ] || pre=(env LD_PRELOAD="$ex/libmpix-$who-nocuda.so")
    timeout 30 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_pingpong" -m 8 -M 8 -r 5 -i 20000 -s \
      >"$OUT/split_${who}_r$round.txt" 2>&1
    echo "-- split $who round $round: exit $?"; grep -E "^# (mpix|stream split)|^ +[0-9]+ " "$OUT/split_${who}_r$round.txt"
  done
done
"$MP/mpicc" -O2 -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread
for who in s12b s11; do
  timeout 50 "$MPIEXEC" -n 2 -bind-to none env LD_PRELOAD="$ex/libmpix-$who-nocuda.so" "$OUT/bench_threads" \
    -m ordered,region -t 1,2,4,8 -i 500 -r 5 -l "$who" -o "$OUT/threads_$who.csv" >"$OUT/threads_$who.txt" 2>&1
  echo "-- threads $who: exit $?"; cat "$OUT/threads_$who.txt"
done
"$MP/mpicc" -O2 -o "$OUT/bench_matching_rate" bench/bench_matching_rate.c -ldl
for who in native s12b s11; do
  pre=(env -u LD_PRELOAD)
  [ $who = native ] || pre=(env LD_PRELOAD="$ex/libmpix-$who-nocuda.so")
  timeout 60 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_matching_rate" -m 1024 -n 16384 -O average,worst \
    -q unexpected -r 3 -t 16384 -T 2 -l "$who" -o "$OUT/matching_$who.csv" >"$OUT/matching_$who.txt" 2>&1
  echo "-- matching $who: exit $?"; grep -E "^ +[0-9]+ " "$OUT/matching_$who.txt"
done
