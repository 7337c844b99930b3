# Session 9, call 5: the grouped wait kernel under the sanitizers (2 ranks, a GPU each).
# Run on the GPU machine as: MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
for tool in memcheck racecheck; do
  ALL_PAIRS_SMALL=1 timeout 200 $MPIEXEC -n 2 compute-sanitizer --tool $tool --error-exitcode 9 test/gpu/all_pairs >"$OUT/san-all_pairs-$tool.log" 2>&1
  echo "$tool all_pairs 2 ranks: exit $?"; grep -E "SUMMARY|No Errors|Found" "$OUT/san-all_pairs-$tool.log"
done
