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
# a command that takes no argument names the one it was given, as run and bench do, before its usage
for cmd in version info; do
  err=$("$tool" $cmd --x 2>&1 >/dev/null); st=$?
  check "$cmd with an argument: status 2, the argument named ($err)" \
    '[ $st = 2 ] && [[ "$err" == *"unknown argument '"'"'--x'"'"'"* ]] && [[ "$err" == *"usage: memspace $cmd"* ]]'
done
"$tool" info >/dev/null; check "info runs" '[ $? = 0 ]'
# an option after --out is not its directory: refused before anything runs or is made (status 2, nothing created)
tmp=$(mktemp -d /tmp/memspace-bench-args.XXXXXX)
for w in --quick --full --help -h --; do
  err=$(cd "$tmp" && "$tool" bench pages --out "$w" --quick 2>&1 >/dev/null); st=$?
  check "bench pages --out $w: status 2, --out needs a directory ($err)" \
    '[ $st = 2 ] && [[ "$err" == *"--out needs a directory"* ]] && [ -z "$(ls -A "$tmp")" ]'
done
err=$("$tool" bench heap pages 2>&1); st=$?
check "two parts: one PART at a time ($err)" '[ $st = 2 ] && [[ "$err" == *"one PART at a time"* ]]'
rm -rf "$tmp"
err=$("$tool" bench pages --quick --out /proc/no/such/dir 2>&1 >/dev/null); st=$?
check "results that cannot be written: status 1, the directory named ($err)" '[ $st = 1 ] && [[ "$err" == *"/proc/no/such/dir"* ]]'
echo "$pass passed, $fail failed"
[ $fail = 0 ]
