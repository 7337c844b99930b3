# Session 17, call 7 (two H200s, one rank per GPU), issue 26: call 6's
# profile had the all-to-all's key-table lookups run one lane at a time
# (the probe loop executed ~111 times per warp entry where its lanes need
# 1.4 probes each): the previous round's test loop leaves each warp's
# lanes diverged, so MPIX_Irecv/MPIX_Isend run lane by lane. The same
# benchmark with __syncwarp() at the top of each round (extra/
# bench_dev_p2p_sw, built with -DA2A_SYNCWARP) against call 6's
# (extra/bench_dev_p2p_self): a2a/2gpu and a2a/self, default lane tags and
# every tag in lanes, 2 alternating rounds; NVSHMEM's all-to-all beside.
# Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
ex=$PWD/extra
for v in self sw; do
  xz -dc "$ex/bench_dev_p2p_$v.xz" >"$ex/bench_dev_p2p_$v" && chmod +x "$ex/bench_dev_p2p_$v" ||
    { echo "unpack failed"; return 1; }
done
for round in 1 2; do
  for v in sw self; do
    for lanes in default 65536; do
      env=()
      [ $lanes = default ] || env=(MPIX_DEVICE_LANE_TAGS=$lanes)
      env "${env[@]}" BENCH_DEV_ONLY=a2a,allself timeout 90 "$MPIEXEC" -n 2 "$ex/bench_dev_p2p_$v" \
        "$OUT/a2a_${v}_${lanes}_r$round.csv" >"$OUT/a2a_${v}_${lanes}_r$round.txt" 2>&1
      echo "-- a2a,allself $v, lane tags $lanes, round $round: exit $?"
      grep -E "^a2a|corrupt|skipped" "$OUT/a2a_${v}_${lanes}_r$round.txt"
    done
  done
done
nvshmem_baseline | grep -E "^a2a|span|build failed|not found"
