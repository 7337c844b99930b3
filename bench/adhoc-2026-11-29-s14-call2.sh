# Session 14, call 2 (two H200s' host), issues 25 and 27:
#   1. bench_gpu_suite at 8 B, BENCH_SPLIT=1, 6 rounds (c41792a): each
#      rank's pointer-query cost and CPU after its rate loop, beside the
#      rate's mode;
#   2. host messages with the CUDA build (the bundle's libmpix), no GPU
#      buffers: bench_pingpong 8 B - 64 B latency and streaming (-s), 3
#      alternating rounds of native MPICH, mpix, and mpix with MPIX_GPU=off
#      (no memory-type query at all): what the driver's answer per host
#      send and receive costs where libcuda is installed (c49a7c9).
# Run on the GPU machine as: MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
for round in 1 2 3 4 5 6; do
  timeout 60 "$MPIEXEC" -n 2 env BENCH_SPLIT=1 MPIX_VERBOSE=0 bench/bench_gpu_suite \
    "$OUT/rate_r$round.csv" 8 8 >"$OUT/rate_r$round.txt" 2>&1
  echo "-- rate round $round: exit $?"; grep -E "^ +8 +mpix|split 8 B" "$OUT/rate_r$round.txt"
done
host_bench_tools
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_pingpong" bench/bench_pingpong.c -ldl
for round in 1 2 3; do
  for who in native mpix gpuoff; do
    pre=(env -u LD_PRELOAD)
    [ $who = mpix ] && pre=(env LD_PRELOAD="$lib")
    [ $who = gpuoff ] && pre=(env LD_PRELOAD="$lib" MPIX_GPU=off)
    timeout 40 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_pingpong" -m 8 -M 64 -r 3 -i 20000 -s \
      >"$OUT/host_${who}_r$round.txt" 2>&1
    echo "-- host $who round $round: exit $?"; grep -E "^# (mpix|stream split)|^ +[0-9]+ " "$OUT/host_${who}_r$round.txt"
  done
done
