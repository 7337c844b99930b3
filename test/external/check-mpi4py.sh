#!/usr/bin/env bash
# check-mpi4py.sh: run modules of mpi4py's own test suite (test/ of the PyPI
# sdist, mpi4py built against the MPI underneath) with 1 and 2 ranks,
# natively and with libmpix.so preloaded, and fail iff a test that passes
# natively does not pass with the library.
#
#   test/external/check-mpi4py.sh --lib build/src/.libs/libmpix.so
#   test/external/check-mpi4py.sh --help
#
# The modules (default; --modules changes them): those that exercise
# point-to-point (buffers, pickled objects, matched probes, partitioned,
# zero-size messages, pickle-5 out-of-band messages through mprobe),
# communicators (intra and inter), requests (generalized too), status,
# datatypes, error handlers and exceptions, info and message specifications:
#   test_p2p_buf test_p2p_obj test_p2p_buf_matched test_p2p_obj_matched
#   test_p2p_buf_part test_msgzero test_util_pkl5 test_comm test_comm_inter
#   test_request test_status test_datatype test_errhandler test_exceptions
#   test_info test_msgspec test_grequest
# in this order, all in one process per run: test_grequest last, because
# after it MPICH 4.0.2 reports wrong error classes (ERR_BUFFER, raised by its
# query callback) for 9 tests of test_exceptions, natively as well.
# Left out: collectives, RMA, I/O, spawn, sessions, threads, topologies,
# groups, packing (they do not go through mpix's engine, or not more than the
# above), and test_datatype's TestDatatypePickle (mpi4py-exclusions.txt).
# Times on 2 cores: see test/external/README.md.
#
# Packages it needs (Debian 12 names):
#   mpich libmpich-dev          the MPI under test (--mpicc, --mpiexec)
#   python3 python3-dev python3-venv
#                               a venv and the headers to build mpi4py
#   gcc                         mpi4py's C extension (through mpicc)
#   coreutils (timeout, sha256sum) tar gzip util-linux (flock)
# Network only on the first run: the mpi4py sdist (0.5 MB, sha256-pinned)
# and the build requirements Cython and setuptools (wheels, ~5 MB) from
# PyPI through pip. The cache (default ~/.cache/mpix-mpi4py, outside the
# repository) then holds ~60 MB: the sdist, and per (mpi4py, MPI, Python) a
# venv with mpi4py built in it and the sdist's test/ directory.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prog=check-mpi4py
driver=$script_dir/mpi4py-driver.py

# shellcheck source=runs.sh
. "$script_dir/runs.sh"

# The pinned mpi4py: version and the sha256 of its PyPI sdist; the build
# requirements installed into the venv (pip builds without isolation).
mpi4py_version=4.1.2
mpi4py_sha256=56860286dc45f20e8821e93cb06669e30462348bf866f685553fa4b712d58d02
build_requires=("setuptools==80.9.0" "Cython==3.1.8")

default_modules=test_p2p_buf,test_p2p_obj,test_p2p_buf_matched,test_p2p_obj_matched,test_p2p_buf_part,test_msgzero,test_util_pkl5,test_comm,test_comm_inter,test_request,test_status,test_datatype,test_errhandler,test_exceptions,test_info,test_msgspec,test_grequest

