#!/usr/bin/env bash
# mpix's own test command (make check) once more with Open MPI underneath:
# a copy of the committed tree configured against Debian's Open MPI
# (--with-mpi=openmpi: mpicc.openmpi, mpirun.openmpi), built and checked
# there, so the in-tree (MPICH) build is left alone. Ends with the tally
# "check-openmpi: N passed, M failed, K skipped"; exit status that of make.
#
#   test/external/check-openmpi.sh [--ci] [--dir DIR] [--worktree] [--passes "LIST"] [-- CONFIGURE-ARGS...]
#
# (no option)     the full run: make check, every transport pass
# --ci            the subset .ci/run's Open MPI stage runs (about 8 min on
#                 2 cores): configured --without-cuda --without-ofi, only the
#                 library and the programs of test/mpi/testlist and
#                 test/mpi/p2p/testlist built, those two lists run on the
#                 default transport (ucx) with check-symbols.sh (make
#                 check-lists); no unit tests, no other lists, no extra
#                 transport passes
# --dir DIR       where the copy is built (default: a new temporary folder,
#                 removed afterwards unless the check failed)
# --worktree      copy the working tree (tracked files as they are now)
#                 instead of HEAD
# --passes LIST   MPIX_TRANSPORT_PASSES for make check (default: the
#                 Makefile's, all of them: ucx-tcp pmpi ofi-shm ofi-tcp; ""
#                 runs the MPI tests on the default transport only)
# CONFIGURE-ARGS  after --, for ./configure (default: --without-cuda, with
#                 --ci also --without-ofi; the CUDA code's MPI side is the
#                 same with either MPI)
#
# Needs the Debian packages openmpi-bin libopenmpi-dev besides what the
# in-tree build needs. Open MPI runs as root here with --allow-run-as-root
# and more ranks than cores with --oversubscribe (configure sets both).
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
dir='' worktree=0 passes='' passes_set=0 ci=0 cfg_set=0
cfg=()
while [ $# -gt 0 ]; do
  case $1 in
    --ci) ci=1; shift ;;
    --dir) dir=$2; shift 2 ;;
    --worktree) worktree=1; shift ;;
    --passes) passes=$2; passes_set=1; shift 2 ;;
    --) shift; cfg=("$@"); cfg_set=1; break ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "check-openmpi: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ $cfg_set = 0 ]; then
  cfg=(--without-cuda)
  [ $ci = 1 ] && cfg+=(--without-ofi)
fi
command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null || {
  echo "check-openmpi: mpicc.openmpi/mpirun.openmpi not found (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 2; }

cleanup=0
if [ -z "$dir" ]; then dir=$(mktemp -d /tmp/mpix-openmpi.XXXXXX); cleanup=1; fi
mkdir -p "$dir"
start=$(date +%s)
if [ $worktree = 1 ]; then
  (cd "$src" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$dir"
else
  (cd "$src" && git archive HEAD) | tar -xf - -C "$dir"
fi || { echo "check-openmpi: cannot copy the tree to $dir" >&2; exit 2; }

cd "$dir" || exit 2
echo "== check-openmpi: $(mpirun.openmpi --version 2>&1 | head -n 1) in $dir$([ $ci = 1 ] && echo ' (the CI subset)')"
{ ./autogen.sh >autogen.log 2>&1 || { cat autogen.log; false; }; } &&
  { ./configure --with-mpi=openmpi "${cfg[@]}" >configure.log 2>&1 || { tail -n 30 configure.log; false; }; } &&
  sed -n '/^mpix .* configured/,$p' configure.log &&
  { make -j2 >build.log 2>&1 || { grep -B2 -A12 -m5 'error' build.log; tail -n 20 build.log; false; }; } || {
  echo "check-openmpi: the build against Open MPI failed (logs in $dir)"; echo "check-openmpi: 0 passed, 1 failed"; exit 1; }
grep -q '^  MPI \.* Open MPI' configure.log || {
  echo "check-openmpi: configure did not pick Open MPI (see $dir/configure.log)"; echo "check-openmpi: 0 passed, 1 failed"; exit 1; }
built=$(date +%s)
echo "check-openmpi: $((built - start)) s to copy, configure and build the library (make)"

if [ $ci = 1 ]; then
  make -j2 check-lists 2>&1 | tee check.log
  rc=${PIPESTATUS[0]}
else
  check_args=()
  [ $passes_set = 1 ] && check_args+=(MPIX_TRANSPORT_PASSES="$passes")
  make -j2 check "${check_args[@]}" 2>&1 | tee check.log
  rc=${PIPESTATUS[0]}
fi
tally=$(grep -E '^[0-9]+ passed, [0-9]+ failed' check.log | tail -n 1)
end=$(date +%s)
echo "check-openmpi: $((end - built)) s for make $([ $ci = 1 ] && echo check-lists || echo check) (building the test programs, then the tests); $((end - start)) s in all"
if [ "$rc" = 0 ] && [ $cleanup = 1 ]; then cd / && rm -rf "$dir"; else echo "check-openmpi: logs in $dir"; fi
# The tally last, for whoever adds it up (.ci/run takes the last such line).
echo "check-openmpi: ${tally:-0 passed, 1 failed}"
exit "$rc"
