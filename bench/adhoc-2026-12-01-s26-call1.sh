# Session 26, call 1 (nvidia-h200: one H200, a 16-core host), issue 27: lanes
# on by default (MPIX_LANES=auto: 4 lanes at MPI_THREAD_MULTIPLE, 1 below;
# lane messages up to MPIX_LANE_EAGER_LIMIT=1024 B) against the engine alone
# (MPIX_LANES=0, the previous default) and native MPICH, on this host's CPUs:
# (1) bench_pingpong 8 B - 64 KiB, one thread (latency, streaming and
#     bidirectional, window 64), 3 alternating rounds;
# (2) bench_threads 1-8 threads per rank, ordered and region, 3 alternating
#     rounds (native: 1-2 threads);
# (3) bench_matching_rate, unexpected queue 1K-16K, average and worst order,
#     and inside a region at 16K-64K (-R), 2 rounds.
# The bundle is the CUDA build of the commit (make gpu-bundle); the processes
# make no CUDA context. MPIX_S26_PART=1: (1); 2: (2) and (3).
# Run on the GPU machine as:
#   MPIX_S26_PART=N MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
host_bench_tools
nproc; uptime
for b in bench_threads bench_pingpong bench_matching_rate; do
  "$MP/mpicc" -O2 -Ibench -o "$OUT/$b" bench/$b.c -ldl -lpthread || echo "$b: build failed"
done
# v: auto (the new default), lanes0 (engine alone), native
run_v() {
  case $1 in
    auto) pre=(env LD_PRELOAD="$lib") ;;
    lanes0) pre=(env LD_PRELOAD="$lib" MPIX_LANES=0) ;;
    native) pre=(env -u LD_PRELOAD) ;;
  esac
}
part=${MPIX_S26_PART:-1}
for round in 1 2 3; do
  [ "$part" = 1 ] || break
  for v in auto lanes0 native; do
    run_v $v
    timeout 60 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_pingpong" -m 8 -M 65536 -r 3 -i 5000 -b 16777216 \
      -l $v -o "$OUT/pingpong_${v}_r$round.csv" >"$OUT/pingpong_${v}_r$round.txt" 2>&1
    echo "-- bench_pingpong $v round $round: exit $?"; grep -v "^#" "$OUT/pingpong_${v}_r$round.txt"
  done
done
for round in 1 2 3; do
  [ "$part" = 2 ] || break
  for v in auto lanes0 native; do
    run_v $v; t=1,2,4,8; m=ordered,region
    [ $v = native ] && { t=1,2; m=ordered; }
    timeout 60 "$MPIEXEC" -n 2 -bind-to none "${pre[@]}" "$OUT/bench_threads" -m $m -t $t -i 500 -r 5 -l $v \
      -o "$OUT/threads_${v}_r$round.csv" >"$OUT/threads_${v}_r$round.txt" 2>&1
    echo "-- bench_threads $v round $round: exit $?"; cat "$OUT/threads_${v}_r$round.txt"
  done
done
for round in 1 2; do
  [ "$part" = 2 ] || break
  for v in auto lanes0 native; do
    run_v $v
    timeout 60 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_matching_rate" -m 1024 -n 16384 -O average,worst \
      -q unexpected -r 3 -T 3 -l $v -o "$OUT/match_${v}_r$round.csv" >"$OUT/match_${v}_r$round.txt" 2>&1
    echo "-- matching $v round $round: exit $?"; grep -E "^ +[0-9]+ |check" "$OUT/match_${v}_r$round.txt"
  done
  for v in auto lanes0; do
    for a in "" -R; do
      run_v $v
      timeout 60 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_matching_rate" -m 16384 -n 65536 -O average \
        -q unexpected -i -a -r 3 -T 3 $a -l "$v$a" -o "$OUT/deep_${v}${a}_r$round.csv" >"$OUT/deep_${v}${a}_r$round.txt" 2>&1
      echo "-- deep $v $a round $round: exit $?"; grep -E "^ +[0-9]+ |check" "$OUT/deep_${v}${a}_r$round.txt"
    done
  done
done
