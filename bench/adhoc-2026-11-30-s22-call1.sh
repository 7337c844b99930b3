# Session 22, call 1 (two H200s, one rank per GPU), issue 26: where the
# stream-triggered halo exchange and the medium enqueue ping-pong spend their
# time against NCCL, read from kernel timelines (bench/libktrace.so: CUPTI
# kernel records, the GPU machine having no Nsight Systems), with the
# untraced figures of the same build beside them.
# Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
KT=$PWD/bench/libktrace.so
traced() {  # NAME COMMAND...: the command under the tracer, CSVs in $OUT/kt/NAME
  local name=$1
  shift
  mkdir -p "$OUT/kt/$name"
  CUDA_INJECTION64_PATH=$KT KTRACE_DIR=$OUT/kt/$name timeout 120 "$@" >"$OUT/kt/$name.txt" 2>&1
  echo "-- traced $name: exit $?, $(cat "$OUT/kt/$name"/*.csv 2>/dev/null | wc -l) records"
  grep -vE "^csv," "$OUT/kt/$name.txt" | tail -n 6
}
for round in 1 2; do
  timeout 120 "$MPIEXEC" -n 2 bench/bench_jacobi -s 1024,4096 >"$OUT/jacobi_r$round.txt" 2>&1
  echo "-- bench_jacobi untraced, round $round: exit $?"
  grep -vE "^csv," "$OUT/jacobi_r$round.txt" | tail -n 6
done
for v in stream nccl exchange; do
  traced "jacobi_${v}_1024" "$MPIEXEC" -n 2 bench/bench_jacobi -s 1024 -v $v
  traced "jacobi_${v}_4096" "$MPIEXEC" -n 2 bench/bench_jacobi -s 4096 -v $v
done
traced "stream_pp" "$MPIEXEC" -n 2 bench/bench_stream -S 512,8192,16384,32768 -n 300
KTRACE_API=1 traced "jacobi_stream_1024_api" "$MPIEXEC" -n 2 bench/bench_jacobi -s 1024 -v stream
KTRACE_API=1 traced "jacobi_nccl_1024_api" "$MPIEXEC" -n 2 bench/bench_jacobi -s 1024 -v nccl
(cd "$OUT" && tar czf kt.tgz kt && rm -rf kt)
