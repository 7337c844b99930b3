# Session 15, call F (two H200s, one rank per GPU), issue 26: a receiving
# thread's medium message (33 B - 1 KiB by one thread in bench_dev_p2p's
# latency rows) with a6aee68 (a batch's stale lines reloaded together)
# against a1f3721 (each line's own spin; extra/bench_dev_p2p_old, the same
# program built one commit earlier), 3 alternating rounds of
# BENCH_DEV_ONLY=latency; NVSHMEM's put+signal ping-pong in the same call;
# then the whole GPU testlist (run.sh's sublist stage, after this).
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
ex=$PWD/extra
xz -dc "$ex/bench_dev_p2p_old.xz" > "$ex/bench_dev_p2p_old" && chmod +x "$ex/bench_dev_p2p_old" || { echo "unpack failed"; return 1; }
for round in 1 2 3; do
  for who in new old; do
    prog=bench/bench_dev_p2p
    [ $who = old ] && prog=$ex/bench_dev_p2p_old
    BENCH_DEV_ONLY=latency timeout 100 "$MPIEXEC" -n 2 "$prog" "$OUT/devlat_${who}_r$round.csv" \
      >"$OUT/devlat_${who}_r$round.txt" 2>&1
    echo "-- device latency $who round $round: exit $?"
    grep -E "^latency +(ipc|proxy) " "$OUT/devlat_${who}_r$round.txt" | head -24
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
  echo "-- nvshmem: exit $?"; cat "$OUT/bench_nvshmem.txt"
else
  echo "bench_nvshmem: build failed"; tail -n 5 "$OUT/bench_nvshmem_build.log"
fi
