# Session 24, calls 2 and 5 (nvidia-h200: one H200, a 16-core host): a CUDA
# application's host messages. bench_pingpong -c (a CUDA context current in
# each rank, buffers in host memory, as a GPU code's host messages) at 8 B:
# native MPICH, mpix with MPIX_GPU_HOST_RANGES=on (the default: buffers in
# the brk heap, static data and stacks answered without the driver) and
# =off (every send and receive asks cuPointerGetAttributes), plus native
# and mpix without -c (no context: the queries answer "not initialised"),
# 5 alternating rounds; then one sweep 1 B - 64 KiB per -c variant; then
# the whole GPU testlist (run.sh's sublist stage, after this): device
# buffers must still be found.
# Run on the GPU machine as:
#   MPIX_SUBLIST=. MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc sublist
host_bench_tools
mylib=$lib
nproc; uptime
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_pingpong" bench/bench_pingpong.c -ldl || echo "bench_pingpong: build failed"
run_pp() {  # LABEL ARGS...
  local who=$1; shift
  local pre=() c=-c
  case $who in
    native) ;;
    native-noctx) c= ;;
    on|off) pre=(-genv LD_PRELOAD "$mylib" -genv MPIX_GPU_HOST_RANGES $who) ;;
    mpix-noctx) pre=(-genv LD_PRELOAD "$mylib"); c= ;;
  esac
  timeout 60 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_pingpong" $c "$@" -l $who
}
for round in 1 2 3 4 5; do
  for who in native on off native-noctx mpix-noctx; do
    run_pp $who -m 8 -M 8 -r 5 -s -o "$OUT/pp_${who}_r$round.csv" >"$OUT/pp_${who}_r$round.txt" 2>&1
    echo "-- pingpong $who round $round: exit $? $(grep -E '^ +8 |stream split|CUDA' "$OUT/pp_${who}_r$round.txt" | tr '\n' ' ')"
  done
done
for who in native on off; do
  run_pp $who -m 1 -M 65536 -r 3 -o "$OUT/sweep_${who}.csv" >"$OUT/sweep_${who}.txt" 2>&1
  echo "-- sweep $who: exit $?"; grep -vE "^csv" "$OUT/sweep_${who}.txt" | tail -n 20
done
