# Session 16, call 6 (two H200s, one rank per GPU), issue 26: one thread's
# medium messages as plain bytes (9306f0b, branch wip/mid-plain: the slots
# written as they are, a fence, the announcement) against the flagged lines
# (8378d37's build, extra/bench_dev_p2p_main): bench_dev_p2p latency and
# per-call rows, 3 alternating rounds; NVSHMEM's put+signal in the same
# call; compute-sanitizer memcheck and racecheck of dev_p2p (2 ranks,
# DEV_P2P_SMALL); then the whole GPU testlist (run.sh's sublist stage).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
xz -dc "$ex/bench_dev_p2p_main.xz" > "$ex/bench_dev_p2p_main" && chmod +x "$ex/bench_dev_p2p_main" || { echo "unpack failed"; return 1; }
for round in 1 2 3; do
  for who in plain main; do
    prog=bench/bench_dev_p2p
    [ $who = plain ] || prog=$ex/bench_dev_p2p_$who
    BENCH_DEV_ONLY=latency,call timeout 60 "$MPIEXEC" -n 2 "$prog" "$OUT/dev_${who}_r$round.csv" \
      >"$OUT/dev_${who}_r$round.txt" 2>&1
    echo "-- device latency and calls, $who, round $round: exit $?"
    grep -E "^latency +ipc +[0-9]+ |^call/" "$OUT/dev_${who}_r$round.txt" | grep -vE " (131072|524288|2097152|8388608) "
  done
done
NVSHMEM_HOME=${NVSHMEM_HOME:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem}
nvshmem_host=$(ls "$NVSHMEM_HOME"/lib/libnvshmem_host.so* 2>/dev/null | head -n 1)
if nvcc -rdc=true -arch=native -std=c++17 -O2 -I"$NVSHMEM_HOME/include" \
    -isystem "$MP/usr/include/x86_64-linux-gnu/mpich" bench/bench_nvshmem.cu -o /tmp/bench_nvshmem \
    -L"$NVSHMEM_HOME/lib" -lnvshmem_device -Xlinker "$nvshmem_host" -L"$MP/usr/lib/x86_64-linux-gnu" -lmpich \
    >"$OUT/bench_nvshmem_build.log" 2>&1; then
  LD_LIBRARY_PATH=$NVSHMEM_HOME/lib:$LD_LIBRARY_PATH timeout 120 "$MPIEXEC" -n 2 /tmp/bench_nvshmem \
    "$OUT/bench_nvshmem.csv" >"$OUT/bench_nvshmem.txt" 2>&1
  echo "-- nvshmem: exit $?"; grep -E "^putsig" "$OUT/bench_nvshmem.txt"
else
  echo "bench_nvshmem: build failed"; tail -n 5 "$OUT/bench_nvshmem_build.log"
fi
for tool in memcheck racecheck; do
  DEV_P2P_SMALL=1 timeout 120 "$MPIEXEC" -n 2 compute-sanitizer --tool $tool --error-exitcode 9 test/gpu/dev_p2p \
    >"$OUT/sanitizer-dev_p2p-$tool.log" 2>&1
  echo "-- compute-sanitizer $tool dev_p2p (2 ranks, DEV_P2P_SMALL): exit $?"; tail -n 3 "$OUT/sanitizer-dev_p2p-$tool.log"
done
