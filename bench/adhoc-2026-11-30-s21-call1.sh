# Session 21, call 1 (nvidia-h200: one GPU, a 16-core host), before the GPU
# testlist (`sublist` with MPIX_SUBLIST=.): issue 27 on the host, the
# bundle's library with the engine lock biased to the application
# (MPIX_LOCK_BIAS=on, the default) against the same library with
# MPIX_LOCK_BIAS=off and native MPICH: bench_pingpong at 8 B (latency,
# streaming and bidirectional with a window of 64, -s: where each rank's
# streaming time goes), 5 alternating rounds; then lock_bias's counters
# under MPIX_VERBOSE=1 once.
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
host_bench_tools
mylib=$lib
nproc; uptime
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_pingpong" bench/bench_pingpong.c -ldl || echo "bench_pingpong: build failed"
for round in 1 2 3 4 5; do
  for who in native off on; do
    pre=""; [ $who != native ] && pre="-genv LD_PRELOAD $mylib -genv MPIX_LOCK_BIAS $who"
    timeout 60 "$MPIEXEC" -n 2 -bind-to core $pre "$OUT/bench_pingpong" -m 8 -M 8 -r 5 -s -l $who \
      -o "$OUT/pp_${who}_r$round.csv" >"$OUT/pp_${who}_r$round.txt" 2>&1
    echo "-- pingpong $who round $round: exit $? $(grep -E '^ +8 |stream split' "$OUT/pp_${who}_r$round.txt" | tr '\n' ' ')"
  done
done
timeout 60 "$MPIEXEC" -n 2 -bind-to core -genv LD_PRELOAD "$mylib" -genv MPIX_VERBOSE 1 "$OUT/bench_pingpong" -m 8 -M 8 -r 1 \
  2>&1 | grep -E "engine lock" | head -4
