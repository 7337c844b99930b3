#!/usr/bin/env bash
# Everything mpix runs on the GPU machine, in one call of the device tool:
# unpack MPICH (Debian .debs carried in .gpu-debs/), build mpix with CUDA,
# run `make check` (GPU tests included, nothing skipped for want of a GPU),
# compute-sanitizer over the GPU tests, and leave logs under $OUT.
#
#   device run, carry: configure Makefile.in aclocal.m4 config.h.in build-aux config .gpu-debs
#   command: bash test/gpu/run.sh [STAGE...]
#
# Or without building there: `make gpu-bundle` here (the GPU programs and
# libmpix.so, built against the same Debian MPICH), and carry .gpu-bundle
# and .gpu-debs only; the stages then run the bundled programs (the tests
# and gpu-tests stages run the GPU testlist; bench-cpu runs the
# point-to-point benchmarks, built there with mpicc, without bench_match).
# Stages (default: tests): tests (build, make check, compute-sanitizer),
# gpu-tests (the same with only the GPU testlist),
# bench-cpu (matching engine and point-to-point benchmarks, native vs mpix
# per transport, on this quiet 16-core host; MPIX_BENCH_ROWS picks the rows
# of bench/run_transport_benchmarks.sh), bench-gpu (the GPU benchmarks), bench-match
# (GPU batch matching against the CPU batch matcher), stream (issue 16:
# the stream_* tests with memcheck and racecheck, bench_stream and
# bench_jacobi on both enqueue paths), stream-tests (those tests alone),
# stream-sanitize (memcheck and racecheck of the stream tests alone),
# stream-bench (small-message enqueue
# ping-pong only, to run beside bench-dev), stream-large (bench_stream up
# to 64 MiB on both paths, without the tests), jacobi (bench_jacobi on
# both paths, without the tests), bench-dev
# (device-initiated send/recv, bench/bench_dev_p2p), dev-tests (only the
# dev_* lines of the GPU testlist, with memcheck and racecheck), scaling
# (issue 8: bench/run_scaling.sh on every GPU of the host), suite (issue 25:
# the copy kernel's tests and bench_gpu_suite per setting), sublist (the
# GPU testlist entries matching MPIX_SUBLIST, no sanitizer), bench-mid (issue
# 30: host messages 1 KiB - 16 MiB, native vs mpix), bench-threads (issue 27:
# bench/bench_threads, 1-8 threads per rank, native vs mpix; then
# bench_match_threads, the engine alone at 1-16 threads), reuse (issue 24:
# dev_reuse and p2p_native, then each under compute-sanitizer with 2 ranks),
# sanitize-two (gpu-tests' two-rank compute-sanitizer runs alone; those
# named by the regex MPIX_SAN2_ONLY),
# stream-pull (issue 26: bench_stream at 1-64 MiB, pulled, ring and
# host-driven), probe (issue 25: dev_reuse on the proxy path, host stacks if it hangs), four
# (issue 26: all-to-all and Jacobi on 4 GPUs, after bench-dev), variants
# (other builds of bench_gpu_copy and bench_dev_p2p side by side), mid-sweep
# (issue 26: Jacobi, enqueue and device latency per medium-message bound),
# adhoc (MPIX_ADHOC, a bash snippet, in this script's environment). The build
# always runs first, so any stage can run alone.
#
# The generated build files are carried because the GPU machine has no
# libtool; run ./autogen.sh here first.
set -u
stages=${*:-tests}
has_stage() { [[ " $stages " == *" $1 "* ]]; }
# Logs are written to a scratch folder and packed into $OUT/gpu-run.tgz
# every 15 s (the device tool brings back a few files only, and a call cut
# off by its time limit keeps what was packed last).
RESULT=${OUT:-$PWD/gpu-out}
mkdir -p "$RESULT"
OUT=$(mktemp -d /tmp/mpix-gpu-run.XXXXXX)
pack() { tar czf "$RESULT/.gpu-run.tgz" -C "$OUT" . 2>/dev/null && mv -f "$RESULT/.gpu-run.tgz" "$RESULT/gpu-run.tgz"; }
(while sleep 15; do pack; done) &
packer=$!
log() { echo "== $*"; }
# Never NVLink multicast on shared machines (device README).
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

log "machine"
{ nvidia-smi; nvidia-smi topo -m; nvcc --version; uname -a; nproc; } >"$OUT/machine.txt" 2>&1
head -n 20 "$OUT/machine.txt"

