#!/usr/bin/env bash
# The libFuzzer targets of test/fuzz, built with clang++ (-fsanitize=fuzzer,
# address,undefined), each run over its corpus in test/fuzz/corpus/ (every
# input must pass) and then fuzzed from a scratch copy of it: the matching
# engine for MPIX_FUZZ_SECONDS (default 60), each decoder of peer data
# (wire: envelopes; gpu_wire: GPU rendezvous descriptors and replies;
# proxy: device proxy descriptors) for MPIX_FUZZ_DECODER_SECONDS (default
# 20, at most MPIX_FUZZ_SECONDS): their input space is small and their
# coverage saturates within seconds. A crash or a difference from the
# reference fails the test; the input that did it is left in the log folder.
#   MPIX_SRCDIR, MPIX_BUILDDIR (set by make check), CLANGXX (default clang++).
# Skipped (exit 77) without a clang++ that has libFuzzer, and in sanitizer
# builds (the targets carry ASan/UBSan of their own).
set -u
src=${MPIX_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${MPIX_BUILDDIR:-$src}
cxx=${CLANGXX:-clang++}
seconds=${MPIX_FUZZ_SECONDS:-60}
decoder_seconds=${MPIX_FUZZ_DECODER_SECONDS:-$((seconds < 20 ? seconds : 20))}
if [ -n "${MPIX_SANITIZED:-}" ]; then
  echo "skipped: sanitizer build (the fuzz targets are built with ASan/UBSan of their own in the plain build)"
  exit 77
fi
flags=(-std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I"$src" -I"$src/include")
out=$build/test/fuzz
mkdir -p "$out"
if ! command -v "$cxx" >/dev/null || ! echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char *, unsigned long) { return 0; }' |
    "$cxx" "${flags[@]}" -x c++ - -o "$out/probe" >/dev/null 2>&1; then
  echo "skipped: no $cxx with libFuzzer (apt-get install clang libclang-rt-14-dev)"
  exit 77
fi
rm -f "$out/probe"
status=0
for target in matcher wire gpu_wire proxy; do
  exe=$out/fuzz_$target
  budget=$decoder_seconds
  case $target in
    matcher) sources=("$src/test/fuzz/fuzz_matcher.cc" "$src"/match/*.cc); budget=$seconds ;;
    wire) sources=("$src/test/fuzz/fuzz_wire.cc" "$src/progress/wire.cc" "$src/progress/ucx/ucx_wire.cc"
                   "$src/progress/ofi/ofi_wire.cc") ;;
    gpu_wire) sources=("$src/test/fuzz/fuzz_gpu_wire.cc" "$src/src/p2p/gpu_wire.cc" "$src/progress/wire.cc") ;;
    proxy) sources=("$src/test/fuzz/fuzz_proxy.cc" "$src/mpix/proxy_desc.cc") ;;
  esac
  "$cxx" "${flags[@]}" "${sources[@]}" -o "$exe" || { echo "fuzz_$target: build failed"; status=1; continue; }
  corpus=$src/test/fuzz/corpus/$target
  # Every stored input first (regressions), then fresh inputs from them.
  if ! (cd "$out" && "$exe" -runs=0 "$corpus" 2>"$out/fuzz_$target-corpus.log"); then
    echo "fuzz_$target: an input of $corpus fails (see $out/fuzz_$target-corpus.log)"; status=1; continue
  fi
  scratch=$(mktemp -d)
  cp "$corpus"/* "$scratch"/ 2>/dev/null
  # No leak check: LeakSanitizer's stop-the-world at exit once hung for
  # 37 minutes on a loaded 2-core machine (its tracer and the fuzzer
  # waiting on each other); these targets look for crashes, over-reads
  # and undefined behaviour, which ASan/UBSan still stop at.
  # The time limit turns any other hang into a failure instead of a stuck
  # CI.
  if (cd "$out" && timeout --kill-after=10 $((budget + 120)) "$exe" -max_total_time="$budget" -max_len=4096 \
        -detect_leaks=0 -print_final_stats=1 "$scratch" 2>"$out/fuzz_$target.log"); then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz_$target.log")
    echo "fuzz_$target: $(ls "$corpus" | wc -l) stored inputs pass; ${runs:-?} fuzzed inputs in ${budget} s, no failure"
  else
    echo "fuzz_$target: FAILED (see $out/fuzz_$target.log; the input is in $out)"; status=1
  fi
  rm -rf "$scratch"
done
exit $status
