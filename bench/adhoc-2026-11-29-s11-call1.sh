# Session 11, call 1 (one H200's 16-core host, no GPU work), issue 27: the
# eleventh session's per-message cuts and engine-lock spin (s11) against the
# tenth session's library (s10, 88dc48b), both built without CUDA and
# carried in .gpu-bundle/extra/, beside native MPICH in the same rounds.
#   1. bench_threads (1, 2, 4, 8 threads per rank): native, s10, s11, and s11
#      with MPIX_LOCK_SPINS=0 (the spin alone), alternating, two rounds;
#   2. bench/run_p2p_benchmarks.sh: ping-pong, streaming and bidirectional
#      at 8 B - 1 KiB, 5 alternating rounds (native, s11, s10), after
#      bench_matching_rate (N = 1024, 4096, 16384, average and worst order,
#      unexpected queue), native, s11, s10, two rounds.
# Run on the GPU machine as: MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
# Call 1 ran the threads part with MPI_COMM_WORLD among the modes and 90 s
# per run, and ran out of time in it; call 2 ran it as now, with
# MPIX_S11_THREAD_ROUNDS=1 MPIX_S11_THREAD_WHO="s11 s11spin0 native" MPIX_S11_MATCH_ROUNDS=1.
host_bench_tools
ex=$PWD/extra
"$MP/mpicc" -O2 -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread
for round in ${MPIX_S11_THREAD_ROUNDS:-1 2}; do
  for who in ${MPIX_S11_THREAD_WHO:-native s10 s11 s11spin0}; do
    case $who in
      native) pre=(env -u LD_PRELOAD) ;;
      s10) pre=(env LD_PRELOAD="$ex/libmpix-s10-nocuda.so") ;;
      s11) pre=(env LD_PRELOAD="$ex/libmpix-s11-nocuda.so") ;;
      s11spin0) pre=(env MPIX_LOCK_SPINS=0 LD_PRELOAD="$ex/libmpix-s11-nocuda.so") ;;
    esac
    # Not MPI_COMM_WORLD: native MPICH's own matching there with two or more
    # threads ran 20-60x slower than with one, past any time limit (call 1).
    timeout 60 "$MPIEXEC" -n 2 -bind-to none "${pre[@]}" "$OUT/bench_threads" -m ordered,region -t 1,2,4,8 -i 500 -r 5 -l "$who" \
      -o "$OUT/threads_${who}_r$round.csv" >"$OUT/threads_${who}_r$round.txt" 2>&1
    echo "-- threads $who round $round: exit $?"; cat "$OUT/threads_${who}_r$round.txt"
  done
done
"$MP/mpicc" -O2 -o "$OUT/bench_matching_rate" bench/bench_matching_rate.c -ldl
for round in ${MPIX_S11_MATCH_ROUNDS:-1 2}; do
  for who in native s11 s10; do
    pre=(env -u LD_PRELOAD)
    [ $who = native ] || pre=(env LD_PRELOAD="$ex/libmpix-$who-nocuda.so")
    timeout 60 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_matching_rate" -m 1024 -n 16384 -O average,worst \
      -q unexpected -r 3 -t 16384 -T 2 -l "$who" -o "$OUT/matching_${who}_r$round.csv" >"$OUT/matching_${who}_r$round.txt" 2>&1
    echo "-- matching $who round $round: exit $?"; cat "$OUT/matching_${who}_r$round.txt"
  done
done
PP_ARGS="-m 8 -M 1024 -r 5 -i 20000" MPICC="$MP/mpicc" MPIEXEC="$MPIEXEC" timeout 300 bench/run_p2p_benchmarks.sh \
  -s pingpong -R 5 -V "s10:LD_PRELOAD=$ex/libmpix-s10-nocuda.so" -o "$OUT/p2p-s11" \
  "$ex/libmpix-s11-nocuda.so" >"$OUT/p2p_s11.txt" 2>&1
echo "-- run_p2p_benchmarks: exit $?"
tail -n 40 "$OUT/p2p_s11.txt"
