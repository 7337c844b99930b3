# Session 22, call 3 (two H200s, one rank per GPU), issue 26: the halo
# exchange with its 8 KiB + 16 B rows pulled (MPIX_STREAM_PULL_MIN=8193, the
# default) and as medium lines (16385), untraced, 2 alternating rounds; then
# stage timestamps of the lines path (extra/libmpix_stage.so.0.xz, a
# -DMPIX_STAGE_TRACE build; bench/stage_timeline.py reads them).
# Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
ex=$PWD/extra
mkdir -p "$ex/stage"
xz -dc "$ex/libmpix_stage.so.0.xz" > "$ex/stage/libmpix.so.0" || { echo "unpack failed"; return 1; }
for round in 1 2; do
  for pull in 8193 16385; do
    MPIX_STREAM_PULL_MIN=$pull timeout 120 "$MPIEXEC" -n 2 bench/bench_jacobi -s 1024,4096 \
      >"$OUT/jacobi_pull${pull}_r$round.txt" 2>&1
    echo "-- bench_jacobi, MPIX_STREAM_PULL_MIN=$pull, round $round: exit $?"
    grep -vE "^csv," "$OUT/jacobi_pull${pull}_r$round.txt" | tail -n 5
  done
done
mkdir -p "$OUT/st"
for run in stream_1024_lines:stream:1024 exchange_1024_lines:exchange:1024; do
  IFS=: read -r name v n <<< "$run"
  MPIX_STREAM_PULL_MIN=16385 LD_LIBRARY_PATH=$ex/stage:$LD_LIBRARY_PATH MPIX_STAGE_TRACE_FILE=$OUT/st/$name timeout 120 \
    "$MPIEXEC" -n 2 bench/bench_jacobi -s $n -v $v > "$OUT/st/$name.txt" 2>&1
  echo "-- staged $name: exit $?, $(cat "$OUT/st/$name".[0-9]* 2>/dev/null | wc -l) records"
  grep -vE "^csv," "$OUT/st/$name.txt" | tail -n 3
done
(cd "$OUT" && tar czf st.tgz st && rm -rf st)
