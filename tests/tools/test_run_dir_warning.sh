#!/usr/bin/env bash
# test_run_dir_warning.sh TOOL LIB: an unusable spill directory is reported once by a many-process program under
# `memspace run --spill` (the program run; its child processes only under MEMSPACE_VERBOSE), and by every process
# of a plain LD_PRELOAD (no memspace run marker) as documented in docs/spill.md.
set -u
tool=$1 lib=$2
. "$(dirname "$0")/../common/ms_test.sh"
fail=0
script='for i in 1 2 3 4 5; do /bin/true; done'
lines() { grep -c "spill directory /nonexistent-red2 " <<<"$1"; }
out=$(MEMSPACE_SPILL_DIR=/nonexistent-red2 "$tool" run --spill -- sh -c "$script" 2>&1)
echo "memspace run --spill: $(lines "$out") line(s)"
[ "$(lines "$out")" = 1 ] || { echo "FAIL: expected one warning for the process tree:"; echo "$out"; fail=1; }
[[ "$out" == *"warning: spill directory /nonexistent-red2 "*"is not usable (missing)"* ]] ||
  { echo "FAIL: the warning does not say the directory is missing"; fail=1; }
out=$(MEMSPACE_VERBOSE=1 MEMSPACE_SPILL_DIR=/nonexistent-red2 "$tool" run --spill -- sh -c "$script" 2>&1)
echo "memspace run --spill --verbose: $(lines "$out") line(s)"
[ "$(lines "$out")" -ge 6 ] || { echo "FAIL: under MEMSPACE_VERBOSE every process should say it"; echo "$out"; fail=1; }
# a nested memspace run is a new tree: its program warns again
out=$(MEMSPACE_SPILL_DIR=/nonexistent-red2 "$tool" run --spill -- "$tool" run --spill -- /bin/true 2>&1)
echo "nested memspace run: $(lines "$out") line(s)"
[ "$(lines "$out")" = 1 ] || { echo "FAIL: the nested run's program should warn (and only it)"; echo "$out"; fail=1; }
# a marker that is not a pid is no marker
out=$(MEMSPACE_RUN_PID=xyz MEMSPACE_SPILL_THRESHOLD=auto MEMSPACE_SPILL_DIR=/nonexistent-red2 LD_PRELOAD=$lib /bin/true 2>&1)
[ "$(lines "$out")" = 1 ] || { echo "FAIL: MEMSPACE_RUN_PID=xyz hid the warning: $out"; fail=1; }
[[ "$out" != *"unknown variable"* ]] || { echo "FAIL: MEMSPACE_RUN_PID reported as unknown: $out"; fail=1; }
# plain LD_PRELOAD: no marker, every process warns
out=$(MEMSPACE_SPILL_THRESHOLD=auto MEMSPACE_SPILL_DIR=/nonexistent-red2 LD_PRELOAD=$lib sh -c "$script" 2>&1)
echo "plain LD_PRELOAD: $(lines "$out") line(s)"
[ "$(lines "$out")" = 6 ] || { echo "FAIL: plain LD_PRELOAD: expected one line per process"; echo "$out"; fail=1; }
ms_finish $fail
