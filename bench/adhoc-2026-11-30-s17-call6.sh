# Session 17, call 6 (two H200s), issue 26: what a device-initiated
# all-to-all message costs, by Nsight Compute. bench_dev_p2p's new
# `allself` part runs the all-to-all kernel (a2a_ipc) on one GPU, every
# thread exchanging 8-byte tagged messages with itself (one process, so the
# kernel can be replayed); its second launch is profiled with the full set
# and the SASS-level counts exported as CSV (instructions by opcode per
# message). Before it, the rows themselves: a2a/self and the two-GPU a2a,
# default and with every tag in lanes (MPIX_DEVICE_LANE_TAGS=65536).
# The bundle is 5097b98's with bench_dev_p2p rebuilt from this tree
# (extra/bench_dev_p2p_self).
# Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
ex=$PWD/extra
xz -dc "$ex/bench_dev_p2p_self.xz" >"$ex/bench_dev_p2p_self" && chmod +x "$ex/bench_dev_p2p_self" ||
  { echo "unpack failed"; return 1; }
for lanes in default 65536; do
  env=()
  [ $lanes = default ] || env=(MPIX_DEVICE_LANE_TAGS=$lanes)
  env "${env[@]}" BENCH_DEV_ONLY=a2a,allself timeout 90 "$MPIEXEC" -n 2 "$ex/bench_dev_p2p_self" "$OUT/a2a_$lanes.csv" \
    >"$OUT/a2a_$lanes.txt" 2>&1
  echo "-- bench_dev_p2p a2a,allself, lane tags $lanes: exit $?"; grep -E "^a2a|span|corrupt|skipped" "$OUT/a2a_$lanes.txt"
done
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
echo "ncu: $NCU"
BENCH_DEV_ONLY=allself timeout 240 "$MPIEXEC" -n 2 "$NCU" --clock-control none --kernel-name a2a_ipc \
  --launch-skip 1 --launch-count 1 --set full --import-source yes -f -o "$OUT/a2a_self_%p" \
  "$ex/bench_dev_p2p_self" "$OUT/ncu.csv" >"$OUT/ncu_run.txt" 2>&1
echo "-- ncu run: exit $?"; grep -vE "^==PROF==" "$OUT/ncu_run.txt" | tail -8
for rep in "$OUT"/a2a_self_*.ncu-rep; do
  [ -s "$rep" ] || continue
  "$NCU" -i "$rep" --page details --print-details all >"${rep%.ncu-rep}_details.txt" 2>&1
  "$NCU" -i "$rep" --page source --csv --print-source sass >"${rep%.ncu-rep}_sass.csv" 2>&1
  echo "-- $rep: details $(wc -l <"${rep%.ncu-rep}_details.txt") lines, sass $(wc -l <"${rep%.ncu-rep}_sass.csv") lines"
  grep -E "Duration|Warp Cycles Per Issued|Executed Instructions |Memory Throughput|L2 Hit|Block Size|Grid Size" \
    "${rep%.ncu-rep}_details.txt" | head -20
done
