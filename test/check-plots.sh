#!/usr/bin/env bash
# bench/plot.py turns the committed benchmark CSV (docs/plots/data) into
# SVG plots: each expected plot must come out, non-empty and an SVG, and a
# CSV that does not parse must fail the script. Skipped (visibly) where no
# python3 has matplotlib (Debian: python3-matplotlib; .ci/run installs it).
set -u
src=${MPIX_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
py=
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import matplotlib' 2>/dev/null; then py=$p; break; fi
done
if [ -z "$py" ]; then echo "skipped: no python3 with matplotlib (apt-get install python3-matplotlib)"; exit 77; fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$py" "$src/bench/plot.py" --data "$src/docs/plots/data" --out "$out/plots" || { echo "plot.py failed"; exit 1; }
bad=0
for f in host_latency host_bandwidth matching_rate gpu_latency gpu_bandwidth; do
  svg=$out/plots/$f.svg
  if [ ! -s "$svg" ] || ! grep -q '<svg' "$svg" || [ "$(grep -c '<path' "$svg")" -lt 10 ]; then
    echo "missing or empty: $f.svg"; bad=1
  fi
done
# A broken CSV is an error, not a silently empty plot.
mkdir -p "$out/bad"
printf '# machine: x\nsize_B,lat_us_median_native\n' >"$out/bad/host_pingpong_x.csv"
if "$py" "$src/bench/plot.py" --data "$out/bad" --out "$out/badplots" >/dev/null 2>&1; then
  echo "plot.py accepted a CSV without rows"; bad=1
fi
[ $bad = 0 ] && echo "5 plots from $(ls "$src/docs/plots/data" | wc -l) CSV files"
exit $bad
