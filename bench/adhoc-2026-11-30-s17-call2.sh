# Session 17, call 2 (two H200s, one rank per GPU), issue 26: the stream
# enqueue ping-pong from 4 to 32 KiB (bench_stream, NCCL beside it), where
# call 1 had 16 KiB (medium, 10.75 us) slower than 24 KiB (pulled, 9.13 us):
#   scan16 this bundle (de9fcd2): a medium sender scans 16 slot marks per
#          round trip when its ring looks full (a 16 KiB message needs 32);
#   scan32 the same with MPIXD_MID_SCAN 32 (extra/scan32/libmpix.so.0);
# each with the pull bound at its default (16385) and at 8193
# (MPIX_STREAM_PULL_MIN), 2 alternating rounds; bench_dev_p2p's latency
# rows with scan32 (extra/bench_dev_p2p_scan32) against this bundle's.
# Then the whole GPU testlist on de9fcd2 (run.sh's sublist stage).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
mkdir -p "$ex/scan32"
xz -dc "$ex/libmpix.so.0.scan32.xz" >"$ex/scan32/libmpix.so.0" &&
  xz -dc "$ex/bench_dev_p2p_scan32.xz" >"$ex/bench_dev_p2p_scan32" && chmod +x "$ex/bench_dev_p2p_scan32" ||
  { echo "unpack failed"; return 1; }
sizes=4096,8192,12288,16384,20480,24576,32768
for round in 1 2; do
  for who in scan16 scan32; do
    lib=$LD_LIBRARY_PATH prog=bench/bench_dev_p2p
    [ $who = scan16 ] || { lib=$ex/scan32:$LD_LIBRARY_PATH; prog=$ex/bench_dev_p2p_scan32; }
    for pull in 16385 8193; do
      MPIX_STREAM_PULL_MIN=$pull LD_LIBRARY_PATH=$lib timeout 90 "$MPIEXEC" -n 2 bench/bench_stream -S $sizes \
        >"$OUT/stream_${who}_pull${pull}_r$round.txt" 2>&1
      echo "-- bench_stream -S $sizes, $who, MPIX_STREAM_PULL_MIN=$pull, round $round: exit $?"
      grep -E "^ +[0-9]+ +[0-9.]+ " "$OUT/stream_${who}_pull${pull}_r$round.txt"
    done
    BENCH_DEV_ONLY=latency LD_LIBRARY_PATH=$lib timeout 90 "$MPIEXEC" -n 2 "$prog" \
      "$OUT/dev_${who}_r$round.csv" >"$OUT/dev_${who}_r$round.txt" 2>&1
    echo "-- bench_dev_p2p latency, $who, round $round: exit $?"
    grep -E "^latency +ipc" "$OUT/dev_${who}_r$round.txt" | grep -vE " (131072|524288|2097152|8388608) "
  done
done
