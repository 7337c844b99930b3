# Session 19, call 3 (nvidia-h200-x2), issue 27: 41a28bd's CUDA build (GPU
# batches from 1048576 entries) on deep unexpected queues, ordered against
# -R (receives inside a region), 2 alternating rounds; then the whole GPU
# testlist on this bundle.
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
host_bench_tools
nproc; uptime
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_matching_rate" bench/bench_matching_rate.c -ldl || echo "bench_matching_rate: build failed"
cuda=$PWD/src/.libs/libmpix.so.0
for round in 1 2; do
  for v in ordered region; do
    a=""; [ $v = region ] && a=-R
    timeout 75 "$MPIEXEC" -n 2 -bind-to core env LD_PRELOAD="$cuda" MPIX_VERBOSE=1 "$OUT/bench_matching_rate" -m 4096 \
      -n 262144 -O average -q unexpected -i -a -r 3 -t 65536 -T 3 $a -l $v -o "$OUT/deep_${v}_r$round.csv" >"$OUT/deep_${v}_r$round.txt" 2>&1
    echo "-- deep $v round $round: exit $?"; grep -E "^ +[0-9]+ |check|rank 0: region batches" "$OUT/deep_${v}_r$round.txt"
  done
done
