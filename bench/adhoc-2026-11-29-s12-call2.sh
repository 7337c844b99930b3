# Session 12, calls 2 and 3 (one H200's 16-core host; call 2 then ran the
# GPU testlist), issue 27: where the streaming time goes on each rank
# (bench_pingpong -s: ns per message posting the window, in its
# MPI_Waitall, waiting for the window's acknowledgement), native MPICH, s12
# (956419a) and s11 (the eleventh session's 0a966c2), 8 B - 64 B, three
# alternating rounds; then ping-pong, streaming and bidirectional at 8 B -
# 1 KiB, 5 alternating rounds (native, s12, s12a = bba409f, s11). The
# libraries built without CUDA, carried in .gpu-bundle/extra/. In call 2
# the libraries were misplaced in the bundle (extra/extra/): every run
# there was native (ld.so: cannot be preloaded), which measured native's
# own spread; call 3 ran it as now. Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
host_bench_tools
ex=$PWD/extra
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_pingpong" bench/bench_pingpong.c -ldl
for f in "$ex"/libmpix-*.so; do [ -e "$f" ] || { echo "missing $f"; return 1; }; done
for round in 1 2 3; do
  for who in native s12 s11; do
    pre=(env -u LD_PRELOAD)
    [ $who = native ] || pre=(env LD_PRELOAD="$ex/libmpix-$who-nocuda.so")
    timeout 40 "$MPIEXEC" -n 2 -bind-to core "${pre[@]}" "$OUT/bench_pingpong" -m 8 -M 64 -r 5 -i 20000 -s \
      >"$OUT/split_${who}_r$round.txt" 2>&1
    echo "-- split $who round $round: exit $?"; grep -E "^# stream split|^ +[0-9]+ " "$OUT/split_${who}_r$round.txt"
  done
done
PP_ARGS="-m 8 -M 1024 -r 5 -i 20000" MPICC="$MP/mpicc" MPIEXEC="$MPIEXEC" timeout 240 bench/run_p2p_benchmarks.sh \
  -s pingpong -R 5 -V "s12a:LD_PRELOAD=$ex/libmpix-s12a-nocuda.so" \
  -V "s11:LD_PRELOAD=$ex/libmpix-s11-nocuda.so" -o "$OUT/p2p-s12" \
  "$ex/libmpix-s12-nocuda.so" >"$OUT/p2p_s12.txt" 2>&1
echo "-- run_p2p_benchmarks: exit $?"
tail -n 16 "$OUT/p2p_s12.txt"
