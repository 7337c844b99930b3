# Session 11, call 3 (one H200's 16-core host, before the GPU testlist of
# the same call), issue 27: bench_threads with s11 (0a966c2) and s11b
# (c6c8abd: an arrival in an unordered region meets the receives queued
# under its key at once when no batch waits for a flush), both built
# without CUDA and carried in .gpu-bundle/extra/, alternating, two rounds.
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
host_bench_tools
ex=$PWD/extra
"$MP/mpicc" -O2 -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread
for round in 1 2; do
  for who in s11 s11b; do
    timeout 60 "$MPIEXEC" -n 2 -bind-to none env LD_PRELOAD="$ex/libmpix-$who-nocuda.so" "$OUT/bench_threads" \
      -m ordered,region -t 1,2,4,8 -i 500 -r 5 -l "$who" -o "$OUT/threads_${who}_r$round.csv" \
      >"$OUT/threads_${who}_r$round.txt" 2>&1
    echo "-- threads $who round $round: exit $?"; cat "$OUT/threads_${who}_r$round.txt"
  done
done
