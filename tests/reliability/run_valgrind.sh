#!/usr/bin/env bash
# memcheck understands memspace: run valgrind_prog (a MEMSPACE_VALGRIND build) in each mode and check that
# memcheck reports exactly the planted leak / overflow / use-after-free and nothing on correct code.
set -u
prog=$1
. "$(dirname "$0")/../common/ms_test.sh"
command -v valgrind >/dev/null || ms_skip_missing "valgrind (Debian package valgrind)"
fail=0
run() {  # mode
  valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,possible --errors-for-leak-kinds=definite \
    --error-exitcode=99 "$prog" "$1" >"$out.$1" 2>&1
  echo $?
}
out=$(mktemp -d)/vg
check() {  # mode what pattern expected-count
  local n
  n=$(grep -c -- "$3" "$out.$1")
  if [ "$n" != "$4" ]; then
    echo "FAIL: $1: expected $4 line(s) matching '$3' ($2), got $n"; fail=1
    sed 's/^/    /' "$out.$1" | tail -40
  else
    echo "ok: $1: $2"
  fi
}
rc=$(run clean)
[ "$rc" = 0 ] || { echo "FAIL: clean run exited $rc"; fail=1; }
check clean "no error on correct code" "ERROR SUMMARY: 0 errors" 1
check clean "nothing definitely lost" "are definitely lost" 0
rc=$(run leak)
check leak "the planted 100-byte leak is reported" "100 bytes in 1 blocks are definitely lost" 1
check leak "nothing else is lost" "are definitely lost" 1
check leak "one error in all" "ERROR SUMMARY: 1 errors" 1
rc=$(run overflow)
check overflow "the one-byte overflow is reported" "Invalid write of size 1" 1
check overflow "one error in all" "ERROR SUMMARY: 1 errors" 1
rc=$(run uaf)
check uaf "the read after free is reported" "Invalid read of size 1" 1
check uaf "one error in all" "ERROR SUMMARY: 1 errors" 1
rm -rf "$(dirname "$out")"
exit $fail
