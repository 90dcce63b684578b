#!/usr/bin/env bash
# memspace bench argument handling and the CLI's usage errors.
set -u
tool=$1
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }
"$tool" bench 2>/dev/null; check "bench without part refused" '[ $? = 2 ]'
"$tool" bench nosuchpart --out /tmp 2>/dev/null; check "unknown part refused" '[ $? = 2 ]'
"$tool" nosuchcommand 2>/dev/null; check "unknown command refused" '[ $? = 2 ]'
"$tool" version | grep -q '^memspace [0-9]'; check "version prints" '[ $? = 0 ]'
"$tool" version extra >/dev/null 2>&1; check "version with an argument: usage, status 2, as info" '[ $? = 2 ]'
"$tool" info >/dev/null; check "info runs" '[ $? = 0 ]'
echo "$pass passed, $fail failed"
[ $fail = 0 ]
