#!/bin/sh
# run_tmpfs_warning.sh TOOL: memspace run --spill-dir on tmpfs runs the program (its exit status) and says what
# happens, once: the library refuses a spill directory in RAM and keeps the blocks in RAM (docs/spill.md); the tool
# does not say the spilled data would take the memory it should save, "except what goes to swap", as if it spilled
# there.
tool=$1
. "$(dirname "$0")/../common/ms_test.sh"
[ -d /dev/shm ] && [ "$(stat -f -c %T /dev/shm)" = tmpfs ] || ms_skip_refused "/dev/shm is not a tmpfs here"
out=$("$tool" run --spill-threshold 64K --spill-dir /dev/shm -- sh -c 'exit 42' 2>&1); rc=$?
echo "status $rc: $out"
fail=0
[ $rc = 42 ] || fail=1
case $out in *"spill directory /dev/shm is on tmpfs"*"refused, spilled allocations stay in RAM"*) ;; *) fail=1 ;; esac
[ "$(printf '%s\n' "$out" | grep -c .)" = 1 ] || fail=1 # said once, by the library's check at the start
case $out in *"except what goes to swap"*) fail=1 ;; esac
ms_finish $fail