usage() {
    cat <<EOF
Usage: $0 [options]

Builds mpi4py $mpi4py_version against the MPI underneath (once, cached), runs the
selected modules of its test suite with each number of ranks once per run,
and compares every library run against the native run, test by test.

Options:
  --lib PATH         libmpix.so to test (needed by preload runs)
  --run SPEC         a run; repeat for several (default: native, preload,
                     preload:MPIX_INTERCEPT=all).
                     SPEC = KIND[:VAR=VAL[,VAR=VAL...]][@MODULE[,MODULE...]]
                       KIND native   no library (always run first: the baseline)
                            preload  LD_PRELOAD=<lib> MPIX_VERBOSE=1 on every rank
                       VAR=VAL  extra environment of that run's ranks (a piece
                                without '=' continues the value before it:
                                MPIX_UCX_TLS=tcp,self)
                       @MODULES only these modules
                     e.g. --run preload:MPIX_INTERCEPT=all,MPIX_TRANSPORT=pmpi
  --env NAME=VALUE   extra environment for every library run (repeatable)
  --modules LIST     test modules (default: $default_modules)
  --np LIST          numbers of ranks (default: 1,2)
  --timeout SEC      limit for one mpiexec (all modules of a run; default 600)
  --exclude FILE     tests skipped in every run (default: mpi4py-exclusions.txt
                     beside this script)
  --mpicc PATH       MPI compiler wrapper mpi4py is built with (default: \$MPICC,
                     else mpicc)
  --mpiexec PATH     (default: \$MPIEXEC, else mpiexec)
  --mpiexec-flags F  its options before -n, one string split on blanks
                     (default: \$MPIEXEC_FLAGS; Open MPI as root needs
                     --allow-run-as-root, make passes configure's flags)
  --python PATH      Python that makes the venv (default: \$PYTHON, else python3)
  --cache DIR        cache (default: \${MPIX_MPI4PY_CACHE:-\$HOME/.cache/mpix-mpi4py})
  --out DIR          logs and results (default: <cache>/results)
  -h, --help         this text

Exit status: 0 when no test fails with the library that passes natively,
every library mpiexec ends with status 0 where the native one did (a crash
or hang in MPI_Finalize counts) and every preload run shows the library at
work; 1 otherwise; 2 on a usage or setup error.
EOF
}

# ---------------------------------------------------------------- options
lib=""
runs=()
global_env=()
modules=$default_modules
np_list=1,2
timeout=600
exclude_file=$script_dir/mpi4py-exclusions.txt
MPICC=${MPICC:-mpicc}
MPIEXEC=${MPIEXEC:-mpiexec}
MPIEXEC_FLAGS=${MPIEXEC_FLAGS:-}
PYTHON=${PYTHON:-python3}
cache=${MPIX_MPI4PY_CACHE:-$HOME/.cache/mpix-mpi4py}
out=""

while [[ $# -gt 0 ]]; do
    case $1 in
        --lib)     need_arg "$@"; lib=$2; shift 2 ;;
        --run)     need_arg "$@"; runs+=("$2"); shift 2 ;;
        --env)     need_arg "$@"; [[ $2 == *=* ]] || die "--env wants NAME=VALUE"
                   global_env+=("$2"); shift 2 ;;
        --modules) need_arg "$@"; modules=$2; shift 2 ;;
        --np)      need_arg "$@"; np_list=$2; shift 2 ;;
        --timeout) need_arg "$@"; timeout=$2; shift 2 ;;
        --exclude) need_arg "$@"; exclude_file=$2; shift 2 ;;
        --mpicc)   need_arg "$@"; MPICC=$2; shift 2 ;;
        --mpiexec) need_arg "$@"; MPIEXEC=$2; shift 2 ;;
        --mpiexec-flags) [[ $# -ge 2 ]] || die "$1 needs an argument"; MPIEXEC_FLAGS=$2; shift 2 ;;
        --python)  need_arg "$@"; PYTHON=$2; shift 2 ;;
        --cache)   need_arg "$@"; cache=$2; shift 2 ;;
        --out)     need_arg "$@"; out=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *)         usage >&2; die "unknown argument: $1" ;;
    esac
