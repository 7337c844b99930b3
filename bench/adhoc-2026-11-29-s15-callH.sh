# Session 15, call H (two H200s, one rank per GPU), issue 26: one thread's
# medium messages by mpixd_mid_put1/get1 (4b5e7d7) against the general
# lane-count code (a1f3721's build, extra/bench_dev_p2p_old): bench_dev_p2p
# latency and per-call rows, 2 alternating rounds; then the GPU testlist's
# device-initiated, stream-kernel and all_pairs entries (sublist stage).
# Run on the GPU machine as:
#   MPIX_SUBLIST='(dev_p2p|dev_reuse|all_pairs|stream_kernel)' MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
xz -dc "$ex/bench_dev_p2p_old.xz" > "$ex/bench_dev_p2p_old" && chmod +x "$ex/bench_dev_p2p_old" || { echo "unpack failed"; return 1; }
for round in 1 2; do
  for who in new old; do
    prog=bench/bench_dev_p2p
    [ $who = old ] && prog=$ex/bench_dev_p2p_old
    BENCH_DEV_ONLY=latency,call timeout 60 "$MPIEXEC" -n 2 "$prog" "$OUT/dev_${who}_r$round.csv" \
      >"$OUT/dev_${who}_r$round.txt" 2>&1
    echo "-- device latency and calls, $who, round $round: exit $?"
    grep -E "^latency +ipc +[0-9]+ |^call/" "$OUT/dev_${who}_r$round.txt" | grep -vE " (131072|524288|2097152|8388608) "
  done
done
