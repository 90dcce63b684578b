#!/bin/sh
# tool_refusals.sh MEMSPACE: a value `memspace run` lets through must be one the library takes, and a refused
# command leaves nothing behind.
# - --purge-delay ' 5' and '+5' pass strtol, but the library would warn "invalid value" and run the program with
#   the default delay (exit 0): the tool refuses them up front, exit 2 naming the option;
# - `memspace bench nosuchpart --out DIR` refuses the part before making DIR (or its parents).
tool=$1
. "$(dirname "$0")/../common/ms_test.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ms-tool-refusals.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
for v in ' 5' '+5' '5 ' '' '-' '--1' '1e3'; do
  msg=$("$tool" run --purge-delay "$v" -- true 2>&1); rc=$?
  case $rc:$msg in
    2:*--purge-delay*) ;;
    *) echo "FAIL: --purge-delay '$v': status $rc: $msg"; fail=1 ;;
  esac
done
out=$("$tool" run --purge-delay=-1 -- sh -c 'echo "$MEMSPACE_PURGE_DELAY"' 2>&1); rc=$?
[ $rc = 0 ] && [ "$out" = "-1" ] || { echo "FAIL: --purge-delay=-1: status $rc: $out"; fail=1; }
out=$("$tool" run --purge-delay 250 -- sh -c 'echo "$MEMSPACE_PURGE_DELAY"' 2>&1); rc=$?
[ $rc = 0 ] && [ "$out" = "250" ] || { echo "FAIL: --purge-delay 250: status $rc: $out"; fail=1; }
msg=$("$tool" bench nosuchpart --quick --out "$tmp/new/dir" 2>&1); rc=$?
[ $rc = 2 ] || { echo "FAIL: unknown part: status $rc: $msg"; fail=1; }
case $msg in *"unknown part 'nosuchpart'"*) ;; *) echo "FAIL: unknown part not named: $msg"; fail=1 ;; esac
[ -e "$tmp/new" ] && { echo "FAIL: a refused bench made its --out directory $tmp/new/dir"; fail=1; }
ms_finish $fail
