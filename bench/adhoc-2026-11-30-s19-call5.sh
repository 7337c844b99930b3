# Session 19, call 5 (nvidia-h200, a 16-core host), issue 27: where the
# threads' time goes. bench_threads -m ordered at 1, 2, 4 and 8 receiving
# threads, one process pair per thread count, with MPIX_VERBOSE=1 (its
# engine-lock contention line), the session's library with that line,
# built without CUDA, carried xz'd in extra/; 2 rounds.
# Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
# NB, as run: host_bench_tools (called after `lib=` below) sets lib to the
# bundle's library (41a28bd, without the contention line): its output is
# not used (bench/RESULTS.md, call 6).
ex=$PWD/extra
mkdir -p "$ex/final"
xz -dc "$ex/libmpix_host_lockstats.so.xz" >"$ex/final/libmpix.so.0" || { echo "unpack failed"; return 1; }
lib=$ex/final/libmpix.so.0
host_bench_tools
nproc; uptime
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread || echo "bench_threads: build failed"
for round in 1 2; do
  for t in 1 2 4 8; do
    timeout 40 "$MPIEXEC" -n 2 -bind-to none env LD_PRELOAD="$lib" MPIX_VERBOSE=1 "$OUT/bench_threads" \
      -m ordered -t $t -i 500 -r 5 -l lock -o "$OUT/threads_t${t}_r$round.csv" >"$OUT/threads_t${t}_r$round.txt" 2>&1
    echo "-- threads $t round $round: exit $?"; grep -E "^(ordered|# payload)|engine lock" "$OUT/threads_t${t}_r$round.txt"
  done
done
