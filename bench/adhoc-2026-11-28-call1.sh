# Session 9, call 1 (x4): the ring exchange that did not finish; pulls at 16 KiB+.
# Run on the GPU machine as: MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
mps_start
E="$MPIEXEC"
nvidia-smi -L
echo "--- ring exchange 4 MiB, PULL_MIN=0 (did it hang?)"
MPIX_STREAM_PULL_MIN=0 timeout 100 stdbuf -oL -eL $E -n 2 bench/bench_stream -x 1 -S 4194304,16777216; echo "exit $?"
echo "--- pulled exchange, nonblocking pulls on"
MPIX_STREAM_PULL_NONBLOCKING=on timeout 100 stdbuf -oL $E -n 2 bench/bench_stream -x 1 -S 4194304,16777216; echo "exit $?"
for pm in 4194304 16385 65536; do
  echo "--- enqueue ping-pong, PULL_MIN=$pm, nonblocking pulls on"
  MPIX_STREAM_PULL_MIN=$pm MPIX_STREAM_PULL_NONBLOCKING=on timeout 100 stdbuf -oL $E -n 2 bench/bench_stream -x 1 -S 16384,16385,32768,65536,262144,1048576 | grep -v ^csv; echo "exit $?"
  echo "--- jacobi 4 ranks, PULL_MIN=$pm, nonblocking pulls on"
  MPIX_STREAM_PULL_MIN=$pm MPIX_STREAM_PULL_NONBLOCKING=on timeout 150 stdbuf -oL $E -n 4 bench/bench_jacobi -s 1024,4096 | grep -v ^csv; echo "exit $?"
done
