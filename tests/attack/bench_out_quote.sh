#!/bin/sh
# bench_out_quote.sh MEMSPACE SRC: memspace bench PART --out DIR with a quote in DIR (/home/o'brien/...) writes the
# plots (docs/contract.md §2: PART.png or PART-*.png) and DIR/results.md, and leaves SRC's README.md and
# docs/results.md alone: the shell commands that run plot.py and report.py put the paths in '...', and a quote
# left unescaped there would fail the plots (the tool blaming a missing matplotlib) and lose report.py's
# --readme '', so that it rewrites both files.
tool=$1 src=$2
. "$(dirname "$0")/../common/ms_test.sh"
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || ms_skip_missing "python3-matplotlib for the plots"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ms-bench-quote.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
out="$tmp/it's"
mkdir -p "$out" || exit 1
sums=$(cat "$src/README.md" "$src/docs/results.md" | cksum)
cp "$src/README.md" "$tmp/README.md" && cp "$src/docs/results.md" "$tmp/results.md.orig" || exit 1
"$tool" bench pages --quick --out "$out" >"$tmp/log" 2>&1; rc=$?
tail -3 "$tmp/log"
ls "$out"
fail=0
[ $rc = 0 ] || { echo "FAIL: status $rc"; fail=1; }
plots=0
for f in "$out"/pages.png "$out"/pages-*.png; do [ -s "$f" ] && plots=$((plots + 1)); done
[ $plots -gt 0 ] || { echo "FAIL: no plot in $out"; fail=1; }
[ -s "$out/results.md" ] || { echo "FAIL: no results.md in $out"; fail=1; }
grep -q 'not written' "$tmp/log" && { echo "FAIL: the tool says something was not written"; fail=1; }
if [ "$(cat "$src/README.md" "$src/docs/results.md" | cksum)" != "$sums" ]; then
  echo "FAIL: $src/README.md or docs/results.md rewritten (put back)"
  cp "$tmp/README.md" "$src/README.md" && cp "$tmp/results.md.orig" "$src/docs/results.md"
  fail=1
fi
ms_finish $fail
