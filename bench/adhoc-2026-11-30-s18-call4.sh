# Session 18, call 4 (nvidia-h200-x2: two H200s on a 32-core host), issue 27,
# then the whole GPU testlist on this bundle (d2c3de4, the session's final
# library code).
# bench_matching_rate N = 1024-16384, average and worst order: native MPICH
# 4.0.2 against mpix d2c3de4 (new4: the deep-queue changes: trim, 16384
# cached records, field order) and 65717a8 (new3), both built without CUDA,
# carried xz'd in extra/; 3 alternating rounds.
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
mkdir -p "$ex/new3" "$ex/new4"
xz -dc "$ex/libmpix_host_new3.so.xz" >"$ex/new3/libmpix.so.0" &&
  xz -dc "$ex/libmpix_host_new4.so.xz" >"$ex/new4/libmpix.so.0" || { echo "unpack failed"; return 1; }
host_bench_tools
nproc; uptime
"$MP/mpicc" -O2 -o "$OUT/bench_matching_rate" bench/bench_matching_rate.c -ldl || echo "bench_matching_rate: build failed"
for round in 1 2 3; do
  for who in native new4 new3; do
    pre=(env -u LD_PRELOAD)
    [ $who = native ] || pre=(env LD_PRELOAD="$ex/$who/libmpix.so.0")
    timeout 80 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_matching_rate" -m 1024 -n 16384 -O average,worst \
      -q unexpected -r 3 -t 16384 -T 2 -l "$who" -o "$OUT/matching_${who}_r$round.csv" \
      >"$OUT/matching_${who}_r$round.txt" 2>&1
    echo "-- bench_matching_rate $who, round $round: exit $?"
    grep -E "^ +[0-9]+ |check" "$OUT/matching_${who}_r$round.txt"
  done
done
