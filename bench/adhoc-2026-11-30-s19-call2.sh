# Session 19, call 2 (nvidia-h200-x2: two H200s on a 32-core host), issue 27:
# regions batch where queues are deep (b4e7aa0: a region's receive starts a
# batch only when the communicator holds MPIX_REGION_BATCH_MIN = 4096
# messages and receives waiting) against the session's base (c1102f4), both
# built without CUDA and carried xz'd in extra/; then the region and GPU
# batch entries of the GPU testlist on this bundle.
# (1) bench_threads (modes' samples alternating), 1-8 receiving threads,
#     ordered and region, base/new, 2 alternating rounds; native MPICH's
#     ordered mode at 1 and 2 threads.
# (2) bench_matching_rate, unexpected queue, average order, MPI_Irecv +
#     MPI_Waitall, -a, N = 1024 .. 262144: ordered against -R (receives in a
#     region) with this bundle's CUDA build (GPU batches from 131072
#     entries) and -R with CPU batches only (MPIX_GPU_MATCH_THRESHOLD=0);
#     native MPICH to N = 16384; 2 alternating rounds.
# (3) bench_unordered_region, 4 ranks, M = 16 .. 1024, reverse, base/new,
#     2 alternating rounds.
# Run on the GPU machine as:
#   MPIX_SUBLIST='region|gpu_match' MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
mkdir -p "$ex/base" "$ex/new"
xz -dc "$ex/libmpix_host_base.so.xz" >"$ex/base/libmpix.so.0" &&
  xz -dc "$ex/libmpix_host_new.so.xz" >"$ex/new/libmpix.so.0" || { echo "unpack failed"; return 1; }
host_bench_tools
nproc; uptime
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread || echo "bench_threads: build failed"
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_unordered_region" bench/bench_unordered_region.c -ldl || echo "bench_unordered_region: build failed"
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_matching_rate" bench/bench_matching_rate.c -ldl || echo "bench_matching_rate: build failed"
for round in 1 2; do
  for who in base new; do
    timeout 60 "$MPIEXEC" -n 2 -bind-to none env LD_PRELOAD="$ex/$who/libmpix.so.0" MPIX_VERBOSE=1 "$OUT/bench_threads" \
      -m ordered,region -t 1,2,4,8 -i 500 -r 7 -l $who -o "$OUT/threads_${who}_r$round.csv" >"$OUT/threads_${who}_r$round.txt" 2>&1
    echo "-- threads $who round $round: exit $?"; grep -E "^(ordered|region|# payload)|rank 1: region batches" "$OUT/threads_${who}_r$round.txt"
  done
  timeout 40 "$MPIEXEC" -n 2 -bind-to none env -u LD_PRELOAD "$OUT/bench_threads" \
    -m ordered -t 1,2 -i 500 -r 7 -l native -o "$OUT/threads_native_r$round.csv" >"$OUT/threads_native_r$round.txt" 2>&1
  echo "-- threads native round $round: exit $?"; grep -E "^(ordered|# payload)" "$OUT/threads_native_r$round.txt"
done
cuda=$PWD/src/.libs/libmpix.so.0
for round in 1 2; do
  for v in native ordered region regioncpu; do
    pre=(env LD_PRELOAD="$cuda" MPIX_VERBOSE=1); a=""; n=262144
    case $v in
      native) pre=(env -u LD_PRELOAD); n=16384 ;;
      region) a=-R ;;
      regioncpu) a=-R; pre+=(MPIX_GPU_MATCH_THRESHOLD=0) ;;
    esac
    timeout 75 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_matching_rate" -m 1024 -n $n -O average \
      -q unexpected -i -a -r 3 -t 65536 -T 3 $a -l $v -o "$OUT/deep_${v}_r$round.csv" >"$OUT/deep_${v}_r$round.txt" 2>&1
    echo "-- deep $v round $round: exit $?"; grep -E "^ +[0-9]+ |check|rank 0: region batches" "$OUT/deep_${v}_r$round.txt"
  done
done
for round in 1 2; do
  for who in base new; do
    timeout 50 "$MPIEXEC" -n 4 -bind-to core env LD_PRELOAD="$ex/$who/libmpix.so.0" "$OUT/bench_unordered_region" \
      -m 16 -n 1024 -s reverse -r 5 -l $who -o "$OUT/unordered_${who}_r$round.csv" >"$OUT/unordered_${who}_r$round.txt" 2>&1
    echo "-- unordered_region $who round $round: exit $?"; grep -vE "^\[mpix\]" "$OUT/unordered_${who}_r$round.txt" | grep -E "^ +[0-9]+ "
  done
done
