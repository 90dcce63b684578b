#!/usr/bin/env bash
# Unchanged programs under `memspace run` in the process-space mode, where real programs can break:
#  - under RLIMIT_AS (ulimit -v, as sandboxes and batch systems set it) the process space must still be created
#    (a reserve for 63 expansions would take 4 GiB of address space: every malloc would fail, Python die at
#    start-up);
#  - a space's memory is advised for transparent huge pages (a fork then copies one entry per 2 MiB, not one per
#    4 KiB: bash or Python forking with a 2 GiB space copies 512 times fewer), checked on the mapping's flags,
#    skipped without THP.
# usage: run_modes.sh MEMSPACE_TOOL ALLOC_PROG [heap-limit]
#   heap-limit: the heap under RLIMIT_AS must serve the blocks glibc serves (blocks beyond the reduced region's
#   slots are mapped on their own: src/heap/direct.c)
# alloc_prog checks that memspace's malloc serves it whenever LD_PRELOAD names the library (exit 3 when not).
set -u
tool=$1 prog=$2
. "$(dirname "$0")/../common/ms_test.sh"
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); echo "ok   $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }
limited() { (ulimit -v "$1" && shift && exec "$@"); }   # KiB, command...

if [ "${3:-}" = heap-limit ]; then
  # glibc serves a 1.5 GiB block under a 4 GB limit; the heap reserves half the limit split in 31 equal parts
  # (8 for small blocks, one per large slot size): blocks above ~1/64 of the limit (here 32 MiB) are direct
  limited 4000000 "$prog" big 1536; g=$?
  limited 4000000 "$tool" run -- "$prog" big 1536; check "heap: 1.5 GiB block under ulimit -v 4 GB (glibc: exit $g)" '[ $? = $g ]'
  limited 4000000 "$prog" bigs; g=$?
  limited 4000000 "$tool" run -- "$prog" bigs
  check "heap: many large blocks, realloc across slot sizes, calloc, aligned under ulimit -v 4 GB (glibc: exit $g)" '[ $? = $g ]'
  limited 4000000 env MEMSPACE_SECURE=1 "$tool" run -- "$prog" bigs; check "...and with MEMSPACE_SECURE=1" '[ $? = $g ]'
  # small blocks under a limit: the segment area takes address space as it grows (src/heap/region.c msi_heap_region_init),
  # where a reservation of an eighth of the limit (250 MB here) would cap the blocks at that
  limited 2000000 "$tool" run -- "$prog" small 1024; check "heap: 1 GiB of 100-byte blocks under ulimit -v 2 GB" '[ $? = 0 ]'
  for lim in 4000000 67108864; do # more blocks of one size than the slots (6,000 of 100 KiB), small and generous limits
    limited $lim "$tool" run -- "$prog" many 6000 100; check "heap: 6,000 blocks of 100 KiB under ulimit -v $lim" '[ $? = 0 ]'
  done
  limited 2199023255552 "$tool" run -- "$prog" many 100 1000; check "heap: a limit of 2 PiB (larger than the region)" '[ $? = 0 ]'
  msg=$(limited 4000000 "$tool" run -- "$prog" bigdf 2>&1)
  check "a block mapped on its own, freed twice: named a double free" '[[ "$msg" == *"double free"* ]]'
  echo "$pass passed, $fail failed"; [ $fail = 0 ]; exit
fi

# 40,000 live blocks of 40 KiB: two kernel mappings each (block, reserved rest of its slot) stopped at ~32,750
# (vm.max_map_count 65,530); dense slot sizes keep adjacent slots one mapping (src/heap/large.c)
"$tool" run -- "$prog" many 40000 40; check "heap: 40,000 live blocks of 40 KiB (more than vm.max_map_count / 2)" '[ $? = 0 ]'
# the same for blocks over 1 MiB (not dense: two mappings each until 16,384 are live, then mapped on their own,
# merging as glibc's do); before, malloc failed at 32,750, and every mmap after it, small blocks' too
"$tool" run -- "$prog" many 40000 1500; check "heap: 40,000 live blocks of 1.5 MiB" '[ $? = 0 ]'
"$tool" run -- "$prog" manygrow 30000 1500; check "heap: 30,000 live blocks of 1.5 MiB each realloc'd to 3 MiB" '[ $? = 0 ]'
# more blocks grown than the bigger slot size has slots (2,048 of 64 MiB): the rest move to mappings of their own
# by mremap, never by a copy (which committed every page of these sparse blocks: OOM-killed at 16,000 of 9.5 MB)
"$tool" run -- "$prog" manygrow 2100 20480; check "heap: 2,100 sparse blocks of 20 MiB grown to 40 MiB without a copy" '[ $? = 0 ]'

sp="--space-expand 64M --space-at firstalloc"
limited 2000000 "$tool" run --space-initial 64M $sp -- "$prog" mix 200
check "expanding process space under ulimit -v 2 GB: 200 MiB of blocks" '[ $? = 0 ]'
limited 2000000 "$tool" run --space-initial 256M --space-expand 0 -- "$prog" mix 100
check "fixed 256 MiB process space under ulimit -v 2 GB (start, locked)" '[ $? = 0 ]'
st=$(limited 3000000 env MEMSPACE_SHOW_STATS=1 "$tool" run --space-initial 64M $sp -- "$prog" mix 50 2>&1)
check "the process space served those blocks (statistics: size > 0)" \
  'echo "$st" | sed -n "/^\[spaces\]/,/^\[/p" | grep -qE "^ +size +[1-9]"'

mode=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
if [[ "$mode" == *"[never]"* || -z "$mode" ]]; then
  ms_part_refused "thp: transparent huge pages are off on this machine ($mode)"
else
  "$tool" run --space-initial 64M --space-expand 0 -- "$prog" thp
  check "process space advised for transparent huge pages (fork copies 2 MiB entries)" '[ $? = 0 ]'
fi
echo "$pass passed, $fail failed"
ms_finish $fail
