# Session 17, call 4 (two H200s, one rank per GPU), issue 26: the final
# build of the session (this bundle: de9fcd2's device code, the mark scan's
# stop of 67b1b6b reverted, MPIX_STREAM_PULL_MIN 8193) against de9fcd2
# (extra/prev, pull bound 16385): bench_stream 4-32 KiB with NCCL beside it,
# 2 alternating rounds; the GPU-run and host-driven 8-64 MiB rows
# (bench_stream -S, MPIX_STREAM_PATH=auto and =host); then the whole GPU
# testlist (run.sh's sublist stage).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
mkdir -p "$ex/prev"
xz -dc "$ex/libmpix.so.0.prev.xz" >"$ex/prev/libmpix.so.0" || { echo "unpack failed"; return 1; }
sizes=4096,8192,12288,16384,24576,32768
for round in 1 2; do
  for who in new prev; do
    lib=$LD_LIBRARY_PATH
    [ $who = new ] || lib=$ex/prev:$LD_LIBRARY_PATH
    LD_LIBRARY_PATH=$lib timeout 90 "$MPIEXEC" -n 2 bench/bench_stream -S $sizes >"$OUT/stream_${who}_r$round.txt" 2>&1
    echo "-- bench_stream -S $sizes, $who, round $round: exit $?"
    grep -E "^ +[0-9]+ +[0-9.]+ " "$OUT/stream_${who}_r$round.txt"
  done
done
for sp in auto host; do
  MPIX_STREAM_PATH=$sp timeout 120 "$MPIEXEC" -n 2 bench/bench_stream -S 8388608,33554432,67108864 \
    >"$OUT/stream_large_$sp.txt" 2>&1
  echo "-- bench_stream -S 8-64 MiB, MPIX_STREAM_PATH=$sp: exit $?"
  grep -E "^ +[0-9]+ +[0-9.]+ " "$OUT/stream_large_$sp.txt"
done
