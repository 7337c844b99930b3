# Session 9, call 2 (x4): grouped wait kernel; proposed defaults PULL_MIN=16385 + nonblocking pulls.
# Run on the GPU machine as: MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
E="$MPIEXEC"
export MPIX_STREAM_PULL_MIN=16385 MPIX_STREAM_PULL_NONBLOCKING=on
echo "--- all_pairs 4 ranks with the proposed defaults"
timeout 120 $E -n 4 test/gpu/all_pairs 2>&1 | tail -n 15; echo "exit ${PIPESTATUS[0]}"
echo "--- stream_kernel 2 ranks with the proposed defaults"
STREAM_TEST_SMALL=1 timeout 150 $E -n 2 test/gpu/stream_kernel 2>&1 | tail -n 15; echo "exit ${PIPESTATUS[0]}"
echo "--- exchange + ping-pong, proposed defaults (grouped wait kernel)"
timeout 150 stdbuf -oL $E -n 2 bench/bench_stream -x 1 -S 8192,16385,32768,65536,262144,1048576,4194304,16777216,67108864 | grep -v ^csv; echo "exit $?"
echo "--- jacobi 4 ranks, proposed defaults"
timeout 150 stdbuf -oL $E -n 4 bench/bench_jacobi -s 1024,4096 | grep -v ^csv; echo "exit $?"
echo "--- jacobi 2 ranks, proposed defaults"
timeout 150 stdbuf -oL $E -n 2 bench/bench_jacobi -s 1024,4096 | grep -v ^csv; echo "exit $?"
echo "--- jacobi 4 ranks, old defaults"
MPIX_STREAM_PULL_MIN=4194304 MPIX_STREAM_PULL_NONBLOCKING=off timeout 150 stdbuf -oL $E -n 4 bench/bench_jacobi -s 1024,4096 | grep -v ^csv; echo "exit $?"
