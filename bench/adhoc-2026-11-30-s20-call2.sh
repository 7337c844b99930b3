# Session 20, call 2 (nvidia-h200-x2), before the GPU testlist (`sublist`
# with MPIX_SUBLIST=.) of the bundle (the inline-messages commit): issue 27
# on the host. The bundle's library ("new") against 0cf8272's ("base", the
# same CUDA build before inline messages, carried xz'd in extra/) and native
# MPICH, 3 alternating rounds each:
#   bench_matching_rate -m 1024 -n 16384 -O average,worst -q unexpected -a
#   bench_pingpong -m 1 -M 8 (latency, streaming window 64, bidirectional)
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
host_bench_tools
newlib=$lib
ex=$PWD/extra
mkdir -p "$ex/base"
xz -dc "$ex/libmpix_base.so.xz" >"$ex/base/libmpix.so.0" || { echo "unpack failed"; return 1; }
baselib=$ex/base/libmpix.so.0
nproc; uptime
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_matching_rate" bench/bench_matching_rate.c || echo "bench_matching_rate: build failed"
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_pingpong" bench/bench_pingpong.c -ldl || echo "bench_pingpong: build failed"
for round in 1 2 3; do
  for who in native base new; do
    pre=""
    [ $who = base ] && pre="-genv LD_PRELOAD $baselib"
    [ $who = new ] && pre="-genv LD_PRELOAD $newlib"
    timeout 100 "$MPIEXEC" -n 2 -bind-to core $pre "$OUT/bench_matching_rate" -m 1024 -n 16384 -O average,worst \
      -q unexpected -r 3 -t 16384 -T 2 -a -l $who -o "$OUT/match_${who}_r$round.csv" >"$OUT/match_${who}_r$round.txt" 2>&1
    echo "-- matching $who round $round: exit $?"; grep -E "^ +[0-9]+ |payload" "$OUT/match_${who}_r$round.txt"
  done
done
for round in 1 2 3; do
  for who in native base new; do
    pre=""
    [ $who = base ] && pre="-genv LD_PRELOAD $baselib"
    [ $who = new ] && pre="-genv LD_PRELOAD $newlib"
    timeout 60 "$MPIEXEC" -n 2 -bind-to core $pre "$OUT/bench_pingpong" -m 1 -M 8 -r 5 -l $who \
      -o "$OUT/pp_${who}_r$round.csv" >"$OUT/pp_${who}_r$round.txt" 2>&1
    echo "-- pingpong $who round $round: exit $?"; grep -vE "^#|^$" "$OUT/pp_${who}_r$round.txt" | head -8
  done
done
