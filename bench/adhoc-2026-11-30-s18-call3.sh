# Session 18, call 3 (nvidia-h200-x2: two H200s on a 32-core host), issue 27,
# then the whole GPU testlist on this bundle (65717a8, the session's final
# library code).
# (1) bench_matching_rate N = 1024-16384, average and worst order: native
#     MPICH 4.0.2 against mpix 65717a8 (new3: the request-free MPI_Recv,
#     MPI_Barrier taking arrivals in, the liveness thread emptying the rings)
#     and 55f699c (new2), built without CUDA, carried xz'd in extra/; -a at
#     N = 1024 too; 3 alternating rounds.
# (2) ping-pong, streaming and bidirectional 8 B - 1 KiB, native and new3,
#     3 alternating rounds (bench/run_p2p_benchmarks.sh -s pingpong).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
mkdir -p "$ex/new2" "$ex/new3"
xz -dc "$ex/libmpix_host_new2.so.xz" >"$ex/new2/libmpix.so.0" &&
  xz -dc "$ex/libmpix_host_new3.so.xz" >"$ex/new3/libmpix.so.0" || { echo "unpack failed"; return 1; }
host_bench_tools
nproc; uptime
"$MP/mpicc" -O2 -o "$OUT/bench_matching_rate" bench/bench_matching_rate.c -ldl || echo "bench_matching_rate: build failed"
for round in 1 2 3; do
  for who in native new3 new2; do
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
PP_ARGS="-m 8 -M 1024 -r 5 -i 20000" MPICC="$MP/mpicc" MPIEXEC="$MPIEXEC" timeout 120 bench/run_p2p_benchmarks.sh \
  -s pingpong -R 3 -o "$OUT/p2p" "$ex/new3/libmpix.so.0" >"$OUT/p2p.txt" 2>&1
echo "-- run_p2p_benchmarks: exit $?"
tail -n 14 "$OUT/p2p.txt"
