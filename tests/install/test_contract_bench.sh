#!/bin/sh
# test_contract_bench.sh TOOL SRC: `memspace bench PART --quick --out DIR` for the parts no other test runs (spaces,
# dma, spill) writes PART.csv, PART.cmd and plots as CONTRACT §2 says (check_bench_csv.py), with a peer hidden
# (MSB_HIDE_PEERS) showing up as metric=status,value=not_installed rows only. pages and heap: their own tests.
tool=$1 src=$2
out=$(mktemp -d /tmp/memspace-contract-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT
fail=0
for part in spaces dma spill; do
  MSB_HIDE_PEERS=jemalloc "$tool" bench $part --quick --out "$out" >"$out/$part.log" 2>&1 ||
    { echo "FAIL: memspace bench $part --quick exited $?"; tail -20 "$out/$part.log"; fail=1; continue; }
  hidden=""
  [ $part = spaces ] && hidden=jemalloc # the one part here that measures the peers
  python3 "$src/tests/install/check_bench_csv.py" "$out" $part $hidden || fail=1
done
exit $fail
