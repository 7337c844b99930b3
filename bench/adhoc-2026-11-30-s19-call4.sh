# Session 19, call 4 (nvidia-h200-x2), issue 27: the session's final library
# (272a8ae: regions batch from MPIX_REGION_BATCH_MIN = 16384 messages and
# receives waiting), built without CUDA, carried xz'd in extra/, 3
# alternating rounds:
# (1) bench_threads (modes' samples alternating), 1-8 receiving threads,
#     ordered and region;
# (2) bench_matching_rate, unexpected queue, average order, MPI_Irecv +
#     MPI_Waitall, -a, N = 4096 .. 262144, ordered against -R.
# Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
# NB, as run: host_bench_tools (called after `lib=` below) sets lib to the
# bundle's library, so this measured 41a28bd's CUDA build from the bundle,
# not extra/final (bench/RESULTS.md says so).
ex=$PWD/extra
mkdir -p "$ex/final"
xz -dc "$ex/libmpix_host_final.so.xz" >"$ex/final/libmpix.so.0" || { echo "unpack failed"; return 1; }
lib=$ex/final/libmpix.so.0
host_bench_tools
nproc; uptime
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread || echo "bench_threads: build failed"
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_matching_rate" bench/bench_matching_rate.c -ldl || echo "bench_matching_rate: build failed"
for round in 1 2 3; do
  timeout 60 "$MPIEXEC" -n 2 -bind-to none env LD_PRELOAD="$lib" MPIX_VERBOSE=1 "$OUT/bench_threads" \
    -m ordered,region -t 1,2,4,8 -i 500 -r 7 -l final -o "$OUT/threads_final_r$round.csv" >"$OUT/threads_final_r$round.txt" 2>&1
  echo "-- threads final round $round: exit $?"; grep -E "^(ordered|region|# payload)|rank 1: region batches" "$OUT/threads_final_r$round.txt"
  for v in ordered region; do
    a=""; [ $v = region ] && a=-R
    timeout 60 "$MPIEXEC" -n 2 -bind-to core env LD_PRELOAD="$lib" MPIX_VERBOSE=1 "$OUT/bench_matching_rate" -m 4096 \
      -n 262144 -O average -q unexpected -i -a -r 3 -t 65536 -T 3 $a -l $v -o "$OUT/deep_${v}_r$round.csv" >"$OUT/deep_${v}_r$round.txt" 2>&1
    echo "-- deep $v round $round: exit $?"; grep -E "^ +[0-9]+ |check|rank 0: region batches" "$OUT/deep_${v}_r$round.txt"
  done
done
