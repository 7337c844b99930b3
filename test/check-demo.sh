#!/usr/bin/env bash
# make demo's comparison (examples/demo.sh) as a test: the plain MPI
# program must run natively with its no-wildcard communicator not handled,
# under LD_PRELOAD=libmpix.so with it handled, check its payloads both times
# and print a rate for each test on both sides (the rates themselves are not
# judged: benchmarks print, tests do not time).
set -u
build=${MPIX_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
src=${MPIX_SRCDIR:-$build}
lib=${MPIX_LIB:-$build/src/.libs/libmpix.so}
if [ -n "${MPIX_SANITIZED:-}" ]; then
  echo "skipped: sanitizer build ($MPIX_SANITIZED): an uninstrumented program cannot preload libmpix.so"
  exit 77
fi
[ -x "$build/examples/matching_demo" ] || { echo "examples/matching_demo not built"; exit 1; }
out=$("$src/examples/demo.sh" "${MPIEXEC:-mpiexec}" "${MPIEXEC_FLAGS:-}" "$lib" 2048 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] || { echo "demo.sh exited $rc"; exit 1; }
bad=0
need() { echo "$out" | grep -qE "$1" || { echo "missing from the demo's output: $1"; bad=1; }; }
need '^native: +mpix loaded: no; no-wildcard communicator handled by mpix: no$'
need '^under mpix: +mpix loaded: yes; no-wildcard communicator handled by mpix: yes$'
need '^payload check: ok \(native and under mpix\)$'
need '^  posted receives, each message matches the last +[0-9]+ +[0-9]+ +[0-9.]+x$'
need '^  unexpected messages, received newest first +[0-9]+ +[0-9]+ +[0-9.]+x$'
need '^  posted, inside an unordered region +n/a +[0-9]+ '
need '^Next: '
exit $bad
