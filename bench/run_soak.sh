#!/usr/bin/env bash
# run_soak.sh: the long soak of issue 17 (test/mpi/soak/soak.c), outside CI:
# NP ranks of randomized, checksummed traffic with communicator churn for
# SECONDS, on the default transport unless MPIX_TRANSPORT is set; prints the
# program's report (messages, messages/s, memory samples (PSS), first/last quarter)
# and exits with its status. Ranks may outnumber cores (the soak's waits
# yield); the numbers are then the oversubscribed machine's.
#
# Usage: bench/run_soak.sh [-n NP] [-t SECONDS] [-s SEED] [-p]
#   -n NP       ranks (default 8)
#   -t SECONDS  duration (default 300)
#   -s SEED     SOAK_SEED (default: the program's)
#   -p          run soak_preload under LD_PRELOAD=src/.libs/libmpix.so
#               instead of the relinked soak
# Environment: MPIEXEC (mpiexec), any MPIX_* / SOAK_* variable is passed on.
# Build first: make -j1 test/mpi/soak/soak test/mpi/soak/soak_preload
set -euo pipefail
cd "$(dirname "$0")/.."
np=8 secs=300 preload=0
while getopts n:t:s:p o; do
  case $o in
    n) np=$OPTARG ;; t) secs=$OPTARG ;; s) export SOAK_SEED=$OPTARG ;; p) preload=1 ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
  esac
done
prog=test/mpi/soak/soak envs=()
if [ $preload = 1 ]; then prog=test/mpi/soak/soak_preload envs=(LD_PRELOAD="$PWD/src/.libs/libmpix.so"); fi
[ -x $prog ] || { echo "run_soak.sh: $prog not built (make -j1 $prog)"; exit 2; }
echo "run_soak.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $np ranks, $secs s, $prog," \
  "MPIX_TRANSPORT=${MPIX_TRANSPORT:-default}, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
# A round stuck for 2 minutes is a hang, not slowness.
exec env "${envs[@]}" SOAK_SECONDS="$secs" SOAK_ROUND_TIMEOUT="${SOAK_ROUND_TIMEOUT:-120}" \
  timeout $((secs + 300)) "${MPIEXEC:-mpiexec}" -n "$np" $prog
