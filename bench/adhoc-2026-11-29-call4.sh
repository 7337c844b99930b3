# Session 10, call 4 (one H200): issue 25's out-of-bounds read in the
# resident copy kernel, sought under every setting of p2p_kernel_copy's
# testlist entries with the kernel on (memcheck, two ranks on the one GPU,
# no MPS, two runs each), and racecheck of the kernel once.
# Run on the GPU machine as: MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sanitize-two
k=0
for settings in "MPIX_VERBOSE=1" "MPIX_GPU_NODE_EAGER_LIMIT=8192" \
    "MPIX_TRANSPORT=pmpi MPIX_GPU_KERNEL_COPY_MAX=64 MPIX_GPU_KERNEL_COPY_IDLE_US=5" \
    "MPIX_GPU_BUFFER_AFTER_US=1" "MPIX_GPU_PATH=staging"; do
  for rep in 1 2; do
    k=$((k + 1))
    timeout 150 $MPIEXEC -n 2 env $settings compute-sanitizer --tool memcheck --error-exitcode 9 \
      --show-backtrace device test/gpu/p2p_kernel_copy >"$OUT/san-kcopy-$k.log" 2>&1
    echo "memcheck p2p_kernel_copy [$settings] run $rep: exit $? ($(grep -c 'ERROR SUMMARY: 0 errors' "$OUT/san-kcopy-$k.log") of 2 ranks clean)"
  done
done
timeout 200 $MPIEXEC -n 2 compute-sanitizer --tool racecheck --error-exitcode 9 test/gpu/p2p_kernel_copy >"$OUT/race-kcopy.log" 2>&1
echo "racecheck p2p_kernel_copy: exit $?"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY" "$OUT/race-kcopy.log"
