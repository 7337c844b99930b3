#!/usr/bin/env bash
# `make install` into a staging directory, then build an outside program
# against it twice, with pkg-config and with CMake's find_package(MPIX), and
# run both under mpiexec.
set -eu
: "${MAKE:=make}" "${MPIEXEC:=mpiexec}" "${MPIX_BUILDDIR:?}" "${MPIX_SRCDIR:?}"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
"$MAKE" -C "$MPIX_BUILDDIR" install DESTDIR="$stage" >"$stage/install.log" 2>&1 || {
  cat "$stage/install.log"; exit 1; }
pc=$(find "$stage" -name mpix.pc | head -n 1)
cmakedir=$(dirname "$(find "$stage" -name MPIXConfig.cmake | head -n 1)")
inc=$(find "$stage" -name mpix.h | head -n 1)
man=$(find "$stage" -name MPIX_Query_version.3 | head -n 1)
for f in "$pc" "$cmakedir" "$inc" "$man"; do [ -e "$f" ] || { echo "missing from install: $f"; exit 1; }; done
ls "$(dirname "$pc")/../libmpix.so" "$(dirname "$pc")/../libmpix.a" >/dev/null
# A sanitizer build's library needs its runtime in the program.
san=${MPIX_SANITIZED:+-fsanitize=$MPIX_SANITIZED}

echo "== pkg-config"
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-prefix --cflags --libs mpix)
echo "flags: $flags"
# shellcheck disable=SC2086
cc $san "$MPIX_SRCDIR/test/install/consumer.c" -o "$stage/consumer_pc" $flags
$MPIEXEC ${MPIEXEC_FLAGS:-} -n 2 "$stage/consumer_pc" | tee "$stage/pc.out"
grep -q 'No Errors' "$stage/pc.out"
ldd "$stage/consumer_pc" | grep -q "$stage.*libmpix.so" || { echo "consumer_pc not linked to the staged libmpix"; exit 1; }

echo "== cmake find_package(MPIX)"
if ! command -v cmake >/dev/null; then echo "skipped: cmake not installed"; exit 77; fi
cmake -S "$MPIX_SRCDIR/test/install" -B "$stage/cmake" -DMPIX_DIR="$cmakedir" -DCMAKE_C_FLAGS="$san" >"$stage/cmake.log" 2>&1 || {
  cat "$stage/cmake.log"; exit 1; }
cmake --build "$stage/cmake" >>"$stage/cmake.log" 2>&1 || { cat "$stage/cmake.log"; exit 1; }
$MPIEXEC ${MPIEXEC_FLAGS:-} -n 2 "$stage/cmake/consumer" | tee "$stage/cmake.out"
grep -q 'No Errors' "$stage/cmake.out"
echo "installed mpix consumed by pkg-config and CMake"
