# Session 10, call 2 (one H200): the resident copy kernel's out-of-bounds
# read that compute-sanitizer reported once in the ninth session (issue 25),
# sought with three memcheck runs of p2p_kernel_copy (two ranks on the one
# GPU, no MPS: the sanitizer does not run under MPS), full reports kept.
# Run on the GPU machine as: MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc bench-mid
for i in 1 2 3; do
  timeout 150 $MPIEXEC -n 2 compute-sanitizer --tool memcheck --error-exitcode 9 --show-backtrace device \
    test/gpu/p2p_kernel_copy >"$OUT/san-p2p_kernel_copy-$i.log" 2>&1
  echo "memcheck p2p_kernel_copy run $i: exit $?"; grep -E "ERROR SUMMARY|Invalid|out of bounds" "$OUT/san-p2p_kernel_copy-$i.log" | head -5
done
