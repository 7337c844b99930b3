#!/usr/bin/env bash
# check-mpich.sh: run MPICH's own test suite (test/mpi from the Debian source
# of the installed MPICH) natively and with libmpix.so interposed, and fail
# iff a test that passes natively fails with the library.
#
#   test/external/check-mpich.sh --lib build/src/.libs/libmpix.so [--relink]
#   test/external/check-mpich.sh --help
#
# Packages it needs (Debian 12 names):
#   mpich libmpich-dev  the MPI under test (mpicc.mpich, mpiexec.hydra, dpkg-query)
#   apt ca-certificates apt-get source --download-only through a private sources
#                       file and private lists (system apt state untouched);
#                       dpkg-dev is NOT needed: the script unpacks the upstream
#                       tarball itself instead of letting dpkg-source do it
#   tar xz-utils        unpack mpich_<version>.orig.tar.xz
#   make gcc binutils   build the tests; readelf checks the --relink binaries
#   perl                MPICH's runtests driver
#   procps util-linux   ps (runtests looks for leftover processes), flock
# Network only on the first run (about 22 MB from deb.debian.org); the cache
# (default ~/.cache/mpix-mpich, outside the repository) then holds ~150 MB.
# See test/external/README.md for times and environment variables.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prog=check-mpich

# shellcheck source=runs.sh
. "$script_dir/runs.sh"

usage() {
    cat <<EOF
Usage: $0 [options]

Runs the selected directories of MPICH's test/mpi once per run and compares
every library run against the native run.

Options:
  --lib PATH         libmpix.so to test (needed by preload and relink runs)
  --run SPEC         a run; repeat for several (default: native, preload).
                     SPEC = KIND[:VAR=VAL[,VAR=VAL...]][@DIR[,DIR...]]
                       KIND native   no library (always run first: the baseline)
                            preload  LD_PRELOAD=<lib> on every MPI process
                            relink   tests linked with <lib> before libmpi
                       VAR=VAL  extra environment of that run's MPI processes
                                (a piece without '=' continues the value
                                before it: MPIX_UCX_TLS=tcp,self)
                       @DIRS    only these directories (relink: pt2pt,comm)
                     e.g. --run preload:MPIX_INTERCEPT=all@pt2pt
  --relink           add the run "relink" (pt2pt and comm linked with -lmpix)
  --env NAME=VALUE   extra environment for every library run (repeatable)
  --dirs LIST        test/mpi directories (default: $default_dirs)
  --lists LIST       testlist files per directory (default: testlist;
                     testlist.dtp adds the generated DTPools datatype tests)
  --timeout SEC      per-test time limit (default: 180; testlist entries
                     with their own timeLimit keep it)
  --exclude FILE     tests skipped in every run (default: mpich-exclude.txt
                     beside this script)
  --cache DIR        cache (default: \${MPIX_MPICH_CACHE:-\$HOME/.cache/mpix-mpich})
  --out DIR          logs and results (default: <cache>/results)
  -j N               make parallelism (default: 2)
  -h, --help         this text

Exit status: 0 when no test fails with the library that passes natively,
1 when some do, 2 on a usage or setup error.
EOF
}

# ---------------------------------------------------------------- options
default_dirs=pt2pt,comm,coll,datatype,errhan,info
lib=""
runs=()
global_env=()
dirs=$default_dirs
lists=testlist
timeout=180
exclude_file=$script_dir/mpich-exclude.txt
cache=${MPIX_MPICH_CACHE:-$HOME/.cache/mpix-mpich}
out=""
jobs=2

