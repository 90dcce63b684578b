#!/usr/bin/env bash
# bench/plot.py PART.csv OUTDIR, as docs/bench-heap.md tells a reader to run it: OUTDIR is made when missing and the
# plots land in it; a CSV that cannot be read is said in one line with status 1, never a Python traceback.
set -u
src=$1
. "$(dirname "$0")/../common/ms_test.sh"
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || ms_skip_missing "python3-matplotlib (Debian package)"
tmp=$(mktemp -d /tmp/memspace-plot.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }
err=$(python3 "$src/bench/plot.py" "$src/bench/results/pages.csv" "$tmp/new/plots" 2>&1); st=$?
check "a missing OUTDIR is made and the plots written (status $st: $err)" \
  '[ $st = 0 ] && ls "$tmp"/new/plots/pages*.png >/dev/null 2>&1'
err=$(python3 "$src/bench/plot.py" "$tmp/none.csv" "$tmp/out" 2>&1); st=$?
check "a missing CSV: one line naming it, status 1 (status $st: $err)" \
  '[ $st = 1 ] && [ "$(wc -l <<<"$err")" = 1 ] && [[ "$err" == *"$tmp/none.csv"* ]]'
echo "$pass passed, $fail failed"
ms_finish $fail
