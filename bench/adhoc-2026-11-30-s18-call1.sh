# Session 18, call 1 (nvidia-h200-x2: two H200s on a 32-core host), issue 27,
# then the whole GPU testlist on this bundle (85b4a8b).
# (1) bench_matching_rate N = 1024-16384, average and worst order: native
#     MPICH 4.0.2 against mpix before (base: 95f04f9's library) and after
#     85b4a8b (MPI_Recv of a message already here makes no request), both
#     built without CUDA and carried xz'd in extra/; -a (every message probed
#     in before the timer) at N = 1024 as well; 3 alternating rounds.
# (2) ping-pong, streaming and bidirectional 8 B - 1 KiB
#     (bench/run_p2p_benchmarks.sh -s pingpong), native, new and base,
#     3 alternating rounds: the receive's other paths unchanged.
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
mkdir -p "$ex/new" "$ex/base"
xz -dc "$ex/libmpix_host_new.so.xz" >"$ex/new/libmpix.so.0" &&
  xz -dc "$ex/libmpix_host_base.so.xz" >"$ex/base/libmpix.so.0" || { echo "unpack failed"; return 1; }
host_bench_tools
nproc; uptime
"$MP/mpicc" -O2 -o "$OUT/bench_matching_rate" bench/bench_matching_rate.c -ldl || echo "bench_matching_rate: build failed"
for round in 1 2 3; do
  for who in native new base; do
    for a in "" -a; do
      pre=(env -u LD_PRELOAD)
      [ $who = native ] || pre=(env LD_PRELOAD="$ex/$who/libmpix.so.0")
      n=16384
      [ -n "$a" ] && n=1024
      timeout 80 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_matching_rate" -m 1024 -n $n -O average,worst \
        -q unexpected -r 3 -t 16384 -T 2 $a -l "$who$a" -o "$OUT/matching_${who}${a}_r$round.csv" \
        >"$OUT/matching_${who}${a}_r$round.txt" 2>&1
      echo "-- bench_matching_rate $who $a, round $round: exit $?"
      grep -E "^ +[0-9]+ |check" "$OUT/matching_${who}${a}_r$round.txt"
    done
  done
done
PP_ARGS="-m 8 -M 1024 -r 5 -i 20000" MPICC="$MP/mpicc" MPIEXEC="$MPIEXEC" timeout 150 bench/run_p2p_benchmarks.sh \
  -s pingpong -R 3 -V "base:LD_PRELOAD=$ex/base/libmpix.so.0" -o "$OUT/p2p" "$ex/new/libmpix.so.0" >"$OUT/p2p.txt" 2>&1
echo "-- run_p2p_benchmarks: exit $?"
tail -n 16 "$OUT/p2p.txt"
