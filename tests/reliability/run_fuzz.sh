#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, ASan+UBSan) in BUILD/fuzz and runs each for SECONDS.
# Usage: run_fuzz.sh SOURCE_DIR BUILD_DIR SECONDS   (make test: 30 s a target; make fuzz: FUZZ_SECONDS)
# Exit 77 (CTest skip) when clang or libFuzzer is missing (exit 1 under CI=true: tests/common/ms_test.sh). Results: BUILD/fuzz/results.csv
# (target,seconds,executions,result), new inputs in BUILD/fuzz/corpus/<target>/, failures in
# BUILD/fuzz/artifacts/ (reproduce: BUILD/fuzz/<target> BUILD/fuzz/artifacts/crash-...).
set -u
src=$(cd "${1:-.}" && pwd)
build=$(mkdir -p "${2:-build}" && cd "${2:-build}" && pwd)
seconds=${3:-30}
dir="$build/fuzz"
cc=${FUZZ_CC:-clang}
. "$src/tests/common/ms_test.sh"
command -v "$cc" >/dev/null 2>&1 || ms_skip_missing "run_fuzz: $cc not found (install clang: scripts/deps.sh test)"
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' > "$build/fuzz_probe.c"
if ! "$cc" -fsanitize=fuzzer "$build/fuzz_probe.c" -o "$build/fuzz_probe" 2>/dev/null; then
  ms_skip_missing "run_fuzz: $cc cannot link -fsanitize=fuzzer (libclang-rt-dev missing?)"
fi
rm -f "$build/fuzz_probe" "$build/fuzz_probe.c"
CC=$cc cmake -S "$src/fuzz" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$dir.configure.log" 2>&1 \
  || { cat "$dir.configure.log"; echo "run_fuzz: configure failed"; exit 1; }
cmake --build "$dir" -j "${FUZZ_JOBS:-2}" >"$dir.build.log" 2>&1 || { tail -40 "$dir.build.log"; echo "run_fuzz: build failed"; exit 1; }
mkdir -p "$dir/artifacts"
status=0
[ -f "$dir/results.csv" ] || echo "target,seconds,executions,result" > "$dir/results.csv"
for t in $(cat "$dir/fuzzers.txt" | tr ';' ' '); do
  mkdir -p "$dir/corpus/$t"
  log="$dir/$t.log"
  # the seed corpus is read, new inputs go to the build's corpus; leaks of the ASan side are checked per input
  ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$dir/$t" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=3072 -print_final_stats=1 \
      -artifact_prefix="$dir/artifacts/$t-" "$dir/corpus/$t" "$src/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ $rc = 0 ]; then
    result=ok
  else
    result=FAILED
    status=1
    echo "run_fuzz: $t FAILED (exit $rc); log $log; the end of it:"
    grep -v "^#\|^INFO\|NEW_FUNC" "$log" | tail -40
  fi
  echo "run_fuzz: $t: ${execs:-0} executions in $seconds s: $result"
  echo "$t,$seconds,${execs:-0},$result" >> "$dir/results.csv"
done
exit $status
