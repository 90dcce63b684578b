#!/usr/bin/env bash
# run_secure_named.sh TOOL PROG: `memspace run` names (MEMSPACE_VERBOSE=1) the programs the loader runs in
# secure-execution mode, and only those: a setuid copy owned by another user is named and memspace is not active
# in it; run by root, a setuid-root copy and a copy with file capabilities get no such line, and memspace is
# active in them (root gains no privilege there, so the loader keeps LD_PRELOAD). PROG: any dynamic program.
set -u
tool=$1 prog=$2
. "$(dirname "$0")/../common/ms_test.sh"
[ "$(id -u)" = 0 ] || ms_skip_refused "setuid copies owned by root and by another user need root (uid $(id -u))"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ms-run-named.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }
name=$(basename "$prog")

cp "$prog" "$tmp/$name" && chown nobody "$tmp/$name" && chmod 4755 "$tmp/$name" || exit 1
msg=$(MEMSPACE_VERBOSE=1 "$tool" run -- "$tmp/$name" 2>&1 >/dev/null)
echo "setuid nobody: $msg" | head -3
case $msg in
  *"active in"*) ms_skip_refused "the setuid copy did not run in secure-execution mode (is $tmp mounted nosuid?)" ;;
esac
check "setuid copy owned by another user: named" '[[ "$msg" == *"will not use memspace"* ]]'

chown root "$tmp/$name" && chmod 4755 "$tmp/$name" || exit 1
msg=$(MEMSPACE_VERBOSE=1 "$tool" run -- "$tmp/$name" 2>&1 >/dev/null)
echo "setuid root: $msg" | head -3
check "setuid-root copy run by root: memspace active, not named" \
  '[[ "$msg" == *"active in $name"* && "$msg" != *"will not use memspace"* ]]'

if command -v setcap >/dev/null; then
  chmod 755 "$tmp/$name" && setcap cap_net_bind_service+ep "$tmp/$name" || exit 1
  msg=$(MEMSPACE_VERBOSE=1 "$tool" run -- "$tmp/$name" 2>&1 >/dev/null)
  echo "file capabilities: $msg" | head -3
  check "copy with file capabilities run by root: memspace active, not named" \
    '[[ "$msg" == *"active in $name"* && "$msg" != *"will not use memspace"* ]]'
else
  ms_part_missing "setcap (Debian package libcap2-bin) for the file-capability case"
fi
echo "$pass passed, $fail failed"
ms_finish $fail
