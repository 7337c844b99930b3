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
echo "$(printf '%s\n' "$syms" | wc -l) exported symbols, all MPI_* or MPIX_*"
