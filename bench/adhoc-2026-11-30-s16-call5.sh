# Session 16, call 5 (two H200s), issue 26: where one thread's medium send
# and receive spend their time, by Nsight Compute: bench_dev_p2p's per-call
# kernel (call_costs: one thread sends k messages of 8, 128 and 512 bytes
# to its own ring, then receives them) at 8378d37 (the bundle's own build,
# batches of 16 lines), full set with source-level sampling, and
# the SASS-level stall counts exported as CSV.
# Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
echo "ncu: $NCU"; "$NCU" --version | tail -1
BENCH_DEV_ONLY=call timeout 300 "$MPIEXEC" -n 2 "$NCU" --clock-control none --kernel-name call_costs \
  --launch-count 6 --set full --import-source yes -f -o "$OUT/call_costs_%p" bench/bench_dev_p2p \
  "$OUT/call.csv" >"$OUT/ncu_run.txt" 2>&1
echo "-- ncu run: exit $?"; grep -vE "^==PROF==" "$OUT/ncu_run.txt" | tail -20
for rep in "$OUT"/call_costs_*.ncu-rep; do
  [ -s "$rep" ] || continue
  "$NCU" -i "$rep" --page details --print-details all >"${rep%.ncu-rep}_details.txt" 2>&1
  "$NCU" -i "$rep" --page source --csv --print-source sass >"${rep%.ncu-rep}_sass.csv" 2>&1
  echo "-- $rep: details $(wc -l <"${rep%.ncu-rep}_details.txt") lines, sass $(wc -l <"${rep%.ncu-rep}_sass.csv") lines"
  grep -E "Duration|Warp Cycles Per Issued|Executed Instructions " "${rep%.ncu-rep}_details.txt" | head -20
done
