# Session 17, call 8 (two H200s): the review mend (bench/gpu_span.h shared
# by bench_dev_p2p and bench_nvshmem): bench_dev_p2p rebuilt from this tree
# (extra/bench_dev_p2p_mend), its rate, a2a and allself rows with their
# span lines; bench_nvshmem built here from this tree (nvshmem_baseline).
# Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
ex=$PWD/extra
xz -dc "$ex/bench_dev_p2p_mend.xz" >"$ex/bench_dev_p2p_mend" && chmod +x "$ex/bench_dev_p2p_mend" ||
  { echo "unpack failed"; return 1; }
BENCH_DEV_ONLY=rate,a2a,allself timeout 90 "$MPIEXEC" -n 2 "$ex/bench_dev_p2p_mend" "$OUT/mend.csv" >"$OUT/mend.txt" 2>&1
echo "-- bench_dev_p2p rate,a2a,allself (mend): exit $?"; grep -E "^rate|^a2a|span|corrupt" "$OUT/mend.txt"
nvshmem_baseline | grep -E "^a2a|span|build failed|not found|error"