done
[[ $timeout =~ ^[0-9]+$ ]] || die "--timeout wants seconds"
[[ $np_list =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--np wants a list of numbers (1,2)"
[[ $modules =~ ^test_[A-Za-z0-9_]+(,test_[A-Za-z0-9_]+)*$ ]] || die "--modules wants test_* module names, comma-separated"
IFS=, read -r -a nps <<<"$np_list"
IFS=, read -r -a module_list <<<"$modules"

if [[ ${#runs[@]} -eq 0 ]]; then runs=(native preload preload:MPIX_INTERCEPT=all); fi
if [[ " ${runs[*]} " != *" native "* ]]; then runs=(native "${runs[@]}"); fi

# Parse the run specs into parallel arrays (as check-mpich.sh does).
run_kind=(); run_env=(); run_mods=(); run_label=()
need_lib=0
for spec in "${runs[@]}"; do
    body=$spec; rmods=""
    if [[ $body == *@* ]]; then rmods=${body#*@}; body=${body%%@*}; fi
    kind=${body%%:*}; renv=""
    [[ $body == *:* ]] && renv=${body#*:}
    case $kind in
        native)  [[ -z $renv && -z $rmods ]] || die "run '$spec': native takes no environment and runs every module" ;;
        preload) need_lib=1 ;;
        *)       die "run '$spec': kind must be native or preload" ;;
    esac
    [[ -n $rmods ]] || rmods=$modules
    IFS=, read -r -a rm_ <<<"$rmods"
    for m in "${rm_[@]}"; do
        [[ ",$modules," == *",$m,"* ]] || die "run '$spec': module $m is not in --modules, so it has no native baseline"
    done
    run_spec_label "$spec" "$renv"
    run_kind+=("$kind"); run_env+=("$renv"); run_mods+=("$rmods")
done

if [[ $need_lib -eq 1 ]]; then
    need_lib_file "preload runs"
fi

# ------------------------------------------------------------ environment
MPICC=$(command -v "$MPICC" || true)
MPIEXEC=$(command -v "$MPIEXEC" || true)
[[ -n $MPICC ]] || die "no MPI compiler wrapper (--mpicc; apt-get install libmpich-dev)"
[[ -n $MPIEXEC ]] || die "no mpiexec (--mpiexec; apt-get install mpich)"
PYTHON=$(command -v "$PYTHON" || true)
[[ -n $PYTHON ]] || die "no python3 (--python; apt-get install python3 python3-dev python3-venv)"
for t in timeout sha256sum tar; do command -v $t >/dev/null || die "$t is needed (coreutils, tar)"; done
py_ver=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || die "$PYTHON does not run"
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null ||
    die "$PYTHON cannot make a venv with pip (apt-get install python3-venv)"
py_inc=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
[[ -f $py_inc/Python.h ]] || die "no $py_inc/Python.h to build mpi4py against (apt-get install python3-dev)"

# What identifies the MPI: its name and version as the wrapper reports them,
# and a hash of the wrapper's path and command line (another install of the
# same version gets its own build).
mpi_name=$("$MPICC" -v 2>/dev/null </dev/null | sed -n 's/.*MPICH version \([0-9A-Za-z.]*\).*/mpich-\1/p' | head -n1 || true)
[[ -n $mpi_name ]] || mpi_name=$("$MPICC" --showme:version 2>/dev/null | sed -n 's/.*Open MPI \([0-9A-Za-z.]*\).*/openmpi-\1/p' | head -n1 || true)
[[ -n $mpi_name ]] || mpi_name=mpi
mpi_show=$("$MPICC" -show 2>/dev/null || "$MPICC" --showme 2>/dev/null || true)
[[ -n $mpi_show ]] || die "$MPICC -show (or --showme) prints nothing: is it an MPI compiler wrapper?"
mpi_key=$mpi_name-$(printf '%s\n%s\n' "$(realpath "$MPICC")" "$mpi_show" | sha1sum | cut -c1-8)
py_key=py$py_ver-$(realpath "$PYTHON" | sha1sum | cut -c1-8)

mkdir -p "$cache"
cache=$(realpath "$cache")
repo_top=$(git -C "$script_dir" rev-parse --show-toplevel 2>/dev/null || realpath "$script_dir/../..")
case $cache/ in "$repo_top"/*) die "the cache $cache lies inside the repository; choose another --cache" ;; esac
out=${out:-$cache/results}
mkdir -p "$out"; out=$(realpath "$out")

if command -v flock >/dev/null; then
    exec 9>"$cache/.lock"
    flock -n 9 || { note "waiting for another check-mpi4py on $cache"; flock 9; }
fi

vdir=$cache/mpi4py-$mpi4py_version-$mpi_key-$py_key
venv=$vdir/venv
testdir=$vdir/test
sdist=$cache/download/mpi4py-$mpi4py_version.tar.gz
declare -a timing=()

# ------------------------------------------------------------ venv, fetch
# The venv holds the build requirements and then mpi4py; pip downloads the
# sdist into the cache (hash-checked) and builds it without isolation, so
# the versions of Cython and setuptools are the pinned ones.
pip_q=(--disable-pip-version-check --no-input -q)
make_venv() {
    [[ -x $venv/bin/python && -f $vdir/.venv-complete ]] && return
    note "making a venv with $PYTHON (Python $py_ver) in $venv"
    rm -rf "$vdir"; mkdir -p "$vdir"
    "$PYTHON" -m venv "$venv" >"$vdir/venv.log" 2>&1 ||
        { cat "$vdir/venv.log" >&2; die "$PYTHON -m venv failed (apt-get install python3-venv)"; }
    "$venv/bin/pip" install "${pip_q[@]}" "${build_requires[@]}" >>"$vdir/venv.log" 2>&1 ||
        { tail -n 20 "$vdir/venv.log" >&2; die "pip install ${build_requires[*]} failed (network access to PyPI?)"; }
    touch "$vdir/.venv-complete"
}

fetch_sdist() {
    if [[ -f $sdist ]] && sha256sum -c --status <<<"$mpi4py_sha256  $sdist"; then return; fi
    note "downloading the mpi4py $mpi4py_version sdist from PyPI"
    mkdir -p "$cache/download"
    rm -f "$sdist"
    printf 'mpi4py==%s --hash=sha256:%s\n' "$mpi4py_version" "$mpi4py_sha256" >"$cache/download/requirements.txt"
    "$venv/bin/pip" download "${pip_q[@]}" --no-deps --no-binary :all: --no-build-isolation --require-hashes \
        -r "$cache/download/requirements.txt" -d "$cache/download" >"$cache/download/pip.log" 2>&1 ||
        { tail -n 20 "$cache/download/pip.log" >&2; die "pip download mpi4py==$mpi4py_version failed (network access to PyPI?)"; }
    [[ -f $sdist ]] || die "pip download left no $sdist"
    sha256sum -c --status <<<"$mpi4py_sha256  $sdist" || die "$sdist: sha256 is not $mpi4py_sha256"
}

# ------------------------------------------------------------------ build
# CFLAGS="-O0 -g0" (after Python's own -O2 -g, so they win): the 13 MB
# Cython-generated MPI.c compiles in 35 s of CPU instead of 250 s (-O2 -g0)
# or 270 s (-O2 -g). mpi4py is the harness here, not what is tested.
build_mpi4py() {
    if [[ -f $vdir/.complete ]]; then return; fi
    note "building mpi4py $mpi4py_version with $MPICC (a few minutes)"
    rm -rf "$testdir"
    MPICC=$MPICC CFLAGS="-O0 -g0" "$venv/bin/pip" install --disable-pip-version-check --no-input -v --no-deps --no-index --no-build-isolation \
        "$sdist" >"$vdir/build.log" 2>&1 ||
        { tail -n 30 "$vdir/build.log" >&2; die "building mpi4py failed, see $vdir/build.log"; }
    mkdir -p "$testdir"
    tar -xzf "$sdist" -C "$testdir" --strip-components=2 "mpi4py-$mpi4py_version/test" ||
        die "no test/ directory in $sdist"
    [[ -f $testdir/main.py ]] || die "no test/main.py in $sdist"
    touch "$vdir/.complete"
}

# mpi4py must load the MPI library that a program built with this MPICC
# loads: otherwise another MPI would be tested.
check_build() {
    local probe=$vdir/probe got want ext
    ext=$(ls "$venv"/lib/python*/site-packages/mpi4py/MPI.*so 2>/dev/null | head -n1)
    [[ -n $ext ]] || die "no mpi4py/MPI.*.so in $venv (remove $vdir)"
    if [[ ! -x $probe ]]; then
        printf '#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); return MPI_Finalize(); }\n' >"$probe.c"
        "$MPICC" "$probe.c" -o "$probe" >"$probe.log" 2>&1 || { cat "$probe.log" >&2; die "$MPICC cannot build an MPI program"; }
    fi
    want=$(ldd "$probe" | awk '$3 ~ /\// { print $3 }' | sort)
    got=$(ldd "$ext" | awk '$3 ~ /\// { print $3 }' | sort)
    mpi_libs=$(comm -12 <(echo "$want") <(echo "$got") | grep -Ei 'mpi' || true)
    [[ -n $mpi_libs ]] && ! comm -23 <(echo "$want") <(echo "$got") | grep -qEi 'mpi' ||
        die "$ext does not load the MPI libraries of $MPICC ($(echo $want)); remove $vdir to rebuild"
    "$venv/bin/python" -c 'from mpi4py import MPI' 2>"$vdir/import.log" ||
        { cat "$vdir/import.log" >&2; die "mpi4py does not import from $venv"; }
}

# ------------------------------------------------------------- exclusions
# Lines "PATTERN [np]  # reason": PATTERN a unittest id or an fnmatch pattern
# over ids (module.Class.method; mpi4py's own -x, which adds '*' around a
# pattern without one), np only for that number of ranks.
excl_pat=(); excl_np=(); excl_why=()
if [[ -f $exclude_file ]]; then
    while IFS= read -r line || [[ -n $line ]]; do
        read -r pat np rest <<<"${line%%#*}"
        [[ -n $pat ]] || continue
        read -r reason <<<"${line#*#}"
        [[ $line == *#* && -n $reason ]] || die "$exclude_file: '$line' gives no reason (PATTERN [np]  # reason)"
        [[ -z $rest && $pat =~ ^test_[A-Za-z0-9_.*?]+$ && $np =~ ^[0-9]*$ ]] ||
            die "$exclude_file: '$line' is not PATTERN [np]  # reason"
        excl_pat+=("$pat"); excl_np+=("$np"); excl_why+=("$reason")
    done <"$exclude_file"
fi
excludes_for() {   # excludes_for NP: -x arguments
    local i; xargs_=()
    for i in "${!excl_pat[@]}"; do
        [[ -z ${excl_np[$i]} || ${excl_np[$i]} == "$1" ]] && xargs_+=(-x "${excl_pat[$i]}")
    done
    return 0
}

# ------------------------------------------------------------------- runs
# One mpiexec per run and number of ranks runs all its modules. When it
# dies or times out, the modules not yet started are run again by a new
# mpiexec (the test that was running and the rest of its module count as
# not passed), so one crash does not hide the other modules' results.
export HYDRA_LAUNCHER=fork UCX_WARN_UNUSED_ENV_VARS=n

# combine RUNDIR NP: the ranks' outcomes into RUNDIR/results.tsv
# (id<TAB>pass|fail|skip<TAB>detail). A test fails if a rank failed it,
# erred, passed unexpectedly, did not finish it ("crash") or did not run it
# while another rank did ("missing"); it is skipped if every rank skipped it.
combine() {
    local rdir=$1 np=$2
    awk -F'\t' -v np="$np" '
        FNR == 1 { na = split(FILENAME, a, "."); rank = a[na - 1] }
        $2 == "start" { if (!((rank, $1) in st)) st[rank, $1] = "crash"; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }; next }
        { st[rank, $1] = $2; det[rank, $1] = $4
          if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
        END {
            for (j = 1; j <= n; j++) {
                id = order[j]; s = ""; d = ""; pass = 0; skip = 0
                for (r = 0; r < np; r++) {
                    x = ((r, id) in st) ? st[r, id] : "missing"
                    if (x == "pass" || x == "xfail") pass++
                    else if (x == "skip") skip++
                    else if (s == "") { s = "fail"; d = "rank " r ": " x (det[r, id] != "" ? " (" det[r, id] ")" : "") }
                }
                if (s == "") s = (skip == np) ? "skip" : "pass"
                print id "\t" s "\t" d
            }
        }' $(ls "$rdir"/a*.*.tsv 2>/dev/null | sort -V) >"$rdir/results.tsv"
}

# run_tests LABEL NP ENV_WORDS...; the modules in run_modules.
run_tests() {
    local label=$1 np=$2; shift 2
    local rdir=$out/$label/np$np attempt=0 rc todo started m prev launch=()
    [[ $# -eq 0 ]] || launch=(env "$@")
    rm -rf "$rdir"; mkdir -p "$rdir"
    excludes_for "$np"
    todo=("${run_modules[@]}")
    while [[ ${#todo[@]} -gt 0 ]]; do
        attempt=$((attempt + 1))
        rc=0
        # shellcheck disable=SC2086  # the launcher's options, split on blanks
        timeout -k 15 "$timeout" "$MPIEXEC" $MPIEXEC_FLAGS -n "$np" "${launch[@]}" "$venv/bin/python" "$driver" \
            --testdir "$testdir" --out "$rdir/a$attempt" "${xargs_[@]}" "${todo[@]}" \
            >>"$rdir/log" 2>&1 || rc=$?
        echo "$rc" >"$rdir/status"
        [[ $rc -eq 0 ]] && break
        if [[ $rc -eq 124 || $rc -eq 137 ]]; then
            note "  np=$np: mpiexec ran past ${timeout}s (attempt $attempt), see $rdir/log"
        else
            note "  np=$np: mpiexec ended with status $rc (attempt $attempt), see $rdir/log"
        fi
        # The modules of which no test started yet get another mpiexec.
        started=$(cut -f1 "$rdir"/a"$attempt".*.tsv 2>/dev/null | cut -d. -f1 | sort -u || true)
        prev=${#todo[@]}; local rest=()
        for m in "${todo[@]}"; do grep -qx "$m" <<<"$started" || rest+=("$m"); done
        [[ ${#rest[@]} -lt $prev ]] || { note "  np=$np: no progress, giving up on: ${rest[*]}"; break; }
        todo=("${rest[@]}")
    done
    combine "$rdir" "$np"
}

# evidence LABEL NP INTERCEPT_ALL: what the ranks saw of libmpix (.mpix files)
# and the transport statistics MPIX_VERBOSE=1 prints at MPI_Finalize. Sets
# evidence_line and evidence_ok.
evidence() {
    local rdir=$out/$1/np$2 np=$2 all=$3
    local files loaded handled sends
    files=$(ls "$rdir"/a*.*.mpix 2>/dev/null | wc -l)
    loaded=$(cat "$rdir"/a*.*.mpix 2>/dev/null | grep -c '^loaded 1$' || true)
    handled=$(cat "$rdir"/a*.*.mpix 2>/dev/null | grep -c '^world_handled 1$' || true)
    sends=$(sed -n 's/^\[mpix\] rank [0-9]*: transport \([a-z]*\): eager \([0-9]*\), rendezvous \([0-9]*\), arrivals \([0-9]*\),.*/\1 \2 \3 \4/p' \
            "$rdir/log" | awk '{ t[$1] = 1; e += $2; r += $3; a += $4 } END { for (k in t) n = n (n ? "+" : "") k;
                               printf "%s %d %d %d\n", (n ? n : "-"), e, r, a }')
    read -r tname eager rdv arrivals <<<"$sends"
    evidence_line="libmpix loaded on $loaded of $files rank reports, MPI_COMM_WORLD handled on $handled;"
    if [[ $tname == - ]]; then evidence_line+=" no mpix transport traffic"
    else evidence_line+=" transport $tname carried $eager eager + $rdv rendezvous sends, $arrivals arrivals (all ranks)"; fi
    evidence_ok=1
    if [[ $files -eq 0 || $loaded -ne $files ]]; then
        evidence_ok=0; evidence_line+=" -- libmpix was NOT loaded in every process"
    elif [[ $all -eq 1 && ( $handled -ne $files || $((eager + rdv)) -eq 0 ) ]]; then
        evidence_ok=0; evidence_line+=" -- with MPIX_INTERCEPT=all, mpix's engine should carry MPI_COMM_WORLD's messages"
    fi
}

# ------------------------------------------------------------------- main
note "mpi4py $mpi4py_version, MPI $mpi_name ($MPICC, $MPIEXEC), Python $py_ver ($PYTHON); cache $vdir; results $out"

phase_start; make_venv; phase_end "venv + build requirements"
phase_start; fetch_sdist; phase_end "fetch sdist"
phase_start; build_mpi4py; phase_end "build mpi4py"
check_build
note "mpi4py loads $(echo $mpi_libs): $("$venv/bin/python" -c 'from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0].strip())')"

rm -rf "$out/summary.txt"
for d in "$out"/*/; do if [[ -f $d/.run ]]; then rm -rf "$d"; fi; done

run_intercept=()
for i in "${!run_kind[@]}"; do
    kind=${run_kind[$i]}; label=${run_label[$i]}
    IFS=, read -r -a run_modules <<<"${run_mods[$i]}"
    env_words=()
    if [[ $kind == preload ]]; then
        # MPIX_VERBOSE=1 first, so that a run's own MPIX_VERBOSE wins: the
        # statistics line at MPI_Finalize is the evidence of traffic.
        env_words=("LD_PRELOAD=$lib" MPIX_VERBOSE=1 "${global_env[@]}")
        [[ -z ${run_env[$i]} ]] || { split_env "${run_env[$i]}"; env_words+=("${env_split[@]}"); }
    fi
    all=0
    for e in "${env_words[@]}"; do [[ $e != MPIX_INTERCEPT=* ]] || { [[ $e == MPIX_INTERCEPT=all ]] && all=1 || all=0; }; done
    run_intercept+=("$all")
    mkdir -p "$out/$label"; touch "$out/$label/.run"
    note "run $label: np ${nps[*]}, ${#run_modules[@]} modules${env_words[0]+ (env: ${env_words[*]})}"
    for np in "${nps[@]}"; do
        phase_start; run_tests "$label" "$np" "${env_words[@]}"; phase_end "run $label np=$np"
    done
done

# ---------------------------------------------------------------- compare
# Per run and number of ranks, over the tests that did not skip natively: a
# failure is a test that passed natively and did not pass with the library
# (missing counts as not passed); one skipped with the library that passed
# natively is counted as skipped and listed. Native failures are tolerated.
summary=$out/summary.txt
{
    echo "mpi4py $mpi4py_version test suite ($modules), np $np_list, MPI $mpi_name, Python $py_ver"
    if [[ ${#excl_pat[@]} -gt 0 ]]; then
        echo "excluded in every run:"
        for i in "${!excl_pat[@]}"; do echo "  ${excl_pat[$i]}${excl_np[$i]:+ (np ${excl_np[$i]})}  # ${excl_why[$i]}"; done
    fi
    echo "phase times:"; printf '  %s\n' "${timing[@]}"
} >"$summary"

total_pass=0; total_fail=0; total_skip=0; no_evidence=0
for i in "${!run_kind[@]}"; do
    label=${run_label[$i]}
    for np in "${nps[@]}"; do
        res=$(awk -F'\t' -v mods=",${run_mods[$i]}," -v base=$([[ $i -eq 0 ]] && echo 1 || echo 0) '
            FNR == NR { split($1, p, "."); if (index(mods, "," p[1] ",") == 0) next
                        if ($2 != "skip") { nat[$1] = $2; order[++n] = $1 } else nskip++; next }
            { got[$1] = $2; det[$1] = $3 }
            END {
                for (j = 1; j <= n; j++) {
                    k = order[j]; split(k, p, ".")
                    if (index(mods, "," p[1] ",") == 0) continue
                    s = (k in got) ? got[k] : "missing"
                    total++
                    if (s == "pass") pass++
                    else if (s == "skip" && nat[k] == "pass") { skip++; sk[++q] = k }
                    else if (nat[k] == "pass") { fail++; reg[++r] = k " (" (s == "fail" ? det[k] : s) ")" }
                    else { tol++; tl[++t] = k }
                }
                printf "%d %d %d %d %d %d %d\n", pass, total - pass, total, fail, tol, skip, nskip
                for (j = 1; j <= t && base; j++) print "  fails natively: " tl[j]
                for (j = 1; j <= q; j++) print "  passed natively, skipped here: " sk[j]
                for (j = 1; j <= r; j++) print "  passed natively, not here: " reg[j]
                if (r) print "  (tracebacks: the a*.<rank>.log files in the run folder)"
            }' "$out/${run_label[0]}/np$np/results.tsv" "$out/$label/np$np/results.tsv")
        read -r pass failed total regress tolerated skipped nskipped <<<"$(head -n1 <<<"$res")"
        line="run $label np=$np: $pass passed / $failed not passed / $total total"
        if [[ $i -eq 0 ]]; then
            line+=" (baseline; $nskipped more skipped natively by mpi4py's own conditions, not compared)"
        else
            line+=" ($regress failed only with the library, $tolerated fail natively too, $skipped skipped)"
            total_pass=$((total_pass + pass)); total_fail=$((total_fail + regress)); total_skip=$((total_skip + skipped))
        fi
        { echo "$line"; tail -n +2 <<<"$res"; } | tee -a "$summary"
        # The last mpiexec must end as the native one did: a crash or hang
        # in MPI_Finalize or at exit, after every test passed, is a failure.
        st=$(cat "$out/$label/np$np/status" 2>/dev/null || echo missing)
        nst=$(cat "$out/${run_label[0]}/np$np/status" 2>/dev/null || echo missing)
        if [[ $i -gt 0 && $st != 0 && $nst == 0 ]]; then
            echo "  failed: the last mpiexec ended with status $st (native: 0); see $out/$label/np$np/log" | tee -a "$summary"
            total_fail=$((total_fail + 1))
        fi
        if [[ ${run_kind[$i]} == preload ]]; then
            evidence "$label" "$np" "${run_intercept[$i]}"
            echo "  mpix: $evidence_line" | tee -a "$summary"
            [[ $evidence_ok -eq 1 ]] || no_evidence=$((no_evidence + 1))
        fi
    done
done
echo "logs and per-test results: $out (summary.txt; per run and np: log, results.tsv, a<attempt>.<rank>.{tsv,log,mpix})"
printf '%s\n' "phase times:" "${timing[@]/#/  }"
if [[ $no_evidence -gt 0 ]]; then
    echo "$prog: $no_evidence preload run(s) without evidence that libmpix was at work (see the 'mpix:' lines)" | tee -a "$summary"
fi
echo "$prog: $total_pass passed, $total_fail failed, $total_skip skipped" | tee -a "$summary"
[[ $total_fail -eq 0 && $no_evidence -eq 0 ]]
