# Session 22, call 5 (two H200s, one rank per GPU), issue 26: the pulled
# Isend's post timed step by step (claim, entry words, key's release store:
# extra/libmpix_stage.so.0.xz, a -DMPIX_STAGE_TRACE build), in the halo
# exchange with and without the stencil.
# Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
ex=$PWD/extra
mkdir -p "$ex/stage"
xz -dc "$ex/libmpix_stage.so.0.xz" > "$ex/stage/libmpix.so.0" || { echo "unpack failed"; return 1; }
mkdir -p "$OUT/st"
for run in stream_1024:stream:1024 exchange_1024:exchange:1024 stream_4096:stream:4096; do
  IFS=: read -r name v n <<< "$run"
  LD_LIBRARY_PATH=$ex/stage:$LD_LIBRARY_PATH MPIX_STAGE_TRACE_FILE=$OUT/st/$name timeout 120 \
    "$MPIEXEC" -n 2 bench/bench_jacobi -s $n -v $v > "$OUT/st/$name.txt" 2>&1
  echo "-- staged $name: exit $?, $(cat "$OUT/st/$name".[0-9]* 2>/dev/null | wc -l) records"
  grep -vE "^csv," "$OUT/st/$name.txt" | tail -n 3
done
(cd "$OUT" && tar czf st.tgz st && rm -rf st)
