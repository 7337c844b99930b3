# Session 10, call 3 (one H200's 16-core host, no GPU work): bench_threads
# (issue 27) with the library before (418b8d6) and after (88dc48b) this
# session's engine-lock change (a polling thread lets go of the lock only
# when another waits), both built without CUDA, alternating, two rounds.
# Run on the GPU machine as: MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc bench-mid
host_bench_tools
"$MP/mpicc" -O2 -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread
for round in 1 2; do
  for who in before after; do
    timeout 100 "$MPIEXEC" -n 2 -bind-to none env LD_PRELOAD="$PWD/extra/libmpix-$who-nocuda.so" "$OUT/bench_threads" \
      -t 1,2,4,8 -i 500 -r 5 -l "$who" -o "$OUT/threads_${who}_r$round.csv" >"$OUT/threads_${who}_r$round.txt" 2>&1
    echo "-- $who round $round: exit $?"; cat "$OUT/threads_${who}_r$round.txt"
  done
done
