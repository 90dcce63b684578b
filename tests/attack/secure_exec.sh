#!/usr/bin/env bash
# A program in secure-execution mode (setuid here; setgid and file capabilities alike: AT_SECURE) that has
# memspace in it (linked with libmemspace.a, or preloaded from /etc/ld.so.preload) reads no MEMSPACE_* variable:
# the unprivileged caller sets them, and must not choose a file the program truncates (MEMSPACE_STATS_FILE), make
# its mallocs fail (a small fixed MEMSPACE_SPACE_INITIAL) or print its addresses (MEMSPACE_VERBOSE). One line
# says the variables were ignored.
# Usage: secure_exec.sh PROG (secure_exec_prog)
set -u
prog=$1
. "$(dirname "$0")/../common/ms_test.sh"
[ "$(id -u)" = 0 ] || ms_skip_refused "making a setuid copy owned by another user needs root (uid $(id -u))"
id nobody >/dev/null 2>&1 || ms_skip_missing "a user 'nobody' to own the setuid copy (Debian package base-passwd)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ms-secure-exec.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
chmod 777 "$tmp" # the setuid copy (user nobody) could create the statistics file here
cp "$prog" "$tmp/prog" && chown nobody "$tmp/prog" && chmod 4755 "$tmp/prog" || exit 1
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }

out=$(MEMSPACE_SPACE_INITIAL=64K MEMSPACE_SPACE_EXPAND=0 MEMSPACE_SPILL_THRESHOLD=64K MEMSPACE_SPILL_DIR="$tmp" \
      MEMSPACE_VERBOSE=1 MEMSPACE_SHOW_STATS=1 MEMSPACE_STATS_FILE="$tmp/stats" MEMSPACE_BOGUS=1 \
      "$tmp/prog" 2>"$tmp/err")
echo "$out"
case $out in
  *at_secure=1*) ;;
  *at_secure=0*) ms_skip_refused "the setuid copy did not run in secure-execution mode (is $tmp mounted nosuid? $(findmnt -n -o OPTIONS -T "$tmp" 2>/dev/null))" ;;
  *) echo "FAIL: no output from the setuid copy"; cat "$tmp/err"; exit 1 ;;
esac
check "no MEMSPACE_* option read" \
  '[[ "$out" == *"space_initial=0 spill_threshold=0 verbose=0 show_stats=0 spill_dir=- stats_file=- malloc=ok"* ]]'
check "no statistics file written" '[ -z "$(ls "$tmp" | grep stats)" ]'
check "stderr: one line saying the variables are ignored, no address" \
  '[ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "MEMSPACE_\* variables ignored: secure-execution mode" "$tmp/err" &&
   ! grep -q 0x "$tmp/err" || { cat "$tmp/err"; false; }'
# the same program outside secure-execution mode reads them (the variables are the ones it knows)
out=$(MEMSPACE_SPILL_THRESHOLD=64K MEMSPACE_SPILL_DIR="$tmp" "$prog" 2>/dev/null)
check "outside secure-execution mode the variables apply" '[[ "$out" == *"spill_threshold=65536"*"spill_dir=$tmp "* ]]'
echo "$pass passed, $fail failed"
ms_finish $fail
