# Session 24, call 6 (nvidia-h200: one H200, a 16-core host), issue 27: the
# 8 B streaming rate against native MPICH once more, 10 alternating rounds
# (call 5 had 5, and this host's rounds spread 36-73 MB/s), without a CUDA
# context (a plain MPI program) and with one (-c), 0832853's library.
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
host_bench_tools
mylib=$lib
nproc; uptime
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_pingpong" bench/bench_pingpong.c -ldl || echo "bench_pingpong: build failed"
for round in 1 2 3 4 5 6 7 8 9 10; do
  for who in native mpix native-c mpix-c; do
    pre=(); c=
    case $who in mpix*) pre=(-genv LD_PRELOAD "$mylib") ;; esac
    case $who in *-c) c=-c ;; esac
    timeout 60 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_pingpong" $c -m 8 -M 8 -r 5 -s -l $who \
      -o "$OUT/pp_${who}_r$round.csv" >"$OUT/pp_${who}_r$round.txt" 2>&1
    echo "-- pingpong $who round $round: exit $? $(grep -E '^ +8 ' "$OUT/pp_${who}_r$round.txt")"
  done
done