log "MPICH from .gpu-debs"
MP=/opt/mp
mkdir -p $MP && for f in .gpu-debs/*.deb; do dpkg -x "$f" $MP; done
export PATH=$MP/usr/bin:$PATH
export LD_LIBRARY_PATH=$MP/usr/lib/x86_64-linux-gnu:$MP/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
MPIEXEC=$MP/usr/bin/mpiexec.hydra

# Two ranks on one GPU: without MPS every switch between the two processes'
# GPU contexts is a time slice (~150 us per message seen on a single H200),
# and kernels of different processes never run at once. MPS (a user-space
# daemon; no GPU setting changes) gives both one context. compute-sanitizer
# does not support MPS clients, so it is stopped around the sanitizer runs.
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mpix-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mpix-mps-log
mps_on=0
mps_start() {
  [ $mps_on = 1 ] && return
  [ "${MPIX_RUN_MPS:-auto}" = 0 ] && return
  [ "$(nvidia-smi -L 2>/dev/null | wc -l)" = 1 ] || [ "${MPIX_RUN_MPS:-auto}" = 1 ] || return
  command -v nvidia-cuda-mps-control >/dev/null || { echo "(no nvidia-cuda-mps-control: ranks time-slice the GPU)"; return; }
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d && mps_on=1 && touch "$CUDA_MPS_PIPE_DIRECTORY/mpix-started" &&
    echo "(MPS started: ranks share the one GPU's context)"
}
mps_stop() {
  [ $mps_on = 1 ] || return 0
  rm -f "$CUDA_MPS_PIPE_DIRECTORY/mpix-started"
  echo quit | nvidia-cuda-mps-control; mps_on=0; sleep 1
}
trap 'mps_stop; kill $packer 2>/dev/null' EXIT
# A test killed by its timeout while its kernels spin leaves the MPS server
# refusing new clients ("CUDA-capable device(s) is/are busy or
# unavailable"), which failed every later test of a run (seen 2026-11-23):
# after a failed test, test/runtests kills what is left of it and restarts
# the server (if this script started one: a marker file says so, as
# `pgrep -x nvidia-cuda-mps-control` never matches, process names being cut
# to 15 characters; that check made the restart a no-op in the runs of
# 2026-11-23). Processes are matched by exact name (the GPU testlist's
# programs), never by command line: runtests' own mentions test/gpu/.
gpu_progs=$(sed -n 's/^\([^# ][^ ]*\) .*/\1/p' test/gpu/testlist | xargs -n1 basename | sort -u | paste -sd'|')
export MPIX_TEST_AFTER_FAIL="pkill -9 -x '$gpu_progs'; sleep 1
if [ -e \"\$CUDA_MPS_PIPE_DIRECTORY/mpix-started\" ]; then
  echo quit | timeout 20 nvidia-cuda-mps-control; sleep 1; nvidia-cuda-mps-control -d
fi"

prebuilt=0
if [ -d .gpu-bundle ]; then
  prebuilt=1
  log "prebuilt programs from .gpu-bundle (source $(cat .gpu-bundle/source 2>/dev/null))"
  (cd .gpu-bundle && tar cf - --exclude=./source .) | tar xf -
  # The programs' run path names the development machine's build folder.
  export LD_LIBRARY_PATH=$PWD/src/.libs:$LD_LIBRARY_PATH
else
log "configure + build"
[ -x configure ] || ./autogen.sh
gtest=--without-gtest
[ -f /usr/include/gtest/gtest.h ] && gtest=
./configure --with-cuda --with-ucx=$MP/usr $gtest MPIEXEC="$MPIEXEC" \
  MPI_CPPFLAGS="-isystem $MP/usr/include/x86_64-linux-gnu/mpich" \
  MPI_LIBS="-L$MP/usr/lib/x86_64-linux-gnu -Wl,-rpath,$MP/usr/lib/x86_64-linux-gnu -lmpich" \
  >"$OUT/configure.log" 2>&1 || { tail -n 30 "$OUT/configure.log"; exit 1; }
tail -n 9 "$OUT/configure.log"
make -j"$(nproc)" >"$OUT/build.log" 2>&1 || { tail -n 40 "$OUT/build.log"; exit 1; }
fi
# A testlist through make check, or (prebuilt) straight through the runner.
run_testlist() {  # LOGDIR TESTLIST [make check arguments...]
  local logdir=$1 list=$2; shift 2
  if [ $prebuilt = 1 ]; then
    MPIEXEC="$MPIEXEC" MPIX_LIB="$PWD/src/.libs/libmpix.so.0" MPIX_TEST_LOGDIR="$logdir" test/runtests --testlist "$list"
  else
    MPIX_TEST_LOGDIR="$logdir" make check MPIX_TESTLISTS="$list" "$@"
  fi
}

# The CPU benchmarks are plain MPI programs built here with an mpicc for the
# unpacked MPICH (Debian's points at /usr): the bundle needs only libmpix.so
# ($lib), which they preload.
host_bench_tools() {
  printf '#!/bin/sh\nexec gcc "$@" -isystem %s -L%s -Wl,-rpath,%s -lmpich\n' \
    "$MP/usr/include/x86_64-linux-gnu/mpich" "$MP/usr/lib/x86_64-linux-gnu" "$MP/usr/lib/x86_64-linux-gnu" \
    >"$MP/mpicc"
  chmod +x "$MP/mpicc"
  lib=$PWD/src/.libs/libmpix.so; [ -e "$lib" ] || lib=$PWD/src/.libs/libmpix.so.0
}

check_rc=0 san_fail=0 bench_fail=0
# A two-rank benchmark once per enqueue path: LIMIT NAME PROGRAM [ARGS...];
# output in $OUT/NAME_PATH.txt, shown.
# Also "mid0": the GPU path without medium messages (MPIX_DEVICE_MID_MAX=0,
# everything above 32 B through the payload rings, as before issue 26).
# MPIX_RUN_PATHS picks some of the three, MPIX_RUN_NP the ranks (2).
on_both_paths() {
  local limit=$1 name=$2 path
  shift 2
  for path in ${MPIX_RUN_PATHS:-auto mid0 host}; do
    local sp=$path mid=${MPIX_DEVICE_MID_MAX:-16384} pull=${MPIX_STREAM_PULL_MIN:-8193}
    [ $path = mid0 ] && { sp=auto; mid=0; }
    [ $path = pull0 ] && { sp=auto; pull=0; }
    MPIX_STREAM_PULL_MIN=$pull MPIX_DEVICE_MID_MAX=$mid MPIX_STREAM_PATH=$sp timeout "$limit" "$MPIEXEC" -n "${MPIX_RUN_NP:-2}" "$@" >"$OUT/${name}_$path.txt" 2>&1 ||
      { echo "$name ($path) failed (exit $?)"; bench_fail=1; }
    echo "-- $name, MPIX_STREAM_PATH=$sp MPIX_DEVICE_MID_MAX=$mid MPIX_STREAM_PULL_MIN=$pull"; cat "$OUT/${name}_$path.txt"
  done
}
# NVSHMEM's put+signal ping-pong (issue 6's anchor), built here against the
# NVSHMEM this machine has: the baseline of device-initiated messages, for
# the bench-dev stage and for adhoc calls (output in $OUT/bench_nvshmem.*).
nvshmem_baseline() {
  local NVSHMEM_HOME=${NVSHMEM_HOME:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem}
  local nvshmem_host=$(ls "$NVSHMEM_HOME"/lib/libnvshmem_host.so* 2>/dev/null | head -n 1)
  if [ -f "$NVSHMEM_HOME/lib/libnvshmem_device.a" ] && [ -n "$nvshmem_host" ] && command -v nvcc >/dev/null; then
    log "baseline: NVSHMEM put+signal ping-pong (bench/bench_nvshmem.cu, $NVSHMEM_HOME)"
    if nvcc -rdc=true -arch=native -std=c++17 -O2 -I"$NVSHMEM_HOME/include" \
        -isystem "$MP/usr/include/x86_64-linux-gnu/mpich" bench/bench_nvshmem.cu -o /tmp/bench_nvshmem \
        -L"$NVSHMEM_HOME/lib" -lnvshmem_device -Xlinker "$nvshmem_host" -L"$MP/usr/lib/x86_64-linux-gnu" -lmpich \
        >"$OUT/bench_nvshmem_build.log" 2>&1; then
      LD_LIBRARY_PATH=$NVSHMEM_HOME/lib:$LD_LIBRARY_PATH timeout 120 "$MPIEXEC" -n 2 /tmp/bench_nvshmem \
        "$OUT/bench_nvshmem.csv" >"$OUT/bench_nvshmem.txt" 2>&1 || echo "bench_nvshmem failed (exit $?)"
      cat "$OUT/bench_nvshmem.txt"
    else
      echo "bench_nvshmem: build failed (see bench_nvshmem_build.log)"; tail -n 5 "$OUT/bench_nvshmem_build.log"
    fi
  else
    echo "NVSHMEM not found under $NVSHMEM_HOME: no NVSHMEM baseline"
  fi
}
# The entries of the GPU testlist whose program matches a pattern, alone.
run_sublist() {  # NAME PATTERN TIMEOUT
  grep -E "^$2" test/gpu/testlist >"test/gpu/testlist-$1"
  mps_start
  MPIX_TEST_TIMEOUT=$3 run_testlist "$OUT/$1-logs" "test/gpu/testlist-$1" MPIX_UNIT_TESTS= 2>&1 |
    tee "$OUT/$1-check.log" | grep --line-buffered -E '^(PASS|FAIL|SKIP)|passed'
  [ "${PIPESTATUS[0]}" = 0 ] || check_rc=1
}
# Two ranks, each under the sanitizer: the buffer-reuse programs (the
# device-initiated part only where each rank has a GPU of its own: two
# processes' kernels that wait for each other time-slice one GPU without
# MPS, which the sanitizer does not support), and the plain MPI program
# under LD_PRELOAD.
memcheck_two_ranks() {
  command -v compute-sanitizer >/dev/null || { echo "compute-sanitizer not found"; return; }
  local lib=$PWD/src/.libs/libmpix.so only=
  [ -e "$lib" ] || lib=$PWD/src/.libs/libmpix.so.0
  [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ] && [ -z "${CUDA_VISIBLE_DEVICES:-}" ] || only=host
  san2() {  # NAME ENV... PROGRAM (only names matching MPIX_SAN2_ONLY, a regex)
    local name=$1; shift
    [[ $name =~ ${MPIX_SAN2_ONLY:-.} ]] || return 0
    if timeout 300 "$MPIEXEC" -n 2 env "$@" >"$OUT/sanitizer-$name.log" 2>&1; then
      echo "memcheck clean (2 ranks): $name"
    else
      echo "memcheck FAILED (2 ranks): $name (see sanitizer-$name.log)"; san_fail=1
    fi
  }
  san2 dev_reuse DEV_REUSE_ONLY=$only DEV_REUSE_HOST_N=500 compute-sanitizer --tool memcheck --error-exitcode 9 test/gpu/dev_reuse
  san2 dev_reuse_proxy MPIX_DEVICE_PATH=proxy DEV_REUSE_ONLY=${only:-device} compute-sanitizer --tool memcheck --error-exitcode 9 test/gpu/dev_reuse
  san2 p2p_native compute-sanitizer --tool memcheck --error-exitcode 9 --target-processes all env LD_PRELOAD="$lib" test/gpu/p2p_native
  # The resident copy kernel (issue 25) and its descriptors in pinned memory.
  san2 p2p_kernel_copy compute-sanitizer --tool memcheck --error-exitcode 9 test/gpu/p2p_kernel_copy
  # Pulled stream sends (issue 26): the receiver's kernels read the
  # sender's buffer through an IPC mapping, from 64 KiB on.
  if [ -z "$only" ]; then
    san2 stream_kernel_pull MPIX_STREAM_PULL_MIN=65536 STREAM_TEST_SMALL=1 compute-sanitizer --tool memcheck --error-exitcode 9 test/gpu/stream_kernel
    san2 stream_kernel_pull_racecheck MPIX_STREAM_PULL_MIN=65536 STREAM_TEST_SMALL=1 compute-sanitizer --tool racecheck --error-exitcode 9 test/gpu/stream_kernel
  fi
}

# Commands of one's own in this script's environment (MPICH, the bundle,
# $MPIEXEC, mps_start, $OUT): MPIX_ADHOC, a bash snippet, run first; its
# output in $OUT/adhoc.txt, shown as it comes (a call cut off keeps it).
if has_stage adhoc; then
  log "adhoc: ${MPIX_ADHOC:-}"
  eval "${MPIX_ADHOC:-true}" 2>&1 | tee "$OUT/adhoc.txt"
  mps_stop
fi

if has_stage tests || has_stage gpu-tests; then
log "make check"
mps_start
# gpu-tests: only the GPU testlist (the CPU tests run in CI).
if has_stage tests && [ $prebuilt = 0 ]; then
  MPIX_TEST_LOGDIR="$OUT/test-logs" make check 2>&1 | tee "$OUT/check.log" | grep --line-buffered -E '^(PASS|FAIL|SKIP)|passed'
  check_rc=${PIPESTATUS[0]}
else
  run_testlist "$OUT/test-logs" test/gpu/testlist MPIX_UNIT_TESTS= 2>&1 | tee "$OUT/check.log" |
    grep --line-buffered -E '^(PASS|FAIL|SKIP)|passed'
  check_rc=${PIPESTATUS[0]}
fi

mps_stop
log "compute-sanitizer (memcheck) over the GPU tests"
san_fail=0
if command -v compute-sanitizer >/dev/null; then
  for t in $(sed -n 's/^\([a-z_0-9]*\) .*/\1/p' test/gpu/testlist | sort -u); do
    # GPU_MATCH_SMALL: gpu_match keeps its batches small under memcheck.
    GPU_MATCH_SMALL=1 STREAM_TEST_SMALL=1 compute-sanitizer --tool memcheck --error-exitcode 9 "test/gpu/$t" >"$OUT/sanitizer-$t.log" 2>&1
    case $? in
      0) echo "memcheck clean: $t" ;;
      77) echo "memcheck: $t needs 2 ranks (below)" ;;
      *) echo "memcheck FAILED: $t (see sanitizer-$t.log)"; san_fail=1 ;;
    esac
  done
  memcheck_two_ranks
