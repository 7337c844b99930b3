# Session 15, call B (two H200s, one rank per GPU), issue 25: the 8 B
# device-buffer rate's two modes. Libraries (carried xz-compressed in
# extra/, see extra/INDEX): base = 533bc6c (16435fa and a count of receives
# whose envelope waited for them), tend16 = 25cd42d (a not-done test of a
# resident-kernel copy takes no lock or clock read but every 16th), and
# each again as a profiling build (-DMPIX_STAGE_CLOCK: host time per stage
# at MPI_Finalize). bench_gpu_suite 8 B (BENCH_SPLIT=1, MPIX_VERBOSE=1),
# base and tend16 alternating for 5 rounds, then each profiling build twice.
# Run on the GPU machine (slim bundle: bench_gpu_suite and the libraries):
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
ex=$PWD/extra
for v in base tend16 base_prof tend16_prof; do
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
for round in 1 2 3 4 5; do
  for v in base tend16; do rate $v $round; done
done
for round in 1 2; do
  for v in base_prof tend16_prof; do rate $v $round; done
done
