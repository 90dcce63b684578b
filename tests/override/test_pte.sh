#!/usr/bin/env bash
# Page-table pages of a short program (issue #26): what a program that runs for a millisecond touches of the
# heap's address space shares page-table pages (docs/heap.md "Address space"). A program making a few small
# blocks and one block of each large size of 64 KiB-1 MiB holds at most 17 page-table pages (VmPTE) more than the
# same program allocating nothing, a later mapping of both (the locale archive's, one page) included: the region
# leaves the place below the libraries to the program's later mappings, the first segment and the slot table's
# place share their upper levels, the entries of every large size's first slots lie in the library's .lbss (no
# table mapping); each large size used takes two (its slot's last-level table and its gibibyte's table above),
# and a 512 GiB table serves four sizes. A layout that put the region below the libraries (a later mapping then
# needs three levels of its own) or each size's first entries a page-table page apart exceeds the bound.
# Medians of 7 runs each, interleaved: the layout depends on where the kernel placed the libraries.
set -u
lib=$1 prog=$2
. "$(dirname "$0")/../common/ms_test.sh"
[ -r /proc/self/status ] && grep -q '^VmPTE:' /proc/self/status || ms_skip_refused "no VmPTE in /proc/self/status"
none=() alloc=()
for i in $(seq 7); do
  none+=("$(LD_PRELOAD=$lib "$prog" none)") || { echo "FAIL: pte_prog none"; exit 1; }
  alloc+=("$(LD_PRELOAD=$lib "$prog" alloc)") || { echo "FAIL: pte_prog alloc"; exit 1; }
done
med() { printf '%s\n' "$@" | sort -n | sed -n 4p; }
n=$(med "${none[@]}") a=$(med "${alloc[@]}")
pages=$(( (a - n) / 4 ))
echo "VmPTE allocating nothing: ${none[*]} KiB (median $n); a few small and 5 large blocks: ${alloc[*]} KiB (median $a)"
echo "page-table pages the allocations added: $pages (at most 17)"
fail=0
[ "$pages" -le 17 ] || { echo "FAIL: $pages page-table pages for a few blocks (at most 17)"; fail=1; }
ms_finish $fail
