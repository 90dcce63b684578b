#!/bin/sh
# test_contract_bench.sh TOOL SRC: docs/contract.md §2's outputs (check_bench_csv.py: PART.csv, PART.cmd, plots).
# 1. `memspace bench PART --quick --out DIR` for spaces and dma (pages and heap have their own tests), with a peer
#    hidden (MSB_HIDE_PEERS) that must show up as metric=status,value=not_installed rows only;
# 2. what `make bench` wrote into bench/results/ (every part present there: spill's is only checked this way, its
#    quick run is too long for make test).
tool=$1 src=$2
# (a space and a quote in the directory's name: PART.cmd's command line must still be the exact command)
out=$(mktemp -d "/tmp/memspace contract bench's.XXXXXX")
trap 'rm -rf "$out"' EXIT
fail=0
for part in spaces dma; do
  MSB_HIDE_PEERS=jemalloc "$tool" bench $part --quick --out "$out" >"$out/$part.log" 2>&1 ||
    { echo "FAIL: memspace bench $part --quick exited $?"; tail -20 "$out/$part.log"; fail=1; continue; }
  hidden=""
  [ $part = spaces ] && hidden=jemalloc # the one part of these two that measures the peers
  python3 "$src/tests/install/check_bench_csv.py" "$out" $part $hidden || fail=1
done
for part in pages spaces heap spill dma; do
  [ -f "$src/bench/results/$part.csv" ] || continue
  echo "bench/results/$part.csv:"
  python3 "$src/tests/install/check_bench_csv.py" "$src/bench/results" $part || fail=1
done
exit $fail
