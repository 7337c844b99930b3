# Session 19, call 6 (nvidia-h200, a 16-core host), issue 27: a profile of
# the receiving rank of bench_threads (ordered, -i 500 -r 5) at 1 and 4
# threads with the session's library (built without CUDA, with the
# engine-lock contention line, extra/), under Linux perf carried from the
# development VM (Debian's perf 6.1 and its libraries, run through their
# own loader): perf record (flat profile, cpu-clock: the host offers no
# hardware counters), the sending rank unprofiled. Ran twice: in the first
# run libmpix was preloaded into perf instead of the profiled rank (perf
# under its own loader did not pass LD_PRELOAD on), which profiled native
# MPICH against mpix and hung at 4 threads; in the second, the preloaded
# path was host_bench_tools' (it sets $lib), which this bundle lacks: again
# native against mpix. Now perf runs `env LD_PRELOAD=extra/final/...
# bench_threads`.
# Run on the GPU machine as:
#   MPIX_ADHOC='source THIS_FILE' bash test/gpu/run.sh adhoc
ex=$PWD/extra
mkdir -p "$ex/final"
xz -dc "$ex/libmpix_host_lockstats.so.xz" >"$ex/final/libmpix.so.0" && tar -C "$ex" -xJf "$ex/perfkit.tar.xz" ||
  { echo "unpack failed"; return 1; }
pk=$ex/perfkit
perf_run() { "$pk/ld-linux-x86-64.so.2" --library-path "$pk" "$pk/perf" "$@"; }
perf_run --version; cat /proc/sys/kernel/perf_event_paranoid
host_bench_tools
lib=$ex/final/libmpix.so.0  # after host_bench_tools, which sets lib to the bundle's library
nproc; uptime
"$MP/mpicc" -O2 -Ibench -o "$OUT/bench_threads" bench/bench_threads.c -ldl -lpthread || echo "bench_threads: build failed"
cat >"$OUT/wrap.sh" <<WRAP
#!/bin/bash
if [ "\$PMI_RANK" = 1 ]; then
  case "\$PERF_MODE" in
    record) exec env -u LD_PRELOAD "$pk/ld-linux-x86-64.so.2" --library-path "$pk" "$pk/perf" record -F 4000 -o "\$PERF_OUT" -- env LD_PRELOAD="$lib" "\$@" ;;
  esac
fi
exec "\$@"
WRAP
chmod +x "$OUT/wrap.sh"
for t in 1 4; do
  for mode in record; do
    timeout 40 "$MPIEXEC" -n 2 -bind-to none env LD_PRELOAD="$lib" MPIX_VERBOSE=1 PERF_MODE=$mode \
      PERF_OUT="$OUT/perf_${mode}_t$t.data" "$OUT/wrap.sh" "$OUT/bench_threads" -m ordered -t $t -i 500 -r 5 \
      >"$OUT/threads_${mode}_t$t.txt" 2>&1
    echo "-- threads $t under perf $mode: exit $?"; grep -E "^(ordered|# payload|# mpix)|engine lock" "$OUT/threads_${mode}_t$t.txt"
  done
  perf_run report -i "$OUT/perf_record_t$t.data" --no-children --sort dso,symbol --stdio 2>/dev/null |
    grep -E "^ +[0-9]" | head -40 | tee "$OUT/perf_report_t$t.txt" | cut -c1-160
  perf_run report -i "$OUT/perf_record_t$t.data" --no-children --sort tid --stdio 2>/dev/null | grep -E "^ +[0-9]" | head -12
  rm -f "$OUT/perf_record_t$t.data"
done
