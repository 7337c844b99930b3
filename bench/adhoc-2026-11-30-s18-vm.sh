# Session 18, the 2-core development VM (AMD EPYC): bench_matching_rate native against mpix (LIB)
# (built here, preloaded), 3 alternating rounds, -a at N = 1024 too. Run from the source tree after
# make (bench/bench_matching_rate built); LIB=path/to/libmpix.so (default src/.libs/libmpix.so).
B=bench/bench_matching_rate; O=${OUT:-/tmp/vmm}; mkdir -p $O; LIB=${LIB:-$PWD/src/.libs/libmpix.so}
for r in 1 2 3; do for who in native mpix; do for a in "" -a; do
  pre=""; [ $who = mpix ] && pre="-genv LD_PRELOAD $LIB"
  n=16384; [ -n "$a" ] && n=1024
  timeout 200 mpiexec -n 2 -bind-to core $pre $B -m 1024 -n $n -O average,worst -q unexpected -r 3 -t 16384 -T 2 $a -l "$who$a" -o $O/m_${who}${a}_r$r.csv > $O/m_${who}${a}_r$r.txt 2>&1
  echo "$who$a r$r: $(grep -E '^ +[0-9]+ ' $O/m_${who}${a}_r$r.txt | awk '{printf "%s/%s %s  ", $1, $2, $4}')"
done; done; done
