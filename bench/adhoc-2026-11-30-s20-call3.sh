# Session 20, call 3 (nvidia-h200-x2), host benchmarks only, issue 27: the
# bundle's library ("new", c71f508: inline messages, receives' slots without
# aux words) against 0cf8272's ("base", carried xz'd in extra/) and native
# MPICH, 5 alternating rounds: bench_matching_rate at N = 1024 and 16384
# (average and worst, unexpected, probed in first) and bench_pingpong at
# 8 B (latency, streaming and bidirectional with a window of 64); then
# bench_threads ordered and region at 1 and 4 threads, base and new, 2
# rounds.
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
host_bench_tools
newlib=$lib
ex=$PWD/extra
mkdir -p "$ex/base"
xz -dc "$ex/libmpix_base.so.xz" >"$ex/base/libmpix.so.0" || { echo "unpack failed"; return 1; }
baselib=$ex/base/libmpix.so.0
nproc; uptime
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_matching_rate" bench/bench_matching_rate.c || echo "bench_matching_rate: build failed"
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_pingpong" bench/bench_pingpong.c -ldl || echo "bench_pingpong: build failed"
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread || echo "bench_threads: build failed"
pre_of() {
  case $1 in base) echo "-genv LD_PRELOAD $baselib" ;; new) echo "-genv LD_PRELOAD $newlib" ;; *) echo "" ;; esac
}
for round in 1 2 3 4 5; do
  for who in native base new; do
    timeout 60 "$MPIEXEC" -n 2 -bind-to core $(pre_of $who) "$OUT/bench_matching_rate" -m 1024 -n 16384 \
      -O average,worst -q unexpected -r 3 -t 16384 -T 2 -a -l $who -o "$OUT/match_${who}_r$round.csv" \
      >"$OUT/match_${who}_r$round.txt" 2>&1
    echo "-- matching $who round $round: exit $? $(grep -E '^ +(1024|16384) ' "$OUT/match_${who}_r$round.txt" | awk '{printf "%s/%s %s  ", $1, $2, $4}')"
    timeout 60 "$MPIEXEC" -n 2 -bind-to core $(pre_of $who) "$OUT/bench_pingpong" -m 8 -M 8 -r 5 -l $who \
      -o "$OUT/pp_${who}_r$round.csv" >"$OUT/pp_${who}_r$round.txt" 2>&1
    echo "-- pingpong $who round $round: exit $? $(grep -E '^ +8 ' "$OUT/pp_${who}_r$round.txt")"
  done
done
for round in 1 2; do
  for who in base new; do
    l=$baselib; [ $who = new ] && l=$newlib
    timeout 60 "$MPIEXEC" -n 2 -bind-to none env LD_PRELOAD="$l" "$OUT/bench_threads" -m ordered,region -t 1,4 \
      -i 500 -r 5 -l $who -o "$OUT/threads_${who}_r$round.csv" >"$OUT/threads_${who}_r$round.txt" 2>&1
    echo "-- threads $who round $round: exit $?"; grep -E "^(ordered|region)" "$OUT/threads_${who}_r$round.txt"
  done
done
