#!/usr/bin/env bash
# Start-up and exit cost (issue #26): a program that runs for a millisecond pays no more than it must. The system
# calls memspace makes itself (the [pages] `syscalls` line: every call through its OS layer, /proc reads
# included) in a whole run, start to exit:
#   - a program that allocates nothing: none (no reservation, no /proc read, no thread, nothing at exit);
#   - one malloc and one free: at most 9 (the heap's reservation, two /proc numbers of 3 calls each, its
#     thread-cache mapping and first segment).
# No maintenance thread starts in a single-threaded program (nothing in /proc/PID/task but the program).
set -u
lib=$1 prog=$2
. "$(dirname "$0")/../common/ms_test.sh"
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }
calls() { LD_PRELOAD=$lib MEMSPACE_SHOW_STATS=1 "$prog" "$1" 2>&1 | awk '/^\[pages\]/ {s=1} s && $1 == "syscalls" {print $2}'; }

none=$(calls none); one=$(calls one)
echo "system calls by memspace: allocating nothing $none, one malloc and free $one"
check "allocating nothing: no system call" '[ "$none" = 0 ]'
check "one malloc and free: at most 9 system calls" '[ -n "$one" ] && [ "$one" -le 9 ]'
threads=$(LD_PRELOAD=$lib /bin/sh -c 'ls /proc/$$/task | wc -l')
check "no maintenance thread in a single-threaded program" '[ "$threads" = 1 ]'
echo "$pass passed, $fail failed"
ms_finish $fail
