#!/usr/bin/env bash
# run_p2p_benchmarks.sh: build the point-to-point benchmarks (matching rate,
# ping-pong, unordered region) as plain MPI programs and run each natively
# and under LD_PRELOAD=libmpix.so, in the same invocation; print side-by-side
# tables (native, mpix, mpix/native) and write CSV files.
#
# Usage: bench/run_p2p_benchmarks.sh [options] [LIBMPIX]
#   -b DIR    build directory (default: a new mktemp -d /tmp/mpix-p2p.XXXXXX);
#             nothing is built in the source tree
#   -o DIR    results directory (default: BUILD/results)
#   -l LIB    libmpix.so to preload (also the positional LIBMPIX or $MPIX_LIB;
#             default: <repo>/src/.libs/libmpix.so).  It is copied into the
#             build directory first, so a concurrent rebuild cannot change it
#             in the middle of the run; env.txt records its sha256.
#   -n        native half only
#   -q        quick smoke run (small sizes, few repeats, one round; ~20 s)
#   -R N      rounds of ping-pong and unordered-region runs (default 3); the
#             order native/mpix alternates between rounds; tables give the
#             median over the rounds
#   -r N      rounds of the matching-rate benchmark (default 1)
#   -p NP     ranks of bench_unordered_region (default 4)
#   -s LIST   benchmarks to run: matching,pingpong,unordered (default all)
#   -S DIR    only print the tables of an existing results directory (for
#             example after an interrupted run); builds and runs nothing
#   -V NAME:VAR=VAL[,VAR=VAL...]  one more mpix run per round with these
#             settings (repeatable), labelled NAME; its medians and ratios to
#             native come after the usual columns (e.g. -V gpuoff:MPIX_GPU=off)
# Environment: MPICC (mpicc), MPIEXEC (mpiexec), CFLAGS (-O2 -Wall),
#   BIND2 (hydra binding for the 2-rank runs, default "-bind-to core"),
#   BINDN (for the NP-rank run, default "-bind-to none"),
#   MPIX_LIB (library to preload).
#
# MPICH settings: none are changed (all MPIR_CVAR_* at their defaults; any
# MPIR_CVAR_*, UCX_*, MPIX_*, HYDRA_* variables set by the caller are passed
# on and recorded in env.txt).  MPICH 4 ch4 busy-polls inside MPI_Wait*,
# MPI_Recv and MPI_Barrier and never yields the core (MPIR_CVAR_POLLS_BEFORE_
# YIELD has no effect in ch4).  Two ranks on two cores is fine, so the
# 2-rank benchmarks run with one rank bound per core.  With more ranks than
# cores the spinning ranks wait for scheduler time slices (about 100x
# slower), so when NP > nproc, bench_unordered_region runs with -y (waits as
# MPI_Test + sched_yield() loops), natively and under mpix alike.
#
# Default run: about 5 minutes on an idle 2-core machine (matching rate ~65 s
# natively, where N=16384 in average/worst order takes seconds per cycle;
# ping-pong 5-15 s per run; unordered region 10-30 s per run; each run has a
# `timeout`).  -q takes about 20 s.  The machine should be otherwise idle:
# the load average before and after every run is in the logs and env.txt.
# shellcheck disable=SC2086  # CFLAGS, BIND*, *_ARGS are word-split on purpose
set -uo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MPICC=${MPICC:-mpicc}
MPIEXEC=${MPIEXEC:-mpiexec}
CFLAGS=${CFLAGS:--O2 -Wall}
BIND2=${BIND2--bind-to core}
BINDN=${BINDN--bind-to none}

build=""
results=""
lib=${MPIX_LIB:-}
native_only=0
quick=0
rounds=3
match_rounds=1
np=4
which="matching,pingpong,unordered"
summary_dir=""
variants=()

usage() { sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

while getopts "b:o:l:nqR:r:p:s:S:V:h" opt; do
    case $opt in
    b) build=$OPTARG ;;
    o) results=$OPTARG ;;
    l) lib=$OPTARG ;;
    n) native_only=1 ;;
    q) quick=1 ;;
    R) rounds=$OPTARG ;;
    r) match_rounds=$OPTARG ;;
    p) np=$OPTARG ;;
    s) which=$OPTARG ;;
    S) summary_dir=$OPTARG ;;
    V) variants+=("$OPTARG") ;;
    h) usage 0 ;;
    *) usage 1 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] && lib=$1
[ -n "$lib" ] || lib=$SRC/src/.libs/libmpix.so

want() { case ",$which," in *",$1,"*) return 0 ;; esac; return 1; }

