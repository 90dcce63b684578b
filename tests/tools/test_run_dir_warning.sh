#!/usr/bin/env bash
# test_run_dir_warning.sh TOOL LIB: an unusable spill directory is reported once by a many-process program under
# `memspace run --spill` (the tool checks it before it starts the program; the program's processes say it only
# under MEMSPACE_VERBOSE, each when spill is first needed), and by every process of a plain LD_PRELOAD (no memspace
# run marker) that needs spill, as documented in docs/spill.md. A process that never holds a large block (or, under
# auto, never sends one to spill) checks nothing and says nothing, even under MEMSPACE_VERBOSE.
set -u
tool=$1 lib=$2
. "$(dirname "$0")/../common/ms_test.sh"
# MS_TEST_OVERRIDE_BUILD=0 (tests/tools/CMakeLists.txt): what memspace run promises cannot be seen
[ "${MS_TEST_OVERRIDE_BUILD:-1}" = 1 ] || ms_skip_refused "this build has no override layer (a sanitizer build): memspace run preloads a library that serves no malloc and brings the sanitizer's runtime into the program (under ThreadSanitizer a program's SIGSEGV becomes its report, exit 66; with jemalloc preloaded the tool itself crashes)"
ms_need_cmd python3 || ms_finish 0
fail=0
script='for i in 1 2 3 4 5; do /bin/true; done'
big='python3 -c "b = bytearray(4 << 20)"' # a large block: spilled under a 1M threshold, in RAM under auto
script_big="for i in 1 2 3 4 5; do $big; done"
lines() { grep -c "spill directory /nonexistent-red2 " <<<"$1"; }
out=$(MEMSPACE_SPILL_DIR=/nonexistent-red2 "$tool" run --spill -- sh -c "$script" 2>&1)
echo "memspace run --spill: $(lines "$out") line(s)"
[ "$(lines "$out")" = 1 ] || { echo "FAIL: expected one warning for the process tree:"; echo "$out"; fail=1; }
[[ "$out" == *"warning: spill directory /nonexistent-red2 "*"is not usable (missing)"* ]] ||
  { echo "FAIL: the warning does not say the directory is missing"; fail=1; }
out=$(MEMSPACE_SPILL_DIR=/nonexistent-red2 "$tool" run --spill-threshold 1M -- sh -c "$script_big" 2>&1)
echo "memspace run --spill-threshold 1M, large blocks: $(lines "$out") line(s)"
[ "$(lines "$out")" = 1 ] || { echo "FAIL: expected one warning for the process tree:"; echo "$out"; fail=1; }
out=$(MEMSPACE_VERBOSE=1 MEMSPACE_SPILL_DIR=/nonexistent-red2 "$tool" run --spill-threshold 1M -- sh -c "$script_big" 2>&1)
echo "memspace run --spill-threshold 1M --verbose, large blocks: $(lines "$out") line(s)"
[ "$(lines "$out")" -ge 6 ] || { echo "FAIL: under MEMSPACE_VERBOSE every process with a large block should say it"; echo "$out"; fail=1; }
# processes without a large block check nothing (nor, under auto, those whose large blocks stay in RAM): the
# tool's line alone, even under MEMSPACE_VERBOSE
for s in "$script" "$script_big"; do
  out=$(MEMSPACE_VERBOSE=1 MEMSPACE_SPILL_DIR=/nonexistent-red2 "$tool" run --spill -- sh -c "$s" 2>&1)
  echo "memspace run --spill --verbose, nothing spilled: $(lines "$out") line(s)"
  [ "$(lines "$out")" = 1 ] || { echo "FAIL: processes that spill nothing checked the directory"; echo "$out"; fail=1; }
