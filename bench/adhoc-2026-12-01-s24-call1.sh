# Session 24, call 1 (nvidia-h200: one H200, a 16-core host), issue 27: the
# sharded matcher alone at 1-16 threads (bench_match_threads, own keys and
# cross-thread arrivals, 2 invocations x 5 rounds each), then bench_threads
# over MPI (mpix ordered and region, 1-8 threads, 2 rounds; native MPICH at
# 1 and 2 threads, its 4-thread runs having hit every time limit before);
# then the whole GPU testlist (run.sh's sublist stage, after this), the
# first run on a GPU of the 23rd session's GPU-side edits.
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
host_bench_tools
nproc; uptime
for inv in 1 2; do
  for mode in "" --cross; do
    timeout 90 bench/bench_match_threads -t 1,2,4,8,16 -n 5000 -r 5 $mode \
      -o "$OUT/match_threads${mode:+_cross}_i$inv.csv" >"$OUT/match_threads${mode:+_cross}_i$inv.txt" 2>&1
    echo "-- bench_match_threads $mode invocation $inv: exit $?"
    cat "$OUT/match_threads${mode:+_cross}_i$inv.txt"
  done
done
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread || echo "bench_threads: build failed"
for round in 1 2; do
  timeout 90 "$MPIEXEC" -n 2 -bind-to none env LD_PRELOAD="$lib" "$OUT/bench_threads" -m ordered,region -t 1,2,4,8 \
    -i 500 -r 5 -l mpix -o "$OUT/threads_mpix_r$round.csv" >"$OUT/threads_mpix_r$round.txt" 2>&1
  echo "-- bench_threads mpix round $round: exit $?"; cat "$OUT/threads_mpix_r$round.txt"
  timeout 45 "$MPIEXEC" -n 2 -bind-to none "$OUT/bench_threads" -m ordered -t 1,2 \
    -i 500 -r 5 -l native -o "$OUT/threads_native_r$round.csv" >"$OUT/threads_native_r$round.txt" 2>&1
  echo "-- bench_threads native round $round: exit $?"; cat "$OUT/threads_native_r$round.txt"
done
