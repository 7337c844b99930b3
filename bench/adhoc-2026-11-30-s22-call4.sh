# Session 22, call 4 (two H200s, one rank per GPU), issue 26: receives a
# wait starts are looked for (and taken, when that stores nothing into the
# buffer) before the previous kernel is done (prematch in
# device/stream_exec.cu), against the same code without it
# (extra/libmpix_old.so.0.xz, this session's call 1-3 build): the halo
# exchange with pulled (8193) and medium-line (16385) rows, and bench_stream's
# exchange columns (-x 1: Irecv, Isend, Waitall), 2 alternating rounds; then
# stage timestamps of the new build (extra/libmpix_stage.so.0.xz).
# Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
ex=$PWD/extra
for v in old stage; do
  mkdir -p "$ex/$v"
  xz -dc "$ex/libmpix_$v.so.0.xz" > "$ex/$v/libmpix.so.0" || { echo "unpack failed"; return 1; }
done
for round in 1 2; do
  for lib in new old; do
    lp=$LD_LIBRARY_PATH
    [ $lib = old ] && lp=$ex/old:$LD_LIBRARY_PATH
    for pull in 8193 16385; do
      LD_LIBRARY_PATH=$lp MPIX_STREAM_PULL_MIN=$pull timeout 120 "$MPIEXEC" -n 2 bench/bench_jacobi -s 1024,4096 \
        >"$OUT/jacobi_${lib}_pull${pull}_r$round.txt" 2>&1
      echo "-- bench_jacobi $lib, MPIX_STREAM_PULL_MIN=$pull, round $round: exit $?"
      grep -vE "^csv,|^#" "$OUT/jacobi_${lib}_pull${pull}_r$round.txt" | tail -n 5
    done
    LD_LIBRARY_PATH=$lp timeout 120 "$MPIEXEC" -n 2 bench/bench_stream -S 512,8192,16384,32768 -x 1 \
      >"$OUT/stream_${lib}_r$round.txt" 2>&1
    echo "-- bench_stream -x 1 $lib, round $round: exit $?"
    grep -vE "^csv,|^#" "$OUT/stream_${lib}_r$round.txt" | tail -n 6
  done
done
mkdir -p "$OUT/st"
for run in stream_1024:stream:1024:8193 stream_1024_lines:stream:1024:16385 exchange_1024:exchange:1024:8193; do
  IFS=: read -r name v n pull <<< "$run"
  MPIX_STREAM_PULL_MIN=$pull LD_LIBRARY_PATH=$ex/stage:$LD_LIBRARY_PATH MPIX_STAGE_TRACE_FILE=$OUT/st/$name timeout 120 \
    "$MPIEXEC" -n 2 bench/bench_jacobi -s $n -v $v > "$OUT/st/$name.txt" 2>&1
  echo "-- staged $name: exit $?, $(cat "$OUT/st/$name".[0-9]* 2>/dev/null | wc -l) records"
  grep -vE "^csv," "$OUT/st/$name.txt" | tail -n 3
done
(cd "$OUT" && tar czf st.tgz st && rm -rf st)
