#!/usr/bin/env bash
# realloc_modes.sh TOOL PROG DIR MODE: realloc_inplace under `memspace run` in heap mode and in MODE (spill: a
# fixed threshold of 1 MiB, spill_auto: --spill; spill files in DIR). Its in-place checks pass in both, and a block
# grown by small steps moves about as often in MODE as in heap mode (a front door asking the heap for exact sizes
# would move a small block at every realloc, then at every class change, many times heap mode's moves).
set -u
tool=$1 prog=$2 dir=$3 mode=$4
case $mode in
  spill) opts=(--spill-threshold 1M --spill-dir "$dir") ;;
  spill_auto) opts=(--spill --spill-dir "$dir") ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
heap=$("$tool" run -- "$prog") || { echo "heap mode: $heap"; exit 1; }
out=$("$tool" run "${opts[@]}" -- "$prog") || { echo "$mode: $out"; exit 1; }
h=${heap#moves } m=${out#moves }
echo "moves growing a block by 16-byte steps: heap mode $h, $mode $m"
[ "$m" -le $((h + h / 4)) ] || { echo "FAIL: $mode moves the block more than heap mode does"; exit 1; }
