# Session 17, call 3 (two H200s, one rank per GPU), issue 26: 43b101f (this
# bundle: the medium sender's mark scan stops at the credit its claim needs;
# MPIX_STREAM_PULL_MIN 8193 by default) against de9fcd2 (extra/prev: call
# 1's build, pull bound 16385): bench_stream 4-32 KiB with NCCL beside it
# and bench_dev_p2p's latency rows, 3 alternating rounds; then
# compute-sanitizer memcheck and racecheck of dev_p2p (2 ranks,
# DEV_P2P_SMALL) and memcheck of stream_kernel (2 ranks, STREAM_TEST_SMALL);
# then the whole GPU testlist (run.sh's sublist stage).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
mkdir -p "$ex/prev"
xz -dc "$ex/libmpix.so.0.prev.xz" >"$ex/prev/libmpix.so.0" &&
  xz -dc "$ex/bench_dev_p2p_prev.xz" >"$ex/bench_dev_p2p_prev" && chmod +x "$ex/bench_dev_p2p_prev" ||
  { echo "unpack failed"; return 1; }
sizes=4096,8192,12288,16384,24576,32768
for round in 1 2 3; do
  for who in new prev; do
    lib=$LD_LIBRARY_PATH prog=bench/bench_dev_p2p
    [ $who = new ] || { lib=$ex/prev:$LD_LIBRARY_PATH; prog=$ex/bench_dev_p2p_prev; }
    LD_LIBRARY_PATH=$lib timeout 90 "$MPIEXEC" -n 2 bench/bench_stream -S $sizes >"$OUT/stream_${who}_r$round.txt" 2>&1
    echo "-- bench_stream -S $sizes, $who, round $round: exit $?"
    grep -E "^ +[0-9]+ +[0-9.]+ " "$OUT/stream_${who}_r$round.txt"
    BENCH_DEV_ONLY=latency LD_LIBRARY_PATH=$lib timeout 90 "$MPIEXEC" -n 2 "$prog" \
      "$OUT/dev_${who}_r$round.csv" >"$OUT/dev_${who}_r$round.txt" 2>&1
    echo "-- bench_dev_p2p latency, $who, round $round: exit $?"
    grep -E "^latency +ipc" "$OUT/dev_${who}_r$round.txt" | grep -vE " (131072|524288|2097152|8388608) "
  done
done
for tool in memcheck racecheck; do
  DEV_P2P_SMALL=1 timeout 150 "$MPIEXEC" -n 2 compute-sanitizer --tool $tool --error-exitcode 9 test/gpu/dev_p2p \
    >"$OUT/sanitizer-dev_p2p-$tool.log" 2>&1
  echo "-- compute-sanitizer $tool dev_p2p (2 ranks, DEV_P2P_SMALL): exit $?"; tail -n 3 "$OUT/sanitizer-dev_p2p-$tool.log"
done
STREAM_TEST_SMALL=1 timeout 150 "$MPIEXEC" -n 2 compute-sanitizer --tool memcheck --error-exitcode 9 test/gpu/stream_kernel \
  >"$OUT/sanitizer-stream_kernel-memcheck.log" 2>&1
echo "-- compute-sanitizer memcheck stream_kernel (2 ranks, STREAM_TEST_SMALL): exit $?"
tail -n 3 "$OUT/sanitizer-stream_kernel-memcheck.log"