else
  echo "compute-sanitizer not found"
fi
fi

# The two-rank sanitizer runs of gpu-tests alone.
if has_stage sanitize-two; then
  log "compute-sanitizer, two ranks"
  mps_stop
  san_fail=0
  memcheck_two_ranks
fi

# The GPU testlist's entries whose program matches MPIX_SUBLIST (an
# extended regex at the line's start), without the sanitizer: the rest of a
# run that a time limit cut off.
if has_stage sublist; then
  log "sublist: GPU testlist entries matching ${MPIX_SUBLIST:-.}"
  run_sublist sub "${MPIX_SUBLIST:-.}" "${MPIX_TEST_TIMEOUT:-150}"
  mps_stop
fi

# Issue 24: the buffer-reuse and native-communicator tests alone, then
# under the sanitizer (CUDA_VISIBLE_DEVICES=0 MPIX_RUN_MPS=1: one GPU).
if has_stage reuse; then
  log "reuse: dev_reuse, p2p_native ($(nvidia-smi -L | wc -l) GPUs on the host, CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-all})"
  run_sublist reuse "(dev_reuse|p2p_native) " 300
  mps_stop
  memcheck_two_ranks
fi

# Issue 25: dev_reuse on the device proxy path with small device messages
# by GPU rendezvous (MPIX_GPU_NODE_EAGER_LIMIT=0, now the default), which
# hung once before the answers went through the transport; if it
# still runs after MPIX_PROBE_AFTER seconds (default 40), every thread's
# host stack of both ranks (gdb or cuda-gdb, where the machine has one).
if has_stage probe; then
  log "probe: dev_reuse, proxy path, rendezvous at every size"
  timeout 120 env MPIX_GPU_NODE_EAGER_LIMIT=0 MPIX_DEVICE_PATH=proxy DEV_REUSE_ONLY=device DEV_REUSE_TIMEOUT=100 \
    MPIX_VERBOSE=1 "$MPIEXEC" -n 2 test/gpu/dev_reuse >"$OUT/probe.log" 2>&1 &
  probe=$!
  for _ in $(seq "${MPIX_PROBE_AFTER:-40}"); do kill -0 $probe 2>/dev/null || break; sleep 1; done
  if kill -0 $probe 2>/dev/null; then
    echo "probe: still running after ${MPIX_PROBE_AFTER:-40} s"
    dbg=$(command -v gdb || command -v cuda-gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null | head -n 1)
    for p in $(pgrep -f test/gpu/dev_reuse); do
      case "$(readlink /proc/$p/exe)" in *dev_reuse*) ;; *) continue ;; esac
      { echo "== pid $p"; for t in /proc/$p/task/*; do echo "$t $(cat $t/comm) $(cat $t/wchan)"; done
        [ -n "$dbg" ] && timeout 60 "$dbg" -p "$p" -batch -ex "thread apply all bt"; } >"$OUT/probe-stack-$p.txt" 2>&1
      echo "stacks of $p: $(grep -c '^#' "$OUT/probe-stack-$p.txt") frames (${dbg:-no debugger})"
    done
  fi
  wait $probe; echo "probe exit $?"; tail -n 30 "$OUT/probe.log"
fi

if has_stage suite; then
  log "suite: the resident copy kernel's tests, then bench_gpu_suite (latency, bw, bibw, mr) per setting"
  run_sublist suite "(p2p_kernel_copy|p2p_device 2 env:MPIX_VERBOSE=1 env:P2P_DEVICE_SMALL) " 150
  # One row set per setting, same run: the defaults (small messages
  # within a node by IPC rendezvous); the copy kernel off and eager (as
  # before issue 25); rendezvous explicitly; eager within a node with the
  # copy kernel (the old default); the inter-node path (staging over TCP).
  suite() {  # NAME MAXBYTES ENV...
    local name=$1 max=$2; shift 2
    timeout 240 env "$@" "$MPIEXEC" -n 2 bench/bench_gpu_suite "$OUT/suite_$name.csv" "$max" >"$OUT/suite_$name.txt" 2>&1 ||
      { echo "bench_gpu_suite ($name) failed (exit $?)"; bench_fail=1; }
    echo "-- bench_gpu_suite $name: $*"; cat "$OUT/suite_$name.txt"
  }
  mps_start
  if [ -x bench/bench_gpu_copy ]; then
    for b in 8 1024 8192; do timeout 60 bench/bench_gpu_copy -b $b; done >"$OUT/bench_gpu_copy.txt" 2>&1
    cat "$OUT/bench_gpu_copy.txt"
  fi
  # MPIX_SUITE_SETS picks the settings (default: all of them): the
  # defaults; before issue 25 (eager within a node, copy engines only);
  # eager within a node with the copy kernel; the kernel for device copies
  # up to 64 KiB (the threshold's measurement); the inter-node path
  # (staging over TCP).
  sets=" ${MPIX_SUITE_SETS:-default before node_eager devmax64k staging_tcp} "
  if [ -x bench/bench_gpu_suite ]; then
    [[ $sets == *" default "* ]] && suite default 4194304 MPIX_VERBOSE=0
    [[ $sets == *" before "* ]] && suite before 4194304 MPIX_GPU_KERNEL_COPY=off MPIX_GPU_NODE_EAGER_LIMIT=8192
    [[ $sets == *" rendezvous "* ]] && suite rendezvous 4194304 MPIX_GPU_NODE_EAGER_LIMIT=0
    [[ $sets == *" node_eager "* ]] && suite node_eager 65536 MPIX_GPU_NODE_EAGER_LIMIT=8192
    [[ $sets == *" devmax64k "* ]] && suite devmax64k 262144 MPIX_GPU_KERNEL_COPY_DEVICE_MAX=65536
    [[ $sets == *" staging_tcp "* ]] && suite staging_tcp 4194304 MPIX_GPU_PATH=staging UCX_TLS=tcp,self
  fi
  mps_stop
  if command -v compute-sanitizer >/dev/null; then
    if timeout 300 "$MPIEXEC" -n 2 compute-sanitizer --tool memcheck --error-exitcode 9 test/gpu/p2p_kernel_copy \
      >"$OUT/sanitizer-p2p_kernel_copy.log" 2>&1; then
      echo "memcheck clean (2 ranks): p2p_kernel_copy"
    else
      echo "memcheck FAILED (2 ranks): p2p_kernel_copy"; san_fail=1; tail -n 30 "$OUT/sanitizer-p2p_kernel_copy.log"
    fi
  fi
fi

if has_stage bench-cpu; then
  if [ $prebuilt = 1 ]; then
    log "bench-cpu: matching engine (bench_match) not in .gpu-bundle: skipped"
  else
    log "bench-cpu: matching engine"
    make bench/bench_match >/dev/null 2>&1
    timeout 150 bench/bench_match --csv "$OUT/bench_match.csv" >"$OUT/bench_match.txt" 2>&1 || bench_fail=1
    cat "$OUT/bench_match.txt"
  fi
  log "bench-cpu: point-to-point per transport, native vs mpix (${MPIX_BENCH_ROWS:-ucx,pmpi,ucx-tcp})"
  host_bench_tools
  MPICC="$MP/mpicc" MPIEXEC="$MPIEXEC" timeout "${MPIX_BENCH_TIMEOUT:-500}" bench/run_transport_benchmarks.sh \
    -t "${MPIX_BENCH_ROWS:-ucx,pmpi,ucx-tcp}" -o "$OUT/transports" "$lib" >"$OUT/transport_benchmarks.txt" 2>&1 ||
    bench_fail=1
  tail -n 120 "$OUT/transport_benchmarks.txt"
fi
# Issue 30: host messages 1 KiB - 16 MiB, native MPICH vs mpix over UCX
# with single copy (ping-pong, streaming, bidirectional), 5 alternating
# rounds, on this many-core host's CPUs (no GPU involved).
if has_stage bench-mid; then
  log "bench-mid: host ping-pong/streaming/bidirectional 1 KiB - 16 MiB, native vs mpix, 5 rounds"
  host_bench_tools
  # MPIX_MID_VARIANTS: more mpix runs per round, e.g. "gpuoff:MPIX_GPU=off"
  # (see run_p2p_benchmarks.sh -V); MPIX_MID_BENCHES: its -s list (the
  # matching rate too, for before/after comparisons); PP_ARGS passes on.
  variant_args=()
  for v in ${MPIX_MID_VARIANTS:-}; do variant_args+=(-V "$v"); done
  MPICC="$MP/mpicc" MPIEXEC="$MPIEXEC" timeout "${MPIX_BENCH_TIMEOUT:-420}" bench/run_p2p_benchmarks.sh \
    -s "${MPIX_MID_BENCHES:-pingpong}" -R "${MPIX_MID_ROUNDS:-5}" -r "${MPIX_MATCH_ROUNDS:-1}" "${variant_args[@]}" \
    -o "$OUT/p2p-mid" "$lib" >"$OUT/p2p_mid.txt" 2>&1 || bench_fail=1
  tail -n 80 "$OUT/p2p_mid.txt"
fi
if has_stage bench-threads; then
  log "bench-threads: matching throughput with 1-8 threads per rank, native vs mpix, 3 alternating rounds"
  host_bench_tools
  "$MP/mpicc" -O2 -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread || bench_fail=1
  for round in 1 2 3; do
    for who in native mpix; do
      pre=(env -u LD_PRELOAD)
      [ $who = mpix ] && pre=(env LD_PRELOAD="$lib")
      timeout 120 "$MPIEXEC" -n 2 -bind-to none "${pre[@]}" "$OUT/bench_threads" -t 1,2,4,8 -i "${MPIX_THREADS_ITERS:-1000}" \
        -r 5 -l "$who" -o "$OUT/threads_${who}_r$round.csv" >"$OUT/threads_${who}_r$round.txt" 2>&1 ||
        { echo "bench_threads $who round $round failed"; bench_fail=1; }
      echo "-- $who round $round"; cat "$OUT/threads_${who}_r$round.txt"
    done
  done
  # The matching engine alone: one lock against the sharded matcher, 1-16
  # threads (a core each on this host), own keys and cross-thread arrivals.
  if [ -x bench/bench_match_threads ]; then
    for mode in "" --cross; do
      timeout 120 bench/bench_match_threads -t 1,2,4,8,16 -n 5000 -r 5 $mode \
        -o "$OUT/match_threads${mode:+_cross}.csv" >"$OUT/match_threads${mode:+_cross}.txt" 2>&1 ||
        { echo "bench_match_threads $mode failed"; bench_fail=1; }
      cat "$OUT/match_threads${mode:+_cross}.txt"
    done
  fi
fi
if has_stage bench-gpu; then
mps_start
log "benchmark: device-buffer ping-pong (mpix vs staged MPICH vs NCCL)"
# About a minute; table in bench_gpu_p2p.txt, CSV beside it.
if [ -x bench/bench_gpu_p2p ]; then
  timeout 150 "$MPIEXEC" -n 2 bench/bench_gpu_p2p "$OUT/bench_gpu_p2p.csv" >"$OUT/bench_gpu_p2p.txt" 2>&1 ||
    echo "bench_gpu_p2p failed (exit $?), see bench_gpu_p2p.txt"
  cat "$OUT/bench_gpu_p2p.txt"
  MPIX_GPU_PATH=staging timeout 60 "$MPIEXEC" -n 2 bench/bench_gpu_p2p "$OUT/bench_gpu_p2p_staging.csv" 67108864 \
    >"$OUT/bench_gpu_p2p_staging.txt" 2>&1 || echo "bench_gpu_p2p (staging) failed, see bench_gpu_p2p_staging.txt"
  cat "$OUT/bench_gpu_p2p_staging.txt"
  # Small device messages by GPU rendezvous (one IPC copy) instead of eager.
  MPIX_GPU_EAGER_LIMIT=0 timeout 60 "$MPIEXEC" -n 2 bench/bench_gpu_p2p "$OUT/bench_gpu_p2p_rndv.csv" 65536 \
    >"$OUT/bench_gpu_p2p_rndv.txt" 2>&1 || echo "bench_gpu_p2p (rendezvous) failed, see bench_gpu_p2p_rndv.txt"
  cat "$OUT/bench_gpu_p2p_rndv.txt"
fi
log "benchmark: stream-triggered ping-pong (MPIX_Send_enqueue/Recv_enqueue vs NCCL)"
if [ -x bench/bench_stream ]; then
  timeout 90 "$MPIEXEC" -n 2 bench/bench_stream -m 67108864 >"$OUT/bench_stream.txt" 2>&1 ||
    echo "bench_stream failed (exit $?), see bench_stream.txt"
  cat "$OUT/bench_stream.txt"
  MPIX_GPU_EAGER_LIMIT=0 timeout 60 "$MPIEXEC" -n 2 bench/bench_stream -m 65536 >"$OUT/bench_stream_rndv.txt" 2>&1 ||
    echo "bench_stream (rendezvous) failed (exit $?), see bench_stream_rndv.txt"
  cat "$OUT/bench_stream_rndv.txt"
fi
log "benchmark: one small GPU copy per method (the small-message path's parts)"
if [ -x bench/bench_gpu_copy ]; then
  { timeout 60 bench/bench_gpu_copy; timeout 60 bench/bench_gpu_copy --spin; } >"$OUT/bench_gpu_copy.txt" 2>&1 ||
    echo "bench_gpu_copy failed (exit $?), see bench_gpu_copy.txt"
  cat "$OUT/bench_gpu_copy.txt"
fi
log "benchmark: 2D Jacobi halo exchange (host-synchronised vs stream-triggered vs NCCL)"
if [ -x bench/bench_jacobi ]; then
  timeout 120 "$MPIEXEC" -n 2 bench/bench_jacobi >"$OUT/bench_jacobi.txt" 2>&1 || {
    echo "bench_jacobi failed (exit $?), see bench_jacobi.txt"; bench_fail=1; }
  cat "$OUT/bench_jacobi.txt"
fi
fi
if has_stage stream; then
log "stream-triggered operations (issue 16): stream_* tests, sanitizers, enqueue and Jacobi benchmarks, both paths"
run_sublist stream stream_ 120
on_both_paths 90 bench_stream bench/bench_stream -m 67108864
on_both_paths 120 bench_jacobi bench/bench_jacobi
# The stream kernels share the device protocol's headers: its own test too.
for np in 2 1; do
  timeout 90 "$MPIEXEC" -n $np test/gpu/dev_p2p >"$OUT/stream-dev_p2p-$np.log" 2>&1 &&
    grep -q "No Errors" "$OUT/stream-dev_p2p-$np.log" && echo "dev_p2p ($np ranks): passed" ||
    { echo "dev_p2p ($np ranks): FAILED"; check_rc=1; }
done
fi
if has_stage stream || has_stage stream-sanitize; then
mps_stop  # compute-sanitizer does not support MPS clients
for t in stream_kernel stream_enqueue; do
  for tool in memcheck racecheck; do
    command -v compute-sanitizer >/dev/null || break
    if STREAM_TEST_SMALL=1 STREAM_TEST_MANY=300 timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 \
        "test/gpu/$t" >"$OUT/sanitizer-$t-$tool.log" 2>&1; then
      echo "$tool clean: $t (1 rank)"
    else
      echo "$tool FAILED: $t"; tail -n 20 "$OUT/sanitizer-$t-$tool.log"; san_fail=1
    fi
  done
done
fi
if has_stage stream-tests; then
  log "stream_* entries of the GPU testlist only"
  run_sublist stream stream_ 60
fi
if has_stage stream-bench; then
  log "benchmark: enqueue ping-pong, small messages (beside bench-dev's device-initiated rows and NVSHMEM)"
  mps_start
  on_both_paths 60 bench_stream_small bench/bench_stream -m 65536
fi
if has_stage stream-large; then
  log "benchmark: enqueue ping-pong up to 64 MiB, both paths"
  mps_start
  on_both_paths 90 bench_stream bench/bench_stream -m 67108864
fi
if has_stage stream-pull; then
  log "benchmark: enqueue ping-pong 1-64 MiB: pulled (one copy), the ring (MPIX_STREAM_PULL_MIN=0), host-driven"
  mps_start
  MPIX_RUN_PATHS="auto pull0 host" on_both_paths 120 bench_stream_pull bench/bench_stream \
    -x 1 -S 1048576,2097152,4194304,4194305,8388608,16777216,33554432,67108864
fi
if has_stage jacobi; then
  log "benchmark: 2D Jacobi halo exchange, both enqueue paths"
  mps_start
  on_both_paths 120 bench_jacobi bench/bench_jacobi
fi
if has_stage bench-match; then
  log "benchmark: GPU batch matching vs the CPU batch matcher (bench_gpu_match)"
  # About two minutes; table in bench_gpu_match.txt, CSV beside it.
  timeout 300 bench/bench_gpu_match --csv "$OUT/bench_gpu_match.csv" >"$OUT/bench_gpu_match.txt" 2>&1 || bench_fail=1
  cat "$OUT/bench_gpu_match.txt"
fi
if has_stage dev-tests; then
log "device send/recv tests (dev_* of the GPU testlist) + memcheck/racecheck"
run_sublist dev dev_ 100
mps_stop  # compute-sanitizer does not support MPS clients
# Two ranks under memcheck (time-sliced on one GPU without MPS: small
# sizes), IPC and proxy paths: every phase named as it starts.
for cfg in ipc proxy; do
  command -v compute-sanitizer >/dev/null || break
  penv=; [ $cfg = proxy ] && penv="MPIX_DEVICE_PATH=proxy MPIX_DEVICE_PROXY_QUEUE=64"
  if env $penv DEV_P2P_SMALL=1 DEV_P2P_BLOCKS=4 DEV_P2P_VERBOSE=1 DEV_P2P_TIMEOUT=150 timeout 200 \
      "$MPIEXEC" -n 2 compute-sanitizer --tool memcheck --error-exitcode 9 test/gpu/dev_p2p \
      >"$OUT/sanitizer-dev2-$cfg.log" 2>&1; then
    echo "memcheck clean: dev_p2p (2 ranks, $cfg)"
  else
    echo "memcheck FAILED: dev_p2p (2 ranks, $cfg)"; grep -v "phase:" "$OUT/sanitizer-dev2-$cfg.log" | head -n 40; san_fail=1
  fi
done
for tool in memcheck racecheck; do
  command -v compute-sanitizer >/dev/null || { echo "compute-sanitizer not found"; break; }
  if timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 test/gpu/dev_p2p >"$OUT/sanitizer-dev-$tool.log" 2>&1; then
    echo "$tool clean: dev_p2p (1 rank)"
  else
    echo "$tool FAILED: dev_p2p"; tail -n 20 "$OUT/sanitizer-dev-$tool.log"; san_fail=1
  fi
done
fi
if has_stage bench-dev; then
log "benchmark: device-initiated MPIX_Send/MPIX_Recv (bench_dev_p2p)"
mps_start
# Rings of their own for the bandwidth test's block pairs (a tag each).
if [ -x bench/bench_dev_p2p ]; then
  MPIX_DEVICE_CHANNELS=128 timeout 150 "$MPIEXEC" -n 2 bench/bench_dev_p2p "$OUT/bench_dev_p2p.csv" \
    >"$OUT/bench_dev_p2p.txt" 2>&1 || { echo "bench_dev_p2p failed (exit $?)"; bench_fail=1; }
  cat "$OUT/bench_dev_p2p.txt"
  # dev_rows NAME ROWS WHAT ENV...: bench_dev_p2p's ROWS once more with ENV.
  dev_rows() {
    local name=$1 rows=$2 what=$3; shift 3
    log "$what"
    env "$@" BENCH_DEV_ONLY="$rows" timeout 100 "$MPIEXEC" -n 2 bench/bench_dev_p2p "$OUT/bench_dev_p2p_$name.csv" \
      >"$OUT/bench_dev_p2p_$name.txt" 2>&1 || { echo "bench_dev_p2p ($name) failed (exit $?)"; bench_fail=1; }
    cat "$OUT/bench_dev_p2p_$name.txt"
  }
  dev_rows nolanes latency "the same latency rows without lanes (MPIX_DEVICE_LANE_TAGS=0: every tag through the table, as before)" \
    MPIX_DEVICE_LANE_TAGS=0
  dev_rows a2a_lanes a2a "all-to-all with every tag of the test in lanes (MPIX_DEVICE_LANE_TAGS=65536: one atomic per send)" \
    MPIX_DEVICE_LANE_TAGS=65536
  dev_rows nomid latency "the same latency rows without medium messages (MPIX_DEVICE_MID_MAX=0: above 32 B through the payload rings, as before)" \
    MPIX_DEVICE_MID_MAX=0
fi
# The baseline in the same run.
nvshmem_baseline
fi
# Builds of one program with other settings, bundled beside it (e.g.
# bench_dev_p2p_b16: compiled with -DMPIXD_MID_BATCH=16u; bench_gpu_copy_old:
# the resident copy kernel of an earlier commit): the same rows of each, for
# a choice by measurement. BENCH_VARIANT_ONLY picks bench_dev_p2p's rows
# (latency,call).
if has_stage variants; then
  log "variants: bench_gpu_copy* and bench_dev_p2p_* builds side by side"
  mps_start
  for b in bench/bench_gpu_copy bench/bench_gpu_copy_*; do
    [ -x "$b" ] || continue
    echo "-- $b"; timeout 60 "$b" >"$OUT/variant-$(basename "$b").txt" 2>&1; cat "$OUT/variant-$(basename "$b").txt"
  done
  for b in bench/bench_dev_p2p bench/bench_dev_p2p_*; do
    [ -x "$b" ] || continue
    echo "-- $b"
    BENCH_DEV_ONLY=${BENCH_VARIANT_ONLY:-latency,call} timeout 100 "$MPIEXEC" -n 2 "$b" "$OUT/variant-$(basename "$b").csv" >"$OUT/variant-$(basename "$b").txt" 2>&1 ||
      { echo "$b failed (exit $?)"; bench_fail=1; }
    cat "$OUT/variant-$(basename "$b").txt"
  done
fi
# Issue 26: the medium protocol's bounds chosen by measurement. For each
# MAX:RING of MPIX_MID_SWEEP, on MPIX_RUN_NP ranks (2): Jacobi at N = 1024
# and 4096 (halos of 8208 and 32784 bytes), the enqueue ping-pong to 64 KiB
# and the device-initiated latency rows.
if has_stage mid-sweep; then
  mps_start
  for mr in ${MPIX_MID_SWEEP:-8192:64 16400:128 40960:256}; do
    log "mid-sweep: MPIX_DEVICE_MID_MAX=${mr%%:*} MPIX_DEVICE_MID_RING=${mr#*:}, ${MPIX_RUN_NP:-2} ranks"
    for prog in "bench_jacobi -s 1024,4096" "bench_stream -m 65536" "bench_dev_p2p"; do
      f="$OUT/sweep-${mr%%:*}-${prog%% *}-${MPIX_RUN_NP:-2}.txt"
      [ "${prog%% *}" != bench_jacobi ] && [ "${MPIX_RUN_NP:-2}" != 2 ] && continue
      MPIX_DEVICE_MID_MAX=${mr%%:*} MPIX_DEVICE_MID_RING=${mr#*:} BENCH_DEV_ONLY=latency timeout 120 \
        "$MPIEXEC" -n "${MPIX_RUN_NP:-2}" bench/$prog >"$f" 2>&1 || { echo "$prog failed (exit $?)"; bench_fail=1; }
      grep -vE "^csv|^latency +(self|pxself)" "$f" | grep -vE "^latency .* (131072|524288|2097152|8388608) "
    done
  done
fi
# Issue 26 on four GPUs (after bench-dev, which builds the NVSHMEM
# baseline): the all-to-all of device-initiated messages against NVSHMEM's
# put+signal (three peers' tags need more than the default 65536 keys), and
# the Jacobi exchange with and without medium messages.
if has_stage four; then
  log "four GPUs: device-initiated all-to-all vs NVSHMEM, Jacobi on 4 ranks (one per GPU)"
  mps_stop
  for lt in 64 65536; do
    MPIX_DEVICE_KEYS=262144 MPIX_DEVICE_LANE_TAGS=$lt BENCH_DEV_ONLY=a2a timeout 100 "$MPIEXEC" -n 4 bench/bench_dev_p2p "$OUT/a2a4_$lt.csv" \
      >"$OUT/a2a4_$lt.txt" 2>&1 || { echo "bench_dev_p2p -n 4 failed (exit $?)"; bench_fail=1; }
    echo "-- MPIX_DEVICE_LANE_TAGS=$lt"; cat "$OUT/a2a4_$lt.txt"
  done
  if [ -x /tmp/bench_nvshmem ]; then
    LD_LIBRARY_PATH=$NVSHMEM_HOME/lib:$LD_LIBRARY_PATH timeout 100 "$MPIEXEC" -n 4 /tmp/bench_nvshmem \
      "$OUT/bench_nvshmem4.csv" >"$OUT/bench_nvshmem4.txt" 2>&1 || echo "bench_nvshmem -n 4 failed (exit $?)"
    cat "$OUT/bench_nvshmem4.txt"
  fi
  MPIX_RUN_NP=4 MPIX_RUN_PATHS="auto mid0" on_both_paths 120 bench_jacobi4 bench/bench_jacobi
fi
if has_stage scaling; then
  log "scaling (issue 8): all GPU pairs, Jacobi weak scaling, device ping-pong, 8-rank regions"
  mps_stop  # one rank per GPU here
  bash bench/run_scaling.sh -o "$OUT/scaling" -e "$MPIEXEC" || bench_fail=1
fi
kill $packer 2>/dev/null
pack
[ "$check_rc" = 0 ] && [ $san_fail = 0 ] && [ $bench_fail = 0 ]
