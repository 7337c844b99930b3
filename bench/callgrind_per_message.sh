#!/usr/bin/env bash
# callgrind_per_message.sh LIBMPIX [LABEL]: instructions per 8-byte message
# that mpix spends on one rank (rank 1 of bench/bench_pingpong under
# valgrind's callgrind, the other rank plain), for ping-pong (MPI_Send,
# arrival, MPI_Recv without its waiting) and streaming with a window of 64
# (MPI_Irecv, arrival, MPI_Waitall's per-request share). Inclusive counts
# divided by the messages the profiled loop handled (warm-up included).
# Deterministic (idle polls aside), so two libraries compare on a noisy
# machine where wall-clock does not; a division counts as one instruction,
# so what it misses is cycles, not work. Needs valgrind, and
# bench/bench_pingpong built (make bench/bench_pingpong).
set -u
lib=$(realpath "${1:?usage: callgrind_per_message.sh LIBMPIX [LABEL]}")
label=${2:-mpix}
src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/bench/bench_pingpong
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
# Run and annotate outside the source tree: there callgrind_annotate names
# some of a function's lines by relative path and some by absolute, and
# splits its counts between the two names.
cd "$work" || exit 1
profile() {  # FUNCTION ITERATIONS: one run, annotated into $work/incl.txt and $work/tree.txt
  MPIX_TRANSPORT=ucx MPIX_PROGRESS_THREAD=0 LD_PRELOAD=$lib mpiexec -n 1 "$bin" -m 8 -M 8 -i "$2" -r 1 : \
    -n 1 valgrind --tool=callgrind --toggle-collect="$1" --callgrind-out-file="$work/cg.out" "$bin" -m 8 -M 8 \
    -i "$2" -r 1 >"$work/run.log" 2>&1 || { echo "run failed: $work/run.log"; cat "$work/run.log"; exit 1; }
  callgrind_annotate --inclusive=yes "$work/cg.out" >"$work/incl.txt" 2>/dev/null
  callgrind_annotate --tree=calling --inclusive=yes "$work/cg.out" >"$work/tree.txt" 2>/dev/null
}
total() { grep -E "$1" "$work/incl.txt" | head -1 | awk '{gsub(",", "", $1); print $1 + 0}'; }
callee() {  # CALLER CALLEE: the callee's inclusive count under that caller
  awk -v a="$1" -v b="$2" 'index($0, "*  ") && index($0, a) {p = 1; next} p && /^$/ {p = 0}
    p && index($0, b) {gsub(",", "", $1); print $1 + 0; exit}' "$work/tree.txt"
}
# The ping-pong loop runs iters + iters/10 (warm-up) round trips.
profile pingpong 10000
n=11000
send=$(total ':MPI_Send \[') arrival=$(total 'Worker::on_message') recv=$(total ':MPI_Recv \[')
# The wait is called by MPI_Recv itself, or (since the request-free receive
# of a message already here) by the engine's blocking receive under it.
waiting=$(callee ':MPI_Recv [' 'progress_wait')
if [ -z "$waiting" ]; then  # (the compiler may inline part of progress_wait there)
  w1=$(callee 'P2PComm::recv(' 'progress_wait') w2=$(callee 'P2PComm::recv(' 'progress_poll')
  waiting=$((${w1:-0} + ${w2:-0}))
fi
echo "$label ping-pong per message: MPI_Send $((send / n)) arrival $((arrival / n)) MPI_Recv-without-waiting $(((recv - ${waiting:-0}) / n))"
# The streaming loop: 2000 iterations of 8 B make 32 windows of 64, twice (warm-up and timed).
profile stream 2000
n=4096
irecv=$(total ':MPI_Irecv \[') arrival=$(total 'Worker::on_message')
conclude=$(callee ':MPI_Waitall [' 'conclude_all') split=$(callee ':MPI_Waitall [' 'Split::Split')
echo "$label streaming per message: MPI_Irecv $((irecv / n)) arrival $((arrival / n)) Waitall-share $(((${conclude:-0} + ${split:-0}) / n))"
