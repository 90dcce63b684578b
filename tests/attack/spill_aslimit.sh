#!/usr/bin/env bash
# spill_aslimit.sh TOOL PROG DIR: PROG (aslimit_prog) lowers RLIMIT_AS below its address space under a spill
# threshold of 64 KiB (files in DIR), so mapping the spill file is refused with ENOMEM. The refusal is reported as
# the failed mapping, and the block goes to RAM like any other refusal; it is not reported as a full disk ("the
# disk of DIR is full (79 GiB free, 4 MiB asked for)"), nor does the block fail without trying RAM. Then under
# `ulimit -v` (spill's reservation cut to a quarter of the limit) blocks of 1 MiB until one is refused: the
# class's used-up address space is named, not "the filesystem's largest file".
set -u
tool=$1 prog=$2 dir=$3
msg=$(MEMSPACE_SPILL_THRESHOLD=64K MEMSPACE_SPILL_DIR="$dir" "$tool" run -- "$prog" 2>&1)
rc=$?
echo "$msg"
fail=0
[ $rc = 0 ] || { echo "FAIL: exit status $rc"; fail=1; }
[[ "$msg" != *"is full"* ]] || { echo "FAIL: a refused mapping is reported as a full disk"; fail=1; }
[[ "$msg" == *"ENOMEM"*"stay in RAM"* ]] || { echo "FAIL: the refused mapping (ENOMEM) is not reported"; fail=1; }
msg=$(ulimit -v 600000 && MEMSPACE_SPILL_THRESHOLD=64K MEMSPACE_SPILL_DIR="$dir" "$tool" run -- "$prog" fill 2>&1)
rc=$?
echo "$msg"
[ $rc = 0 ] || { echo "FAIL: exit status $rc under ulimit -v"; fail=1; }
[[ "$msg" != *"largest file"* ]] || { echo "FAIL: the used-up reservation is blamed on the filesystem"; fail=1; }
[[ "$msg" == *"address space reserved for its size class is used up"* ]] ||
  { echo "FAIL: the used-up reservation is not named"; fail=1; }
exit $fail
