#!/usr/bin/env bash
# run_transport_benchmarks.sh: the point-to-point benchmarks (matching rate,
# ping-pong, unordered region) natively and under mpix on each transport, in
# one invocation: bench/run_p2p_benchmarks.sh once per row below, each with
# native MPICH measured in the same run, then every table.
#
#   ucx       MPIX_TRANSPORT=ucx (UCX's default transports: shared memory)
#   pmpi      MPIX_TRANSPORT=pmpi (through the MPI library again: the
#             baseline the UCX transport replaces)
#   ucx-tcp   UCX_TLS=tcp,self for MPICH and mpix alike (UCX's network
#             path on one host; two ranks: MPICH 4.0.2 with tcp hangs in
#             MPI_Finalize from three ranks on, natively)
#   ofi-shm   MPIX_TRANSPORT=ofi FI_PROVIDER=shm (libfabric's shared-memory
#             provider; MPICH keeps its own UCX shared memory)
#   ofi-tcp   MPIX_TRANSPORT=ofi FI_PROVIDER=tcp (tcp;ofi_rxm) against MPICH
#             over UCX_TLS=tcp,self: both on TCP
# The tcp rows set MPIX_SINGLE_COPY=off MPIX_SHM_RING=off: they stand for
# ranks on different hosts, where single copy and the shared-memory rings
# (within a node) do not reach.
#
# Usage: bench/run_transport_benchmarks.sh [-o DIR] [-q] [-t LIST] [LIBMPIX]
#   -o DIR   results (default: a new mktemp -d /tmp/mpix-transports.XXXXXX);
#            DIR/<row>/ holds each run's CSV, logs and summaries
#   -q       quick smoke run (run_p2p_benchmarks.sh -q)
#   -t LIST  rows to run (default ucx,pmpi,ucx-tcp,ofi-shm,ofi-tcp; a row
#            whose transport is not built fails at MPI_Init)
# Environment: as bench/run_p2p_benchmarks.sh (MPICC, MPIEXEC, BIND2, ...).
set -uo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="" quick="" rows="ucx,pmpi,ucx-tcp,ofi-shm,ofi-tcp"
while getopts "o:qt:h" opt; do
    case $opt in
    o) out=$OPTARG ;;
    q) quick=-q ;;
    t) rows=$OPTARG ;;
    *) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    esac
done
shift $((OPTIND - 1))
lib=${1:-${MPIX_LIB:-$SRC/src/.libs/libmpix.so}}
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/mpix-transports.XXXXXX")
mkdir -p "$out"

rc=0
row() {  # NAME BENCHMARKS ENV...
    local name=$1 which=$2
    shift 2
    case ",$rows," in *",$name,"*) ;; *) return 0 ;; esac
    echo "== $name: $* (benchmarks: $which)"
    env "$@" "$SRC/bench/run_p2p_benchmarks.sh" $quick -s "$which" -b "$out/$name/build" -o "$out/$name" "$lib" \
        >"$out/$name.log" 2>&1 || { echo "$name: run_p2p_benchmarks.sh failed (see $out/$name.log)"; rc=1; }
}
row ucx matching,pingpong,unordered MPIX_TRANSPORT=ucx
row pmpi matching,pingpong MPIX_TRANSPORT=pmpi
row ucx-tcp matching,pingpong MPIX_TRANSPORT=ucx UCX_TLS=tcp,self MPIX_SINGLE_COPY=off MPIX_SHM_RING=off
row ofi-shm matching,pingpong MPIX_TRANSPORT=ofi FI_PROVIDER=shm
row ofi-tcp matching,pingpong MPIX_TRANSPORT=ofi FI_PROVIDER=tcp UCX_TLS=tcp,self MPIX_SINGLE_COPY=off MPIX_SHM_RING=off

for name in ucx pmpi ucx-tcp ofi-shm ofi-tcp; do
    [ -d "$out/$name" ] || continue
    for t in "$out/$name"/summary_*.txt; do
        [ -f "$t" ] || continue
        echo
        echo "### $name: $(basename "$t" .txt)"
        cat "$t"
    done
done
echo
echo "results in $out"
exit $rc
