#!/usr/bin/env bash
# The heap's region is asked for one of 64 places above the program, drawn per process (docs/heap.md "Page
# tables"): a program loaded at the same address in every run (no PIE) still gets its heap at different
# addresses. 8 runs all at one address would happen with probability 64^-7 if the place is drawn.
set -u
lib=$1 prog=$2
. "$(dirname "$0")/../common/ms_test.sh"
[ "$(cat /proc/sys/kernel/randomize_va_space 2>/dev/null)" = 0 ] && ms_skip_refused "address randomisation is off (kernel.randomize_va_space=0)"
addrs=()
for i in $(seq 8); do addrs+=("$(LD_PRELOAD=$lib "$prog")") || { echo "FAIL: place_prog"; exit 1; }; done
distinct=$(printf '%s\n' "${addrs[@]}" | sort -u | wc -l)
echo "first small block of 8 runs of a non-PIE program: ${addrs[*]} ($distinct distinct)"
fail=0
[ "$distinct" -ge 2 ] || { echo "FAIL: the heap sat at one address in 8 runs"; fail=1; }
ms_finish $fail
