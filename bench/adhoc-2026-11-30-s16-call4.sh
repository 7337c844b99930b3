# Session 16, call 4 (two H200s, one rank per GPU), issue 26 (the
# benchmarks first, the sanitizer runs last, as time allows): compute-
# sanitizer memcheck and racecheck of dev_p2p (2 ranks, DEV_P2P_SMALL: every
# device call, inline/medium/ring sizes up to 16 KiB, one thread, warps and
# blocks) on the one-thread medium path (8378d37: f0a898e's code); then
# bench_stream up to 64 KiB (stream-enqueue ping-pong and exchange beside
# NCCL), bench_stream up to 64 MiB run by the GPU (MPIX_STREAM_PATH=auto)
# and by the host (=host), and bench_dev_p2p's full table, for the record.
# Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
timeout 90 "$MPIEXEC" -n 2 bench/bench_stream -m 65536 >"$OUT/bench_stream.txt" 2>&1
echo "-- bench_stream -m 65536: exit $?"; cat "$OUT/bench_stream.txt"
for sp in auto host; do
  MPIX_STREAM_PATH=$sp timeout 90 "$MPIEXEC" -n 2 bench/bench_stream -m 67108864 >"$OUT/bench_stream_large_$sp.txt" 2>&1
  echo "-- bench_stream -m 67108864, MPIX_STREAM_PATH=$sp: exit $?"; cat "$OUT/bench_stream_large_$sp.txt"
done
timeout 90 "$MPIEXEC" -n 2 bench/bench_dev_p2p "$OUT/bench_dev_p2p.csv" >"$OUT/bench_dev_p2p.txt" 2>&1
echo "-- bench_dev_p2p: exit $?"; cat "$OUT/bench_dev_p2p.txt"
for tool in memcheck racecheck; do
  DEV_P2P_SMALL=1 timeout 200 "$MPIEXEC" -n 2 compute-sanitizer --tool $tool --error-exitcode 9 test/gpu/dev_p2p \
    >"$OUT/sanitizer-dev_p2p-$tool.log" 2>&1
  echo "-- compute-sanitizer $tool dev_p2p (2 ranks, DEV_P2P_SMALL): exit $?"; tail -n 3 "$OUT/sanitizer-dev_p2p-$tool.log"
done