if [ -n "$summary_dir" ]; then
    results=$(cd "$summary_dir" && pwd) || exit 1
else
    if [ -z "$build" ]; then
        build=$(mktemp -d "${TMPDIR:-/tmp}/mpix-p2p.XXXXXX") || exit 1
    fi
    mkdir -p "$build" || exit 1
    build=$(cd "$build" && pwd)
    [ -n "$results" ] || results=$build/results
    mkdir -p "$results" || exit 1
    results=$(cd "$results" && pwd)
fi

if [ "$quick" = 1 ]; then
    rounds=1
    match_rounds=1
    MATCH_ARGS="-n 1024 -r 3 -t 4096 -T 1"
    PP_ARGS="-M 4194304 -r 3 -i 2000 -b 16777216"
    UR_ARGS="-n 256 -r 3 -t 2048"
else
    MATCH_ARGS="-n 16384 -r 5 -t 16384 -T 3"
    PP_ARGS=${PP_ARGS:-"-M 16777216 -r 5 -i 10000 -b 67108864"}
    UR_ARGS="-n 1024 -r 5 -t 16384"
fi
ncores=$(nproc 2>/dev/null || echo 2)
UR_YIELD=""
[ "$np" -gt "$ncores" ] && UR_YIELD="-y"

failures=0
suffix=""
t_start=$(date +%s)