done
# a nested memspace run is a new tree: one line (a run exec'ed by a run was checked by it)
out=$(MEMSPACE_SPILL_DIR=/nonexistent-red2 "$tool" run --spill -- "$tool" run --spill -- /bin/true 2>&1)
echo "nested memspace run: $(lines "$out") line(s)"
[ "$(lines "$out")" = 1 ] || { echo "FAIL: the nested run should warn once"; echo "$out"; fail=1; }
out=$(MEMSPACE_SPILL_DIR=/nonexistent-red2 "$tool" run --spill -- sh -c "$tool run --spill -- /bin/true" 2>&1)
echo "memspace run inside a run's shell: $(lines "$out") line(s)"
[ "$(lines "$out")" = 2 ] || { echo "FAIL: a run started by the tree's shell is a new tree and warns again"; echo "$out"; fail=1; }
# a run without a spill setting checks nothing: the program run under it says it at its first need (an inner run
# exec'ed by it with a threshold, or a program turning spill on with ms_option_set); its children still do not
out=$(MEMSPACE_SPILL_DIR=/nonexistent-red2 "$tool" run -- "$tool" run --spill-threshold 1M -- $big 2>&1)
echo "a run with spill exec'ed by a run without: $(lines "$out") line(s)"
[ "$(lines "$out")" = 1 ] || { echo "FAIL: the inner run's tree should warn once"; echo "$out"; fail=1; }
out=$(MEMSPACE_SPILL_DIR=/nonexistent-red2 "$tool" run -- python3 -c "
import ctypes; lib = ctypes.CDLL('$lib'); lib.ms_option_set.argtypes = [ctypes.c_int, ctypes.c_longlong]
lib.ms_option_set(6, 1 << 20); b = bytearray(4 << 20)" 2>&1) # 6: MS_OPTION_SPILL_THRESHOLD
echo "a program turning spill on under a run without spill: $(lines "$out") line(s)"
[ "$(lines "$out")" = 1 ] || { echo "FAIL: the program should warn at its first spilled block"; echo "$out"; fail=1; }
# a marker that is not a pid is no marker
out=$(MEMSPACE_RUN_PID=xyz MEMSPACE_SPILL_THRESHOLD=1M MEMSPACE_SPILL_DIR=/nonexistent-red2 LD_PRELOAD=$lib sh -c "$big" 2>&1)
[ "$(lines "$out")" = 1 ] || { echo "FAIL: MEMSPACE_RUN_PID=xyz hid the warning: $out"; fail=1; }
[[ "$out" != *"unknown variable"* ]] || { echo "FAIL: MEMSPACE_RUN_PID reported as unknown: $out"; fail=1; }
# plain LD_PRELOAD: no marker, every process with a spilled block warns (at it), the others say nothing
out=$(MEMSPACE_SPILL_THRESHOLD=1M MEMSPACE_SPILL_DIR=/nonexistent-red2 LD_PRELOAD=$lib sh -c "$script_big" 2>&1)
echo "plain LD_PRELOAD, large blocks: $(lines "$out") line(s)"
[ "$(lines "$out")" = 5 ] || { echo "FAIL: plain LD_PRELOAD: expected one line per process with a large block"; echo "$out"; fail=1; }
out=$(MEMSPACE_SPILL_THRESHOLD=1M MEMSPACE_SPILL_DIR=/nonexistent-red2 LD_PRELOAD=$lib sh -c "$script" 2>&1)
out=$out$(MEMSPACE_SPILL_THRESHOLD=auto MEMSPACE_SPILL_DIR=/nonexistent-red2 LD_PRELOAD=$lib sh -c "$script_big" 2>&1)
echo "plain LD_PRELOAD, nothing spilled: $(lines "$out") line(s)"
[ "$(lines "$out")" = 0 ] || { echo "FAIL: processes without a large block checked the directory"; echo "$out"; fail=1; }
# a threshold the library reads as 0 (spaces around it, a suffix, leading zeros) or as invalid (reported, the
# default 0 kept) spills nothing: the tool says nothing of the directory, nor that a --spill-dir spills nothing
# without a threshold only when one is set
for t in " 0 " 0K 00 junk; do
  out=$(MEMSPACE_SPILL_THRESHOLD=$t MEMSPACE_SPILL_DIR=/nonexistent-red2 "$tool" run -- /bin/true 2>&1)
  echo "MEMSPACE_SPILL_THRESHOLD='$t': $(lines "$out") line(s)"
  [ "$(lines "$out")" = 0 ] || { echo "FAIL: spill is off, the directory was reported:"; echo "$out"; fail=1; }
  out=$(MEMSPACE_SPILL_THRESHOLD=$t "$tool" run --spill-dir /tmp -- /bin/true 2>&1)
  [[ "$out" == *"nothing is spilled"* ]] || { echo "FAIL: --spill-dir with spill off ('$t') not said to spill nothing: $out"; fail=1; }
done
ms_finish $fail
