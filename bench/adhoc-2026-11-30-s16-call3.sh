# Session 16, call 3 (two H200s, one rank per GPU), issue 26: one thread's
# medium send with 6ff8366 (the ring's tail and credit loaded at once, the
# payload's first batch loaded before the claims) against f0a898e
# (extra/bench_dev_p2p_f0a, the same program one commit earlier):
# bench_dev_p2p latency and per-call rows, 3 alternating rounds; NVSHMEM's
# put+signal in the same call; then the whole GPU testlist (run.sh's
# sublist stage, after this).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
xz -dc "$ex/bench_dev_p2p_f0a.xz" > "$ex/bench_dev_p2p_f0a" && chmod +x "$ex/bench_dev_p2p_f0a" || { echo "unpack failed"; return 1; }
for round in 1 2 3; do
  for who in new f0a; do
    prog=bench/bench_dev_p2p
    [ $who = new ] || prog=$ex/bench_dev_p2p_$who
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
