# Session 25, call 2 (nvidia-h200: one H200, a 16-core host), issue 27: lanes
# as landed (MPIX_LANES, with the engine integration: marks, early
# envelopes, handoffs) over MPI with bench_threads, 1-8 threads per rank,
# ordered no-wildcard communicator, MPIX_LANES=0 (the engine alone, the
# default), 4 and 8, and native MPICH (1-2 threads), 3 alternating rounds;
# then bench_pingpong 8 B (latency, streaming, bidirectional; one thread)
# with lanes off and on, 3 alternating rounds. The bundle carries only the
# host library built here without CUDA (src/.libs).
# Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
host_bench_tools
nproc; uptime
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread || echo "bench_threads: build failed"
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_pingpong" bench/bench_pingpong.c -ldl || echo "bench_pingpong: build failed"
for round in 1 2 3; do
  for L in 0 4 8; do
    timeout 60 "$MPIEXEC" -n 2 -bind-to none env LD_PRELOAD="$lib" MPIX_LANES=$L "$OUT/bench_threads" -m ordered,region \
      -t 1,2,4,8 -i 500 -r 5 -l lanes$L -o "$OUT/threads_lanes${L}_r$round.csv" >"$OUT/threads_lanes${L}_r$round.txt" 2>&1
    echo "-- bench_threads MPIX_LANES=$L round $round: exit $?"; cat "$OUT/threads_lanes${L}_r$round.txt"
  done
  timeout 45 "$MPIEXEC" -n 2 -bind-to none "$OUT/bench_threads" -m ordered -t 1,2 \
    -i 500 -r 5 -l native -o "$OUT/threads_native_r$round.csv" >"$OUT/threads_native_r$round.txt" 2>&1
  echo "-- bench_threads native round $round: exit $?"; cat "$OUT/threads_native_r$round.txt"
done
for round in 1 2 3; do
  for L in 0 4; do
    timeout 60 "$MPIEXEC" -n 2 -bind-to core env LD_PRELOAD="$lib" MPIX_LANES=$L "$OUT/bench_pingpong" -m 8 -M 8 -r 5 -s \
      -l lanes$L -o "$OUT/pingpong_lanes${L}_r$round.csv" >"$OUT/pingpong_lanes${L}_r$round.txt" 2>&1
    echo "-- bench_pingpong MPIX_LANES=$L round $round: exit $?"; grep -v "^#" "$OUT/pingpong_lanes${L}_r$round.txt"
  done
  timeout 60 "$MPIEXEC" -n 2 -bind-to core "$OUT/bench_pingpong" -m 8 -M 8 -r 5 -s -l native \
    -o "$OUT/pingpong_native_r$round.csv" >"$OUT/pingpong_native_r$round.txt" 2>&1
  echo "-- bench_pingpong native round $round: exit $?"; grep -v "^#" "$OUT/pingpong_native_r$round.txt"
done
