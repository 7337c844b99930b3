#!/usr/bin/env bash
# libmpix.so must export only the intercepted MPI_* entry points and the
# MPIX_* API: anything else could clash with the application or the MPI library.
set -u
lib=${MPIX_LIB:?MPIX_LIB not set}
nm=${NM:-nm}
syms=$($nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^$')
bad=$(printf '%s\n' "$syms" | grep -Ev '^(MPI_|MPIX_)' || true)
if [ -n "$bad" ]; then
  echo "unexpected exported symbols in $lib:"; printf '%s\n' "$bad"; exit 1
fi
for s in MPI_Init MPI_Init_thread MPI_Finalize MPIX_Query_version MPIX_ERR_WILDCARD; do
  printf '%s\n' "$syms" | grep -qx "$s" || { echo "missing export $s"; exit 1; }
done
# An intercepted call whose large-count variant (MPI_X_c) the MPI library
# has must be intercepted in that variant too: otherwise a program that calls
# the _c one (mpi4py does) bypasses mpix on handled communicators while its
# peer goes through mpix, and the two never match.
mpilib=$(ldd "$lib" 2>/dev/null | awk '$1 ~ /^lib(mpi|mpich)\.so/ && $3 ~ /^\// { print $3; exit }')
if [ -n "$mpilib" ]; then
  mpi_c=$($nm -D --defined-only "$mpilib" | awk '$3 ~ /^MPI_[A-Za-z_]+_c$/ { print $3 }' | sort -u)
  missing=$(for c in $mpi_c; do
    printf '%s\n' "$syms" | grep -qx "${c%_c}" && ! printf '%s\n' "$syms" | grep -qx "$c" && echo "$c"
  done)
  if [ -n "$missing" ]; then
    echo "intercepted calls whose large-count variant in $mpilib is not intercepted:"; printf '%s\n' "$missing"; exit 1
  fi
  echo "large-count variants: every one of $(printf '%s\n' $mpi_c | wc -l) in $mpilib whose int call is intercepted is intercepted too"
else
  echo "large-count variants: not checked (no libmpi/libmpich among the libraries $lib links)"
fi
echo "$(printf '%s\n' "$syms" | wc -l) exported symbols, all MPI_* or MPIX_*"
