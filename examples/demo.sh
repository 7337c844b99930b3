#!/usr/bin/env bash
# The second half of `make demo`: what mpix is for, natively and under mpix
# in one run. examples/matching_demo (a plain MPI program) receives N
# messages with N receives outstanding on a no-wildcard communicator, first
# natively, then with LD_PRELOAD=libmpix.so, and the two are printed side by
# side; where a GPU is present, device-buffer and stream-triggered
# ping-pongs follow (bench/bench_gpu_p2p, bench/bench_stream).
#
#   examples/demo.sh MPIEXEC "MPIEXEC_FLAGS" LIBMPIX [N]
#
# Exit status 0 when both runs checked their payloads; the last line says
# what to read next. test/mpi/testlist runs it as a test (N smaller).
set -u
mpiexec=$1 flags=$2 lib=$3 n=${4:-8192}
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
prog=$here/matching_demo

# shellcheck disable=SC2086  # the launcher's flags are words
native=$($mpiexec $flags -n 2 "$prog" -n "$n" 2>&1) || { echo "$native"; echo "demo: native run failed"; exit 1; }
# shellcheck disable=SC2086
mpix=$($mpiexec $flags -n 2 env LD_PRELOAD="$lib" "$prog" -n "$n" 2>&1) ||
  { echo "$mpix"; echo "demo: run under mpix failed"; exit 1; }

echo "native:      $(echo "$native" | grep '^mpix loaded')"
echo "under mpix:  $(echo "$mpix" | grep '^mpix loaded')"
echo "$native" | grep -q '^payload check: ok' && echo "$mpix" | grep -q '^payload check: ok' ||
  { echo "$native"; echo "$mpix"; echo "demo: payload check failed"; exit 1; }
echo "payload check: ok (native and under mpix)"
echo
echo "Rank 1 receives $n messages, $n receives outstanding (matches per second, best of 3):"
rate() { echo "$1" | awk -v t="$2" '$1 == "result" && $2 == t { print $3 }'; }
printf '  %-44s %14s %14s %9s\n' "" "native MPI" "mpix" "speedup"
for t in posted unexpected region; do
  a=$(rate "$native" $t) b=$(rate "$mpix" $t)
  case $t in
    posted) what="posted receives, each message matches the last" ;;
    unexpected) what="unexpected messages, received newest first" ;;
    region) what="posted, inside an unordered region" ;;
  esac
  if [ -z "$b" ]; then continue; fi
  if [ -z "$a" ]; then
    a0=$(rate "$native" posted)
    printf '  %-44s %14s %14.0f %8.1fx  (vs native posted)\n' "$what" "n/a" "$b" "$(awk -v a="$a0" -v b="$b" 'BEGIN { print b / a }')"
  else
    printf '  %-44s %14.0f %14.0f %8.1fx\n' "$what" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { print b / a }')"
  fi
done
echo "  (the MPI library walks its queues, mpix finds each receive by hashing (source, tag); the gap grows with N)"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -x "$top/bench/bench_gpu_p2p" ]; then
  echo
  echo "== GPU: MPI_Send/MPI_Recv of device buffers, mpix vs copying by hand around plain MPI vs NCCL, 8 B .. 1 MiB"
  # shellcheck disable=SC2086
  $mpiexec $flags -n 2 "$top/bench/bench_gpu_p2p" "" 1048576 2>&1 | grep -v '^#'
  if [ -x "$top/bench/bench_stream" ]; then
    echo "== GPU: stream-triggered MPIX_Send_enqueue/MPIX_Recv_enqueue ping-pong vs NCCL on a stream, 8 B .. 64 KiB"
    # shellcheck disable=SC2086
    $mpiexec $flags -n 2 "$top/bench/bench_stream" -n 200 -m 65536 2>&1 | grep -v '^csv'
  fi
else
  echo
  echo "(no GPU here: on a machine with one, the demo goes on with device-buffer and stream-triggered ping-pongs)"
fi
echo
echo "Next: man 7 mpix_nowildcard (the assertions your communicators need), bench/RESULTS.md and docs/plots (measured numbers), docs/DESIGN.md."