while [[ $# -gt 0 ]]; do
    case $1 in
        --lib)     need_arg "$@"; lib=$2; shift 2 ;;
        --run)     need_arg "$@"; runs+=("$2"); shift 2 ;;
        --relink)  runs+=(relink); shift ;;
        --env)     need_arg "$@"; [[ $2 == *=* ]] || die "--env wants NAME=VALUE"
                   global_env+=("$2"); shift 2 ;;
        --dirs)    need_arg "$@"; dirs=$2; shift 2 ;;
        --lists)   need_arg "$@"; lists=$2; shift 2 ;;
        --timeout) need_arg "$@"; timeout=$2; shift 2 ;;
        --exclude) need_arg "$@"; exclude_file=$2; shift 2 ;;
        --cache)   need_arg "$@"; cache=$2; shift 2 ;;
        --out)     need_arg "$@"; out=$2; shift 2 ;;
        -j)        need_arg "$@"; jobs=$2; shift 2 ;;
        -j*)       jobs=${1#-j}; shift ;;
        -h|--help) usage; exit 0 ;;
        *)         usage >&2; die "unknown argument: $1" ;;
    esac
done
[[ $timeout =~ ^[0-9]+$ ]] || die "--timeout wants seconds"
[[ $jobs =~ ^[0-9]+$ ]] || die "-j wants a number"

