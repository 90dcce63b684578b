#!/usr/bin/env bash
# spill_dir_reason.sh TOOL PROG: a spill directory that exists but takes no file (/proc) is reported as such, not
# as missing (the kernel answers ENOENT there too); one that does not exist is reported missing. PROG allocates
# blocks of 64 KiB and more.
set -u
tool=$1 prog=$2
. "$(dirname "$0")/../common/ms_test.sh"
[ -d /proc/self ] || ms_skip_missing "/proc (procfs mounted)"
fail=0
msg=$(MEMSPACE_SPILL_THRESHOLD=64K MEMSPACE_SPILL_DIR=/proc "$tool" run -- "$prog" 2>&1 >/dev/null)
echo "/proc: $msg"
[[ "$msg" == *"spill directory /proc "*"is not usable"* && "$msg" != *"(missing)"* ]] ||
  { echo "FAIL: /proc exists, yet it is not reported as an existing directory that takes no file"; fail=1; }
msg=$(MEMSPACE_SPILL_THRESHOLD=64K MEMSPACE_SPILL_DIR=/proc/nonexistent-dir "$tool" run -- "$prog" 2>&1 >/dev/null)
echo "/proc/nonexistent-dir: $msg"
[[ "$msg" == *"(missing)"* ]] || { echo "FAIL: a missing directory is not reported missing"; fail=1; }
exit $fail
