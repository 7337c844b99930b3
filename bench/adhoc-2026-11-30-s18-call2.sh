# Session 18, call 2 (nvidia-h200-x2: two H200s on a 32-core host), issue 27,
# then the whole GPU testlist on this bundle (55f699c).
# (1) bench_matching_rate N = 1024-16384, average and worst order: native
#     MPICH 4.0.2 against mpix 55f699c (new2: MPI_Barrier takes in what
#     reached the process) and 85b4a8b (new: the request-free MPI_Recv
#     alone), both built without CUDA, carried xz'd in extra/; -a at
#     N = 1024 too; 3 alternating rounds.
# (2) bench_threads (1, 2, 4, 8 receiving threads; ordered and region) with
#     new2, and native MPICH's ordered mode at 1 and 2 threads (it did not
#     finish at 4 in earlier sessions), 2 alternating rounds.
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
mkdir -p "$ex/new" "$ex/new2"
xz -dc "$ex/libmpix_host_new.so.xz" >"$ex/new/libmpix.so.0" &&
  xz -dc "$ex/libmpix_host_new2.so.xz" >"$ex/new2/libmpix.so.0" || { echo "unpack failed"; return 1; }
host_bench_tools
nproc; uptime
"$MP/mpicc" -O2 -o "$OUT/bench_matching_rate" bench/bench_matching_rate.c -ldl || echo "bench_matching_rate: build failed"
for round in 1 2 3; do
  for who in native new2 new; do
    for a in "" -a; do
      pre=(env -u LD_PRELOAD)
      [ $who = native ] || pre=(env LD_PRELOAD="$ex/$who/libmpix.so.0")
      n=16384
      [ -n "$a" ] && n=1024
      timeout 80 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_matching_rate" -m 1024 -n $n -O average,worst \
        -q unexpected -r 3 -t 16384 -T 2 $a -l "$who$a" -o "$OUT/matching_${who}${a}_r$round.csv" \
        >"$OUT/matching_${who}${a}_r$round.txt" 2>&1
      echo "-- bench_matching_rate $who $a, round $round: exit $?"
      grep -E "^ +[0-9]+ |check" "$OUT/matching_${who}${a}_r$round.txt"
    done
  done
done
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread || echo "bench_threads: build failed"
for round in 1 2; do
  timeout 60 "$MPIEXEC" -n 2 -bind-to none env LD_PRELOAD="$ex/new2/libmpix.so.0" "$OUT/bench_threads" \
    -m ordered,region -t 1,2,4,8 -i 500 -r 5 -l new2 -o "$OUT/threads_new2_r$round.csv" >"$OUT/threads_new2_r$round.txt" 2>&1
  echo "-- threads new2 round $round: exit $?"; cat "$OUT/threads_new2_r$round.txt"
  timeout 60 "$MPIEXEC" -n 2 -bind-to none env -u LD_PRELOAD "$OUT/bench_threads" \
    -m ordered -t 1,2 -i 500 -r 5 -l native -o "$OUT/threads_native_r$round.csv" >"$OUT/threads_native_r$round.txt" 2>&1
  echo "-- threads native round $round: exit $?"; cat "$OUT/threads_native_r$round.txt"
done