# summarize NAME KEYS VALUES FILES...: median over rounds per (label, key);
# per value column: native, mpix, mpix/native.  Writes summary_NAME.csv/.txt.
summarize() {
    local name=$1 keys=$2 vals=$3
    shift 3
    [ $# -gt 0 ] || return 0
    local extra
    extra=$(for v in "${variants[@]}"; do printf '%s,' "${v%%:*}"; done)
    awk -F, -v keys="$keys" -v vals="$vals" -v extra="${extra%,}" -v csv="$results/summary_$name.csv" '
    function isnum(t) { return t ~ /^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$/ }
    function med(lab, k, v,   n, i, j, a, t, c) {
        c = cnt[lab SUBSEP k SUBSEP v]; n = 0
        for (i = 1; i <= c; i++) { t = x[lab SUBSEP k SUBSEP v SUBSEP i]; if (isnum(t)) a[++n] = t + 0 }
        if (n == 0) return c > 0 ? "n/a" : "-"
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function fmt(t) { return isnum(t) ? sprintf("%.4g", t) : t }
    FNR == 1 { for (i in col) delete col[i]; for (i = 1; i <= NF; i++) col[$i] = i; next }
    {
        k = ""
        for (j = 1; j <= nk; j++) k = k (j > 1 ? "," : "") $(col[kn[j]])
        if (!(k in seen)) { seen[k] = 1; keyorder[++nkeys] = k }
        lab = $(col["label"])
        for (j = 1; j <= nv; j++) {
            c = ++cnt[lab SUBSEP k SUBSEP vn[j]]
            x[lab SUBSEP k SUBSEP vn[j] SUBSEP c] = $(col[vn[j]])
        }
    }
    BEGIN { nk = split(keys, kn, ","); nv = split(vals, vn, ","); ne = extra == "" ? 0 : split(extra, en, ",") }
    END {
        hdr = keys; line = ""; top = ""
        for (j = 1; j <= nk; j++) w[j] = length(kn[j]) > 6 ? length(kn[j]) : 6
        for (i = 1; i <= nkeys; i++) {
            split(keyorder[i], kv, ",")
            for (j = 1; j <= nk; j++) if (length(kv[j]) > w[j]) w[j] = length(kv[j])
        }
        for (j = 1; j <= nk; j++) {
            line = line sprintf("%" w[j] "s ", kn[j]); top = top sprintf("%" w[j] "s ", "")
        }
        for (j = 1; j <= nv; j++) {
            top = top sprintf("| %-38s ", vn[j])
            line = line sprintf("| %14s %14s %8s ", "native", "mpix", "ratio")
            hdr = hdr "," vn[j] "_native," vn[j] "_mpix," vn[j] "_mpix_over_native"
        }
        # Variants after every usual column, so readers of the first ones
        # (the headline below, plots) need not know about them.
        for (e = 1; e <= ne; e++) for (j = 1; j <= nv; j++) {
            top = top sprintf("| %-23s ", en[e] " " vn[j])
            line = line sprintf("| %14s %8s ", en[e], "ratio")
            hdr = hdr "," vn[j] "_" en[e] "," vn[j] "_" en[e] "_over_native"
        }
        print hdr > csv
        print top; print line
        for (i = 1; i <= nkeys; i++) {
            k = keyorder[i]; split(k, kv, ","); line = ""; row = k
            for (j = 1; j <= nk; j++) line = line sprintf("%" w[j] "s ", kv[j])
            for (j = 1; j <= nv; j++) {
                a = med("native", k, vn[j]); b = med("mpix", k, vn[j])
                r = (isnum(a) && isnum(b) && a + 0 != 0) ? sprintf("%.3f", b / a) : (b == "-" ? "-" : "n/a")
                line = line sprintf("| %14s %14s %8s ", fmt(a), fmt(b), r)
                row = row "," a "," b "," r
            }
            for (e = 1; e <= ne; e++) for (j = 1; j <= nv; j++) {
                a = med("native", k, vn[j]); b = med(en[e], k, vn[j])
                r = (isnum(a) && isnum(b) && a + 0 != 0) ? sprintf("%.3f", b / a) : (b == "-" ? "-" : "n/a")
                line = line sprintf("| %14s %8s ", fmt(b), r)
                row = row "," b "," r
            }
            print line; print row > csv
        }
    }' "$@" | tee "$results/summary_$name.txt"
}

build_and_run() {
# ---- build ----
echo "== building into $build"
for b in bench_matching_rate bench_pingpong bench_unordered_region; do
    $MPICC $CFLAGS -o "$build/$b" "$SRC/bench/$b.c" -ldl || { echo "build of $b failed"; exit 1; }
done

# ---- the library ----
labels="native"
if [ "$native_only" = 0 ]; then
    if [ ! -e "$lib" ]; then
        echo "error: $lib not found (build the library, give -l LIB, or run -n for native only)" >&2
        exit 1
    fi
    cp -L "$lib" "$build/libmpix.so" || exit 1
    plib=$build/libmpix.so
    labels="native mpix"
    for v in "${variants[@]}"; do
        case $v in
        [A-Za-z]*:*=*) labels="$labels ${v%%:*}" ;;
        *) echo "error: -V $v: expected NAME:VAR=VAL[,VAR=VAL...]" >&2; exit 1 ;;
        esac
    done
fi

# ---- environment record ----
{
    echo "date: $(date -Is)"
    echo "host: $(uname -srm); cpus: $ncores; $(grep -m1 'model name' /proc/cpuinfo)"
    echo "mpi: $(mpichversion 2>/dev/null | head -3 | tr '\n\t' '  ')"
    echo "mpicc: $($MPICC -show 2>/dev/null)"
    echo "CFLAGS: $CFLAGS -ldl"
    echo "mpiexec: $MPIEXEC; 2-rank binding: '$BIND2'; $np-rank binding: '$BINDN'; unordered-region waits: ${UR_YIELD:-blocking}"
    echo "repo: $SRC (HEAD $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?'))"
    if [ "$native_only" = 0 ]; then
        echo "libmpix: $lib -> copied to $plib"
        echo "libmpix sha256: $(sha256sum "$plib" | cut -d' ' -f1); mtime: $(stat -L -c %y "$lib")"
    else
        echo "libmpix: not used (-n)"
    fi
    echo "arguments: matching [$MATCH_ARGS] x$match_rounds, pingpong [$PP_ARGS] x$rounds, unordered -n $np [$UR_ARGS $UR_YIELD] x$rounds"
    echo "MPI/UCX/MPIX/HYDRA environment:"
    env | grep -E '^(MPIR_CVAR_|MPICH_|UCX_|MPIX_|HYDRA_)' | sed 's/^/  /' || echo "  (none set)"
    echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$results/env.txt"
cat "$results/env.txt"

# run_one BENCH LABEL ROUND NP BIND TIMEOUT ARGS...
run_one() {
    local bench=$1 label=$2 round=$3 n=$4 bind=$5 tmo=$6
    shift 6
    local base=$results/${bench#bench_}${suffix}_${label}_r$round
    local pre=()
    if [ "$label" = mpix ]; then
        pre=(env LD_PRELOAD="$plib")
    elif [ "$label" != native ]; then
        local v settings=()
        for v in "${variants[@]}"; do
            [ "${v%%:*}" = "$label" ] && IFS=, read -r -a settings <<<"${v#*:}"
        done
        pre=(env LD_PRELOAD="$plib" "${settings[@]}")
    else
        pre=(env -u LD_PRELOAD)
    fi
    local t0 rc
    t0=$(date +%s)
    echo "-- $bench $label round $round (load $(cut -d' ' -f1 /proc/loadavg))"
    # shellcheck disable=SC2086
    timeout "$tmo" $MPIEXEC -n "$n" $bind "${pre[@]}" "$build/$bench" "$@" -l "$label" \
        -o "$base.csv" >"$base.txt" 2>&1
    rc=$?
    echo "# exit status $rc; $(($(date +%s) - t0)) s; load after $(cut -d' ' -f1-3 /proc/loadavg)" >>"$base.txt"
    if [ $rc != 0 ]; then
        failures=$((failures + 1))
        echo "   FAILED (exit $rc$([ $rc = 124 ] && echo ', timeout')); see $base.txt"
        tail -5 "$base.txt" | sed 's/^/   | /'
    fi
    if [ "$label" != native ] && grep -q '^# mpix: not loaded' "$base.txt"; then
        echo "   WARNING: LD_PRELOAD=$plib did not load libmpix (no MPIX_Get_library_version)"
        failures=$((failures + 1))
    fi
    grep -E '^# (mpix|unordered region|payload)' "$base.txt" | sed 's/^/   /'
}

# run_rounds BENCH ROUNDS NP BIND TIMEOUT ARGS...: alternate native/mpix order
run_rounds() {
    local bench=$1 nr=$2 n=$3 bind=$4 tmo=$5
    shift 5
    local r l order
    for r in $(seq 1 "$nr"); do
        # Even rounds run the labels in reverse, so no setting always
        # follows the same one.
        order=$labels
        [ $((r % 2)) = 0 ] && order=$(echo $labels | tr ' ' '\n' | tac | tr '\n' ' ')
        for l in $order; do
            run_one "$bench" "$l" "$r" "$n" "$bind" "$tmo" "$@"
        done
    done
}


if want matching; then
    echo "== bench_matching_rate (2 ranks)"
    run_rounds bench_matching_rate "$match_rounds" 2 "$BIND2" 600 $MATCH_ARGS
fi
if want pingpong; then
    echo "== bench_pingpong (2 ranks)"
    run_rounds bench_pingpong "$rounds" 2 "$BIND2" 300 $PP_ARGS
fi
if want unordered; then
    echo "== bench_unordered_region ($np ranks${UR_YIELD:+, yielding waits})"
    for so in same reverse; do
        suffix=_$so
        run_rounds bench_unordered_region "$rounds" "$np" "$BINDN" 300 $UR_ARGS $UR_YIELD -s $so
    done
    suffix=""
fi

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$results/env.txt"
}

[ -n "$summary_dir" ] || build_and_run
echo
echo "== results (median over rounds; ratio = mpix/native; for latency lower is better, else higher)"
shopt -s nullglob
if want matching; then
    echo
    echo "-- matching rate [matches/s], 2 ranks, 8-byte messages, no-wildcard communicator"
    summarize matching_rate N,order,queue matches_per_s "$results"/matching_rate_*_r*.csv
fi
if want pingpong; then
    echo
    echo "-- ping-pong: latency [us, half round trip] and streaming bandwidth [MB/s = 10^6 B/s]"
    summarize pingpong size_B lat_us_median,bw_MBps_median,pp_MBps,bibw_MBps_median "$results"/pingpong_*_r*.csv
fi
if want unordered; then
    echo
    echo "-- unordered region (Listing 7.1) [matches/s, all ranks]"
    summarize unordered_region ranks,send_order,msgs_per_source,variant matches_per_s \
        "$results"/unordered_region_*_r*.csv
fi

# headline numbers
{
    echo
    echo "== headline (native | mpix)"
    if [ -f "$results/summary_matching_rate.csv" ]; then
        awk -F, 'NR > 1 && ($1 == 1024 || $1 == 16384) && $2 != "best" {
            printf "matching rate N=%-5s %-7s %-10s: %12s | %12s matches/s\n", $1, $2, $3, $4, $5 }' \
            "$results/summary_matching_rate.csv"
    fi
    if [ -f "$results/summary_pingpong.csv" ]; then
        awk -F, 'NR > 1 && $1 == 8 { printf "latency 8 B: %s | %s us\n", $2, $3 }
                 NR > 1 && $1 == 4194304 { printf "bandwidth 4 MiB: streaming %s | %s MB/s; ping-pong %s | %s MB/s\n", $5, $6, $8, $9 }' \
            "$results/summary_pingpong.csv"
    fi
} | tee "$results/headline.txt"

echo
echo "results: $results ($(($(date +%s) - t_start)) s)"
if [ $failures -gt 0 ]; then
    echo "$failures run(s) failed or did not load the library; see the .txt logs"
    exit 1
fi
exit 0
