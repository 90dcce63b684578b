#!/usr/bin/env bash
# run_verbose_named.sh TOOL PROG: `memspace run --verbose` names the programs that ignore LD_PRELOAD as
# MEMSPACE_VERBOSE=1 does (the usage says --verbose is MEMSPACE_VERBOSE=1; docs/contract.md §2): a static
# program (ldconfig, static-pie on Debian) and, run by root, a setuid copy of PROG owned by another user. The
# tool reads MEMSPACE_VERBOSE after the option sets it (read before, --verbose would say nothing for them).
set -u
tool=$1 prog=$2
. "$(dirname "$0")/../common/ms_test.sh"
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }

static=""
for f in /sbin/ldconfig /usr/sbin/ldconfig; do
  [ -x "$f" ] && ! LC_ALL=C readelf -l "$f" 2>/dev/null | grep -q 'INTERP' && static=$f && break
done
if [ -n "$static" ]; then
  msg=$(MEMSPACE_VERBOSE=0 "$tool" run --verbose -- "$static" --version 2>&1 >/dev/null); st=$?
  echo "--verbose static: status $st: $msg" | head -3
  check "--verbose names a static program" '[ $st = 0 ] && [[ "$msg" == *"$static will not use memspace"*"statically linked"* ]]'
  msg=$(MEMSPACE_VERBOSE=1 "$tool" run -- "$static" --version 2>&1 >/dev/null)
  check "MEMSPACE_VERBOSE=1 names a static program" '[[ "$msg" == *"$static will not use memspace"* ]]'
  msg=$("$tool" run -- "$static" --version 2>&1 >/dev/null)
  check "without --verbose nothing is said" '[ -z "$msg" ]'
else
  ms_part_missing "a static ldconfig (Debian package libc-bin) for the static case"
fi

if [ "$(id -u)" = 0 ]; then
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/ms-run-verbose.XXXXXX") || exit 1
  trap 'rm -rf "$tmp"' EXIT
  chmod 755 "$tmp"
  name=$(basename "$prog")
  cp "$prog" "$tmp/$name" && chown nobody "$tmp/$name" && chmod 4755 "$tmp/$name" || exit 1
  msg=$(MEMSPACE_VERBOSE=1 "$tool" run -- "$tmp/$name" 2>&1 >/dev/null)
  if [[ "$msg" == *"will not use memspace"* ]]; then
    msg=$("$tool" run --verbose -- "$tmp/$name" 2>&1 >/dev/null)
    echo "--verbose setuid nobody: $msg" | head -3
    check "--verbose names a setuid program owned by another user" '[[ "$msg" == *"$tmp/$name will not use memspace"* ]]'
  else
    ms_part_refused "the setuid copy did not run in secure-execution mode (is $tmp mounted nosuid?)"
  fi
else
  ms_part_refused "a setuid copy owned by another user needs root (uid $(id -u))"
fi
echo "$pass passed, $fail failed"
ms_finish $fail
