# Session 16, call 7 (two H200s, one rank per GPU), issue 26: the review
# mend b08684c (the medium lines' split and merge named once, put1/get1
# finding a slot's first line by mpixd_mid_line) against 8378d37's build
# (extra/bench_dev_p2p_main): bench_dev_p2p latency and per-call rows, 2
# alternating rounds; NVSHMEM through run.sh's new nvshmem_baseline; then
# the device-initiated, stream-kernel and all_pairs entries of the GPU
# testlist (run.sh's sublist stage).
# Run on the GPU machine as:
#   MPIX_SUBLIST='(dev_p2p|dev_reuse|all_pairs|stream_kernel)' MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
xz -dc "$ex/bench_dev_p2p_main.xz" > "$ex/bench_dev_p2p_main" && chmod +x "$ex/bench_dev_p2p_main" || { echo "unpack failed"; return 1; }
for round in 1 2; do
  for who in mend main; do
    prog=bench/bench_dev_p2p
    [ $who = mend ] || prog=$ex/bench_dev_p2p_$who
    BENCH_DEV_ONLY=latency,call timeout 60 "$MPIEXEC" -n 2 "$prog" "$OUT/dev_${who}_r$round.csv" \
      >"$OUT/dev_${who}_r$round.txt" 2>&1
    echo "-- device latency and calls, $who, round $round: exit $?"
    grep -E "^latency +ipc +[0-9]+ |^call/" "$OUT/dev_${who}_r$round.txt" | grep -vE " (131072|524288|2097152|8388608) "
  done
done
nvshmem_baseline | grep -E "^putsig |build failed|not found"
