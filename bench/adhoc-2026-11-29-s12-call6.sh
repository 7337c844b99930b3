# Session 12, call 6 (one H200's 16-core host, no GPU work), issue 27: the
# test-and-set engine lock's spin (s12c = b11cb14, built without CUDA,
# .gpu-bundle/extra/): bench_threads with MPIX_LOCK_SPINS at its default
# (32), 0 (yield at once) and 1024, two alternating rounds; and the
# 8 B streaming split (bench_pingpong -s) once more, native and s12c.
# Run on the GPU machine as: MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
host_bench_tools
ex=$PWD/extra
[ -e "$ex/libmpix-s12c-nocuda.so" ] || { echo "missing s12c"; return 1; }
"$MP/mpicc" -O2 -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread
for round in 1 2; do
  for spins in 32 0 1024; do
    timeout 50 "$MPIEXEC" -n 2 -bind-to none env MPIX_LOCK_SPINS=$spins LD_PRELOAD="$ex/libmpix-s12c-nocuda.so" \
      "$OUT/bench_threads" -m ordered,region -t 1,2,4,8 -i 500 -r 5 -l "spins$spins" \
      -o "$OUT/threads_spins${spins}_r$round.csv" >"$OUT/threads_spins${spins}_r$round.txt" 2>&1
    echo "-- threads MPIX_LOCK_SPINS=$spins round $round: exit $?"; grep -E "^(ordered|region) " "$OUT/threads_spins${spins}_r$round.txt"
  done
done
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_pingpong" bench/bench_pingpong.c -ldl
for round in 1 2; do
  for who in native s12c; do
    pre=(env -u LD_PRELOAD)
    [ $who = native ] || pre=(env LD_PRELOAD="$ex/libmpix-$who-nocuda.so")
    timeout 30 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_pingpong" -m 8 -M 8 -r 5 -i 20000 -s \
      >"$OUT/split_${who}_r$round.txt" 2>&1
    echo "-- split $who round $round: exit $?"; grep -E "^# (mpix|stream split)|^ +[0-9]+ " "$OUT/split_${who}_r$round.txt"
  done
done
