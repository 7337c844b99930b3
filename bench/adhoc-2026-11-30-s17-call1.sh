# Session 17, call 1 (two H200s, one rank per GPU), issue 26.
# (1) The all-to-all and the other multi-GPU spans timed on each GPU's own
#     clock (a998711): bench_dev_p2p a2a/rate/bw rows and NVSHMEM's a2a
#     (run.sh's nvshmem_baseline, rebuilt from this tree's bench_nvshmem.cu);
#     stderr lines give the old cross-GPU span beside each.
# (2) mpixd_copy's last words loaded together (de9fcd2, this bundle) against
#     a998711 (extra/old/libmpix.so.0 and extra/bench_dev_p2p_old):
#     bench_stream around the pull bound (8-64 KiB) and bench_dev_p2p's
#     latency rows, 3 and 2 alternating rounds.
# (3) Issue 27 on this 16-core host: bench_matching_rate at N = 1024-16384,
#     native MPICH against mpix (extra/libmpix_host.so.0: the library
#     sources of 1493c1d, unchanged since, built without CUDA, as the
#     twelfth session's host runs), with and without -a
#     (every message probed in before the timer), 3 alternating rounds.
# Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
ex=$PWD/extra
mkdir -p "$ex/old" "$ex/host"
xz -dc "$ex/libmpix.so.0.old.xz" >"$ex/old/libmpix.so.0" &&
  xz -dc "$ex/libmpix_host.so.0.xz" >"$ex/host/libmpix.so.0" &&
  xz -dc "$ex/bench_dev_p2p_old.xz" >"$ex/bench_dev_p2p_old" && chmod +x "$ex/bench_dev_p2p_old" ||
  { echo "unpack failed"; return 1; }
sizes=8192,16384,24576,32768,49152,65536
for round in 1 2 3; do
  for who in new old; do
    lib=$LD_LIBRARY_PATH prog=bench/bench_dev_p2p
    [ $who = new ] || { lib=$ex/old:$LD_LIBRARY_PATH; prog=$ex/bench_dev_p2p_old; }
    LD_LIBRARY_PATH=$lib timeout 90 "$MPIEXEC" -n 2 bench/bench_stream -S $sizes >"$OUT/stream_${who}_r$round.txt" 2>&1
    echo "-- bench_stream -S $sizes, $who, round $round: exit $?"
    tail -n 9 "$OUT/stream_${who}_r$round.txt"
    [ $round = 3 ] && continue
    BENCH_DEV_ONLY=latency,rate,a2a,bw LD_LIBRARY_PATH=$lib timeout 90 "$MPIEXEC" -n 2 "$prog" \
      "$OUT/dev_${who}_r$round.csv" >"$OUT/dev_${who}_r$round.txt" 2>&1
    echo "-- bench_dev_p2p latency,rate,a2a,bw, $who, round $round: exit $?"
    grep -E "^latency +ipc|^rate|^a2a|^bw|span" "$OUT/dev_${who}_r$round.txt" | grep -vE " (131072|524288|2097152|8388608) "
  done
done
nvshmem_baseline | grep -E "^putsig |^a2a|span|build failed|not found"
host_bench_tools
"$MP/mpicc" -O2 -o "$OUT/bench_matching_rate" bench/bench_matching_rate.c -ldl || echo "bench_matching_rate: build failed"
for round in 1 2 3; do
  for who in native mpix; do
    for a in "" -a; do
      pre=(env -u LD_PRELOAD)
      [ $who = mpix ] && pre=(env LD_PRELOAD="$ex/host/libmpix.so.0")
      timeout 100 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_matching_rate" -m 1024 -n 16384 -O average,worst \
        -q unexpected -r 3 -t 16384 -T 2 $a -l "$who$a" -o "$OUT/matching_${who}${a}_r$round.csv" \
        >"$OUT/matching_${who}${a}_r$round.txt" 2>&1
      echo "-- bench_matching_rate $who $a, round $round: exit $?"
      grep -E "^ +[0-9]+ |check" "$OUT/matching_${who}${a}_r$round.txt"
    done
  done
done
