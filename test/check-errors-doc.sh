#!/usr/bin/env bash
# man/man7/mpix_errors.7 is the error table: every text MPI_Error_string can
# give for an mpix code (the table in src/errors.cc) must appear in it, so a
# new or reworded error cannot go undocumented.
set -u
src=${MPIX_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
page=$src/man/man7/mpix_errors.7
# The texts of kSpecs: adjacent string literals joined, one per entry.
texts=$(sed -n '/^const ErrorSpec kSpecs\[\] = {/,/^};/p' "$src/src/errors.cc" |
  tr '\n' ' ' | sed 's/},/}\n/g' | sed -n 's/.*{&[A-Za-z_]*, *\(".*"\) *}.*/\1/p' |
  sed 's/" *"//g; s/^"//; s/"$//; s/\\"/"/g')
n=0 missing=0
while IFS= read -r t; do
  [ -n "$t" ] || continue
  n=$((n + 1))
  grep -qF -- "text: $t" "$page" || { echo "not in mpix_errors(7): $t"; missing=$((missing + 1)); }
done <<<"$texts"
[ "$n" -gt 20 ] || { echo "read only $n error texts from src/errors.cc (parser broken?)"; exit 1; }
[ "$missing" = 0 ] || exit 1
echo "all $n error texts documented in mpix_errors(7)"
