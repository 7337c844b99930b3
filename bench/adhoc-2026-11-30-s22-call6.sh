# Session 22, call 6 (two H200s, one rank per GPU), issue 26: a pulled
# message announced without the release (mpixd_post_pull: one fence first,
# then the entry's words and its cell as single-copy atomics, each word
# carrying the message's number) against the code before it
# (extra/libmpix_old.so.0.xz, calls 1-3's build): the enqueue ping-pong
# (pulled from 8 KiB + 1 by default, and from 4 KiB + 1) and the halo
# exchange, 2 alternating rounds; stage marks of the new build
# (extra/libmpix_stage.so.0.xz); compute-sanitizer memcheck of stream_kernel
# and racecheck of dev_p2p; then the whole GPU testlist (run.sh's sublist
# stage, after this).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
for v in old stage; do
  mkdir -p "$ex/$v"
  xz -dc "$ex/libmpix_$v.so.0.xz" > "$ex/$v/libmpix.so.0" || { echo "unpack failed"; return 1; }
done
for round in 1 2; do
  for lib in new old; do
    lp=$LD_LIBRARY_PATH
    [ $lib = old ] && lp=$ex/old:$LD_LIBRARY_PATH
    for pull in 8193 4097; do
      LD_LIBRARY_PATH=$lp MPIX_STREAM_PULL_MIN=$pull timeout 120 "$MPIEXEC" -n 2 bench/bench_stream \
        -S 512,4096,6144,8192,12288,16384,24576,32768 >"$OUT/stream_${lib}_pull${pull}_r$round.txt" 2>&1
      echo "-- bench_stream $lib, MPIX_STREAM_PULL_MIN=$pull, round $round: exit $?"
      grep -vE "^csv,|^#" "$OUT/stream_${lib}_pull${pull}_r$round.txt" | tail -n 9
    done
    LD_LIBRARY_PATH=$lp timeout 120 "$MPIEXEC" -n 2 bench/bench_jacobi -s 1024,4096 >"$OUT/jacobi_${lib}_r$round.txt" 2>&1
    echo "-- bench_jacobi $lib, round $round: exit $?"
    grep -vE "^csv,|^#" "$OUT/jacobi_${lib}_r$round.txt" | tail -n 5
  done
done
mkdir -p "$OUT/st"
LD_LIBRARY_PATH=$ex/stage:$LD_LIBRARY_PATH MPIX_STAGE_TRACE_FILE=$OUT/st/stream_1024 timeout 120 \
  "$MPIEXEC" -n 2 bench/bench_jacobi -s 1024 -v stream > "$OUT/st/stream_1024.txt" 2>&1
echo "-- staged stream_1024: exit $?"
(cd "$OUT" && tar czf st.tgz st && rm -rf st)
STREAM_TEST_SMALL=1 timeout 150 "$MPIEXEC" -n 2 compute-sanitizer --tool memcheck --error-exitcode 9 test/gpu/stream_kernel \
  >"$OUT/sanitizer-stream_kernel-memcheck.log" 2>&1
echo "-- compute-sanitizer memcheck stream_kernel (2 ranks, STREAM_TEST_SMALL): exit $?"
tail -n 3 "$OUT/sanitizer-stream_kernel-memcheck.log"
STREAM_TEST_SMALL=1 timeout 150 "$MPIEXEC" -n 2 compute-sanitizer --tool racecheck --error-exitcode 9 test/gpu/stream_kernel \
  >"$OUT/sanitizer-stream_kernel-racecheck.log" 2>&1
echo "-- compute-sanitizer racecheck stream_kernel (2 ranks, STREAM_TEST_SMALL): exit $?"
tail -n 3 "$OUT/sanitizer-stream_kernel-racecheck.log"
