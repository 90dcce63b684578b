#!/bin/sh
# expect_outcome.sh PATTERN CMD...: the outcome rule of issue #25 for one program run (CMD, e.g. `memspace run
# -- PROG`): harmless (exit 0), or detected: SIGABRT (status 134) with exactly one memspace message on stderr, and
# it contains PATTERN (grep -E: the pointer's description) and the pointer the program printed on stderr as
# "pointer 0x..." (when it printed one). Anything else fails: a hang the program's own alarm
# ends (SIGALRM), a crash without a message, several messages, a message without PATTERN.
pattern=$1
shift
err=$(mktemp /tmp/memspace-outcome.XXXXXX)
trap 'rm -f "$err"' EXIT
ulimit -c 0
{ "$@" 2>"$err"; } 2>/dev/null
rc=$?
cat "$err" >&2
n=$(grep -c '^memspace: ' "$err")
ptr=$(sed -n 's/^pointer \(0x[0-9a-f]*\)$/\1/p' "$err" | head -1)
case $rc in
  0) echo "harmless"; exit 0 ;;
  134)
    if [ "$n" = 1 ] && grep '^memspace: ' "$err" | grep -qE -- "$pattern" &&
       { [ -z "$ptr" ] || grep '^memspace: ' "$err" | grep -qF -- "$ptr"; }; then echo "detected"; exit 0; fi
    echo "FAILED: SIGABRT with $n memspace messages (wanted one matching: $pattern, naming ${ptr:-no pointer})"; exit 1 ;;
  *) echo "FAILED: exit status $rc (a hang ends as SIGALRM, 142)"; exit 1 ;;
esac