# The default runs; a list given without "native" still gets it, first.
if [[ ${#runs[@]} -eq 0 ]]; then runs=(native preload); fi
if [[ " ${runs[*]} " != *" native "* ]]; then runs=(native "${runs[@]}"); fi

IFS=, read -r -a dir_list <<<"$dirs"

# Parse the run specs into parallel arrays.
run_kind=(); run_env=(); run_dirs=(); run_label=()
# VAR=VAL,VAR=VAL into words; a piece without '=' belongs to the value
# before it (UCX_TLS=tcp,self).
need_lib=0; relink_dirs=()
for spec in "${runs[@]}"; do
    body=$spec; rdirs=""
    if [[ $body == *@* ]]; then rdirs=${body#*@}; body=${body%%@*}; fi
    kind=${body%%:*}; renv=""
    [[ $body == *:* ]] && renv=${body#*:}
    case $kind in
        native)  [[ -z $renv ]] || die "run '$spec': native takes no environment" ;;
        preload) need_lib=1 ;;
        relink)  need_lib=1; [[ -n $rdirs ]] || rdirs=pt2pt,comm ;;
        *)       die "run '$spec': kind must be native, preload or relink" ;;
    esac
    [[ $kind != native || -z $rdirs ]] || die "run '$spec': native always runs every --dirs directory"
    [[ -n $rdirs ]] || rdirs=$dirs
    IFS=, read -r -a rd <<<"$rdirs"
    for d in "${rd[@]}"; do
        [[ ",$dirs," == *",$d,"* ]] || die "run '$spec': directory $d is not in --dirs ($dirs), so it has no native baseline"
        [[ $kind != relink || " ${relink_dirs[*]} " == *" $d "* ]] || relink_dirs+=("$d")
    done
    run_spec_label "$spec" "$renv"
    run_kind+=("$kind"); run_env+=("$renv"); run_dirs+=("$rdirs")
done

if [[ $need_lib -eq 1 ]]; then
    need_lib_file "preload and relink runs"
fi

# ------------------------------------------------------------ environment
command -v perl >/dev/null || die "perl is needed (apt-get install perl)"
command -v make >/dev/null || die "make is needed (apt-get install make)"
MPICC=$(command -v mpicc.mpich || command -v mpicc || true)
MPIEXEC=$(command -v mpiexec.mpich || command -v mpiexec.hydra || true)
[[ -n $MPICC && -n $MPIEXEC ]] || die "MPICH's mpicc/mpiexec not found (apt-get install mpich libmpich-dev)"
mpich_version=$(dpkg-query -W -f='${source:Version}' libmpich-dev 2>/dev/null) ||
    die "cannot read the version of libmpich-dev with dpkg-query (apt-get install libmpich-dev)"
upstream_version=${mpich_version#*:}; upstream_version=${upstream_version%-*}

mkdir -p "$cache"
cache=$(realpath "$cache")
repo_top=$(git -C "$script_dir" rev-parse --show-toplevel 2>/dev/null || realpath "$script_dir/../..")
case $cache/ in "$repo_top"/*) die "the cache $cache lies inside the repository; choose another --cache" ;; esac
out=${out:-$cache/results}
mkdir -p "$out"; out=$(realpath "$out")

# One invocation at a time per cache: the builds and the test runs share it.
if command -v flock >/dev/null; then
    exec 9>"$cache/.lock"
    flock -n 9 || { note "waiting for another check-mpich on $cache"; flock 9; }
fi

vdir=$cache/mpich-$mpich_version      # everything keyed by the MPICH version
src=$vdir/src/test/mpi
declare -a timing=()

# ------------------------------------------------------------------ fetch
# apt-get source as shared/notes/external-tests.md describes: a private
# sources file with deb-src added; lists and package cache are private to
# the cache directory too, so nothing of the system's apt is written.
fetch_source() {
    local dl=$cache/download apt=$cache/apt
    local orig
    orig=$(ls "$dl"/mpich_"$upstream_version".orig.tar.* 2>/dev/null | head -n1 || true)
    if [[ -n $orig && -s $dl/.complete-$mpich_version ]]; then
        echo "$orig"; return
    fi
    note "fetching the MPICH $mpich_version source with apt-get source" >&2
    mkdir -p "$dl" "$apt/parts" "$apt/lists/partial" "$apt/cache/archives/partial"
    rm -f "$apt"/parts/*
    if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
        sed 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources >"$apt/parts/mpix-src.sources"
    fi
    if [[ -f /etc/apt/sources.list ]]; then
        sed -n 's/^deb\(\s\)/deb-src\1/p' /etc/apt/sources.list >"$apt/parts/mpix-src.list"
    fi
    [[ -s $apt/parts/mpix-src.sources || -s $apt/parts/mpix-src.list ]] ||
        die "no Debian apt sources found to derive deb-src entries from"
    local -a o=(-q -o "Dir::Etc::SourceList=$apt/parts/none.list" -o "Dir::Etc::SourceParts=$apt/parts"
                -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache")
    # As root, apt drops to _apt for downloads, which cannot write our folders.
    [[ $(id -u) -ne 0 ]] || o+=(-o APT::Sandbox::User=root)
    apt-get "${o[@]}" update >"$dl/apt-update.log" 2>&1 ||
        { cat "$dl/apt-update.log" >&2; die "apt-get update with the private source list failed"; }
    if ! (cd "$dl" && apt-get "${o[@]}" source --download-only "mpich=$mpich_version") >"$dl/apt-source.log" 2>&1; then
        cat "$dl/apt-source.log" >&2
        command -v dpkg-source >/dev/null || echo "$prog: (dpkg-dev is not installed; it is not needed for --download-only, but install it if apt asks for it)" >&2
        die "apt-get source mpich=$mpich_version failed (does the archive still carry that version?)"
    fi
    orig=$(ls "$dl"/mpich_"$upstream_version".orig.tar.* 2>/dev/null | head -n1 || true)
    [[ -n $orig ]] || die "apt-get source left no mpich_$upstream_version.orig.tar.* in $dl"
    echo "$mpich_version" >"$dl/.complete-$mpich_version"
    echo "$orig"
}

unpack_source() {
    local orig=$1
    [[ -f $src/runtests.in && -f $vdir/src/.complete ]] && return
    note "unpacking test/mpi from $(basename "$orig")"
    rm -rf "$vdir/src"; mkdir -p "$vdir/src"
    tar -xf "$orig" -C "$vdir/src" --strip-components=1 --wildcards '*/test/mpi/*'
    [[ -f $src/runtests.in ]] || die "no test/mpi/runtests.in in $orig"
    # Debian's patches are applied by dpkg-source; none of 4.0.2-3 touches
    # test/mpi. Say so loudly if a later revision does.
    local deb
    deb=$(ls "$cache/download"/mpich_"${mpich_version#*:}".debian.tar.* 2>/dev/null | head -n1 || true)
    if [[ -n $deb ]] && tar -xOf "$deb" --wildcards 'debian/patches/*' 2>/dev/null | grep '^+++ [^ ]*test/mpi/' >/dev/null; then
        note "WARNING: Debian patches of mpich $mpich_version touch test/mpi; they are not applied"
    fi
    touch "$vdir/src/.complete"
}

# ---------------------------------------------------------- configure/build
# Only C tests; Fortran, C++, ROMIO, spawn, performance and collective
# algorithm (testlist.cvar) tests are off: none of the selected directories
# needs them and they cost configure and build time. GPU support is off: with
# a CUDA toolkit installed, configure enables it and then every test that
# allocates through MTestAlloc asserts on a machine without a GPU.
configure_args=(MPICC="$MPICC" MPIEXEC="$MPIEXEC" --enable-fortran=none --disable-cxx
                --disable-romio --disable-spawn --disable-perftest --disable-collalgo-tests
                --without-cuda --without-hip --without-ze)

# configure_tree DIR [extra configure args...]: (re)configure DIR unless it
# was configured with exactly these arguments.
configure_tree() {
    local tree=$1; shift
    local want
    want=$(printf '%q ' "$src/configure" "${configure_args[@]}" "$@")
    if [[ -f $tree/.mpix-configured && $(cat "$tree/.mpix-configured") == "$want" ]]; then
        return 0
    fi
    note "configuring $tree"
    rm -rf "$tree"; mkdir -p "$tree"
    (cd "$tree" && "$src/configure" "${configure_args[@]}" "$@") >"$tree.configure.log" 2>&1 ||
        { tail -n 30 "$tree.configure.log" >&2; die "configure failed, see $tree.configure.log"; }
    echo "$want" >"$tree/.mpix-configured"
}

# build_tree DIR SUBDIR...: the support libraries, then the test directories.
build_tree() {
    local tree=$1 d; shift
    for d in util dtpools "$@"; do
        make -j"$jobs" -C "$tree/$d" >"$tree.make-$d.log" 2>&1 ||
            { tail -n 30 "$tree.make-$d.log" >&2; die "building $d failed, see $tree.make-$d.log"; }
    done
}

# ---------------------------------------------------------------- testlists
# One list per directory: the --lists files with excluded tests commented out.
# Exclusion lines: "dir/test  # reason" (every entry of that program) or
# "dir/test np  # reason" (only the entry with np ranks).
declare -A excluded=()
if [[ -f $exclude_file ]]; then
    while IFS= read -r line || [[ -n $line ]]; do
        read -r entry np rest <<<"${line%%#*}"
        [[ -n $entry ]] || continue
        read -r reason <<<"${line#*#}"
        [[ $line == *#* && -n $reason ]] || die "$exclude_file: '$line' gives no reason (dir/test [np]  # reason)"
        [[ -z $rest && $entry =~ ^[A-Za-z0-9_.+-]+/[A-Za-z0-9_.+-]+$ && $np =~ ^[0-9]*$ ]] ||
            die "$exclude_file: '$line' is not dir/test [np]  # reason"
        excluded[$entry${np:+ $np}]=$reason
    done <"$exclude_file"
fi

write_lists() {
    local tree=$1 d l f k
    mkdir -p "$out/lists"
    for k in "${!excluded[@]}"; do printf '%s\t%s\n' "$k" "${excluded[$k]}"; done >"$out/lists/excluded.tsv"
    for d in "${dir_list[@]}"; do
        : >"$out/lists/$d"
        IFS=, read -r -a ls_ <<<"$lists"
        for l in "${ls_[@]}"; do
            f=$tree/$d/$l; [[ -s $f ]] || f=$src/$d/$l
            [[ -s $f ]] || { [[ $l != testlist ]] || die "no $d/testlist"; continue; }
            awk -F'\t' -v dir="$d" '
                FNR == NR { why[$1] = $2; next }
                { split($0, w, " "); t = dir "/" w[1]; tn = t " " w[2] }
                w[1] !~ /^(#|$)/ && ((t in why) || (tn in why)) { print "# excluded (" ((t in why) ? why[t] : why[tn]) "): " $0; next }
                { print }' "$out/lists/excluded.tsv" "$f" >>"$out/lists/$d"
        done
    done
}

# ------------------------------------------------------------------- runs
# MPI processes get the library through runtests' MPITEST_PROGRAM_WRAPPER
# ("env LD_PRELOAD=... ./test"): only the test programs see it, not make,
# perl, mpiexec or hydra's proxies.
#
# Settings for every run alike. MPICH 4.0.2's ch4 device busy-polls and never
# yields, so tests with more ranks than the 2 cores crawl; no MPICH or UCX
# variable changes that (MPIR_CVAR_POLLS_BEFORE_YIELD is ch3-only).
# HYDRA_LAUNCHER=fork: one node, no ssh; UCX_WARN_UNUSED_ENV_VARS=n keeps
# UCX's warnings about run-specific UCX_* variables out of the test output.
export HYDRA_LAUNCHER=fork UCX_WARN_UNUSED_ENV_VARS=n
export USER=${USER:-$(id -un)}   # runtests lists leftover processes by user

# run_tests LABEL TREE WRAPPER DIR...: runtests per directory, then a
# results.tsv of "dir/test np args env<TAB>pass|fail|skip<TAB>seconds".
run_tests() {
    local label=$1 tree=$2 wrapper=$3 d; shift 3
    local rdir=$out/$label
    rm -rf "$rdir"; mkdir -p "$rdir"
    for d in "$@"; do
        (cd "$tree/$d" && MPITEST_TIMEOUT=$timeout MPITEST_PROGRAM_WRAPPER=$wrapper \
            "$tree/runtests" -tests="$out/lists/$d" -mpiexec="$MPIEXEC" \
            -junitfile="$rdir/$d.junit.xml" -tapfile="$rdir/$d.tap") >"$rdir/$d.log" 2>&1 ||
            note "runtests in $d ended with status $? (see $rdir/$d.log)"
        # runtests' JUnit names read " - ./prog np args env"; a test line given
        # twice gets " [2]" so that every entry keeps its own key.
        perl -ne '
            BEGIN { $dir = shift @ARGV }
            sub done { return unless defined $name; my $k = $name; $k .= " [" . $seen{$name} . "]" if ++$seen{$name} > 1;
                       print "$k\t$st\t$t\n"; undef $name }
            if (/<testcase name="[^"]*?-\s+\.\/(.*?)\s*"(?:\s+time="([^"]*)")?>(<\/testcase>)?/) {
                done(); ($name, $t) = ("$dir/$1", $2 // ""); $name =~ s/\s+/ /g; $st = "pass"; done() if $3; next }
            if (defined $name && /<failure/) { $st = "fail"; done() }
            if (defined $name && /<skipped/) { $st = "skip"; done() }
            END { done() }' "$d" "$rdir/$d.junit.xml" 2>/dev/null >>"$rdir/results.tsv" || true
    done
    touch "$rdir/results.tsv"
}

# ------------------------------------------------------------------- main
note "MPICH $mpich_version ($MPICC, $MPIEXEC); cache $vdir; results $out"

phase_start; orig=$(fetch_source); phase_end "fetch source"
phase_start; unpack_source "$orig"; phase_end "unpack test/mpi"

build=$vdir/build
phase_start; configure_tree "$build"; phase_end "configure"
phase_start; build_tree "$build" "${dir_list[@]}"; phase_end "build (${dirs})"

if [[ ${#relink_dirs[@]} -gt 0 ]]; then
    # Linked with the library before libmpi (mpicc appends -lmpi after LIBS),
    # found at run time through the rpath; one tree per library location.
    libdir=$(dirname "$lib"); libname=$(basename "$lib")
    relink=$vdir/relink-$(printf '%s' "$lib" | sha1sum | cut -c1-12)
    phase_start
    configure_tree "$relink" LIBS="-L$libdir -l:$libname" LDFLAGS="-Wl,--no-as-needed -Wl,-rpath,$libdir"
    phase_end "configure relink"
    phase_start; build_tree "$relink" "${relink_dirs[@]}"; phase_end "build relink ($(IFS=,; echo "${relink_dirs[*]}"))"
    probe=$(find "$relink/${relink_dirs[0]}" -maxdepth 1 -type f -perm -u+x | head -n1)
    needed=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'); needed=${needed:-$libname}
    [[ -n $probe && $(readelf -d "$probe") == *"(NEEDED)"*"[$needed]"* ]] ||
        die "${probe:-no test program in $relink/${relink_dirs[0]}} is not linked with $needed"
fi

# Results of earlier invocations go; only this one's runs are in $out.
rm -rf "$out/lists" "$out/summary.txt"
for d in "$out"/*/; do if [[ -f $d/results.tsv ]]; then rm -rf "$d"; fi; done
write_lists "$build"

for i in "${!run_kind[@]}"; do
    kind=${run_kind[$i]}; label=${run_label[$i]}
    IFS=, read -r -a rd <<<"${run_dirs[$i]}"
    env_words=()
    if [[ $kind != native ]]; then
        env_words=("${global_env[@]}")
        [[ -z ${run_env[$i]} ]] || { split_env "${run_env[$i]}"; env_words+=("${env_split[@]}"); }
    fi
    [[ $kind != preload ]] || env_words=("LD_PRELOAD=$lib" "${env_words[@]}")
    wrapper=""
    [[ ${#env_words[@]} -eq 0 ]] || wrapper="env $(printf '%q ' "${env_words[@]}")"
    tree=$build; [[ $kind != relink ]] || tree=$relink
    note "run $label: ${rd[*]}${wrapper:+ (wrapper: $wrapper)}"
    phase_start; run_tests "$label" "$tree" "$wrapper" "${rd[@]}"; phase_end "run $label"
done

# ---------------------------------------------------------------- compare
# A failure is a test that passed natively and did not pass under the
# library (a missing result counts as not passed). Native failures are
# reported and tolerated.
summary=$out/summary.txt
{
    echo "MPICH $mpich_version test/mpi, lists: $lists, per-test timeout ${timeout}s"
    [[ ${#excluded[@]} -eq 0 ]] || { echo "excluded in every run:"; for k in "${!excluded[@]}"; do echo "  $k  # ${excluded[$k]}"; done | sort; }
    echo "phase times:"; printf '  %s\n' "${timing[@]}"
} >"$summary"

total_pass=0; total_fail=0
native_tsv=$out/${run_label[0]}/results.tsv
for i in "${!run_kind[@]}"; do
    label=${run_label[$i]}
    res=$(awk -F'\t' -v dirs=",${run_dirs[$i]}," -v base=$([[ $i -eq 0 ]] && echo 1 || echo 0) '
        FNR == NR { if ($2 != "skip") { nat[$1] = $2; order[++n] = $1 } next }
        { got[$1] = $2 }
        END {
            for (j = 1; j <= n; j++) {
                k = order[j]; split(k, p, "/")
                if (index(dirs, "," p[1] ",") == 0) continue
                s = (k in got) ? got[k] : "missing"
                if (s == "skip") continue
                total++
                if (s == "pass") pass++; else if (nat[k] == "pass") { fail++; reg[++r] = k " (" s ")" } else { tol++; tl[++t] = k }
            }
            printf "%d %d %d %d %d\n", pass, total - pass, total, fail, tol
            for (j = 1; j <= t && base; j++) print "  fails natively: " tl[j]
            for (j = 1; j <= r; j++) print "  passed natively, not here: " reg[j]
            if (r) print "  (their output: the <dir>.tap files in the run folder)"
        }' "$native_tsv" "$out/$label/results.tsv")
    read -r pass failed total regress tolerated <<<"$(head -n1 <<<"$res")"
    line="run $label: $pass passed / $failed failed / $total total"
    if [[ $i -eq 0 ]]; then
        line+=" (baseline)"
    else
        line+=" ($regress failed only with the library, $tolerated fail natively too)"
        total_pass=$((total_pass + pass)); total_fail=$((total_fail + regress))
    fi
    { echo "$line"; tail -n +2 <<<"$res"; } | tee -a "$summary"
done
echo "logs and JUnit/TAP results: $out (summary.txt)"
printf '%s\n' "phase times:" "${timing[@]/#/  }"
echo "$prog: $total_pass passed, $total_fail failed" | tee -a "$summary"
[[ $total_fail -eq 0 ]]
