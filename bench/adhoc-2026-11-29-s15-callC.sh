# Session 15, call C (two H200s, one rank per GPU), issue 25: the receiver's
# per-message host work cut where call B's stage times put it. Libraries
# (xz in extra/, see extra/INDEX): base = 533bc6c (as in call B), cand =
# 4ec6e92 (25cd42d's test, the IPC cache's last entry tried first, the copy
# post without a full fence or a read of the done word), cand_prof = cand
# built with -DMPIX_STAGE_CLOCK. bench_gpu_suite 8 B (BENCH_SPLIT=1,
# MPIX_VERBOSE=1), base and cand alternating for 6 rounds, cand_prof
# twice, then cand's whole table 1 B - 4 MiB with staged MPICH and NCCL.
# Run on the GPU machine (slim bundle: bench_gpu_suite and the libraries):
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
ex=$PWD/extra
for v in base cand cand_prof; do
  mkdir -p "$ex/$v" && xz -dc "$ex/$v.so.xz" > "$ex/$v/libmpix.so.0" || { echo "unpack $v failed"; return 1; }
done
nproc; lscpu | grep -E "Model name" | head -1
rate() {  # variant round
  timeout 60 "$MPIEXEC" -n 2 env LD_LIBRARY_PATH="$ex/$1:$LD_LIBRARY_PATH" BENCH_SPLIT=1 MPIX_VERBOSE=1 \
    bench/bench_gpu_suite "$OUT/rate_$1_r$2.csv" 8 8 >"$OUT/rate_$1_r$2.txt" 2>&1
  echo "-- rate $1 round $2: exit $?"
  grep -E "^ +8 +mpix|split 8 B, rank . \(|found waiting|mpix stage" "$OUT/rate_$1_r$2.txt" |
    sed -E 's/.*(rank [01]).*rendezvous received/\1: rendezvous received/'
}
for round in 1 2 3 4 5 6; do
  for v in base cand; do rate $v $round; done
done
for round in 1 2; do rate cand_prof $round; done
timeout 200 "$MPIEXEC" -n 2 env LD_LIBRARY_PATH="$ex/cand:$LD_LIBRARY_PATH" MPIX_VERBOSE=0 \
  bench/bench_gpu_suite "$OUT/suite_full.csv" 4194304 >"$OUT/suite_full.txt" 2>&1
echo "-- suite full (cand): exit $?"; cat "$OUT/suite_full.txt"
