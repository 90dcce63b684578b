#!/usr/bin/env bash
# The [malloc] statistics (docs/stats.md): with MEMSPACE_SHOW_STATS=1 every malloc-family call is counted, in
# every thread: two runs of count_prog that differ by N rounds in each of two threads differ by exactly the calls
# of those rounds; the peak of allocated bytes is exact; text and JSON say the same. Without statistics there is
# no [malloc] section.
set -u
lib=$1 prog=$2
py=/usr/bin/python3
. "$(dirname "$0")/../common/ms_test.sh"
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }
# the value of line $2 of the [malloc] section in text $1
# MEMSPACE_PURGE_DELAY=-1: no maintenance thread, whose creation allocates (its thread's blocks in one run only)
export MEMSPACE_PURGE_DELAY=-1
val() { echo "$1" | awk -v k="$2" '/^\[/ {s = ($0 == "[malloc]")} s && $1 == k {print $2}'; }

base=$(LD_PRELOAD=$lib MEMSPACE_SHOW_STATS=1 "$prog" 0 2>&1)
more=$(LD_PRELOAD=$lib MEMSPACE_SHOW_STATS=1 "$prog" 1000 2>&1)
echo "$more" | sed -n '/^\[malloc\]/,/^\[heap\]/p'
check "a [malloc] section" '[ -n "$(val "$more" allocations)" ]'
d() { echo $(( $(val "$more" "$1") - $(val "$base" "$1") )); }
check "allocations: 2 threads x 1000 rounds x 4" '[ "$(d allocations)" = 8000 ]'
check "callocs: 2 x 1000 x 1" '[ "$(d callocs)" = 2000 ]'
check "reallocs: 2 x 1000 x 2" '[ "$(d reallocs)" = 4000 ]'
check "frees: 2 x 1000 x 4" '[ "$(d frees)" = 8000 ]'
check "nothing of the rounds stays live" '[ "$(d allocated)" = 0 ]'
peak=$(LD_PRELOAD=$lib MEMSPACE_SHOW_STATS=1 "$prog" peak 2>&1)
u=$(echo "$peak" | awk '/^usable/ {print $2}')
check "peak exact: the 64 MiB block's usable size ($u) over what is live at exit" \
  '[ -n "$u" ] && [ "$(val "$peak" allocated_peak)" = $(( u + $(val "$peak" allocated) )) ]'
check "allocated agrees with the heap's" \
  '[ "$(val "$more" allocated)" = "$(echo "$more" | awk "/^\[heap\]/ {s=1} s && \$1 == \"allocated\" {print \$2; exit}")" ]'

if [ -x $py ]; then
  json=$(LD_PRELOAD=$lib MEMSPACE_SHOW_STATS=1 MEMSPACE_STATS_FORMAT=json "$prog" 1000 2>&1)
  for k in allocations callocs reallocs frees allocated; do
    check "JSON $k as in the text" \
      '[ "$(echo "$json" | $py -c "import json,sys; print(json.load(sys.stdin)[\"malloc\"][\"$k\"])")" = "$(val "$more" $k)" ]'
  done
  check "JSON allocated_peak a number" \
    'echo "$json" | $py -c "import json,sys; assert isinstance(json.load(sys.stdin)[\"malloc\"][\"allocated_peak\"], int)"'
else
  ms_part_missing python3 "(the JSON checks)"
fi

plain=$(LD_PRELOAD=$lib "$prog" 10 2>&1)
check "without statistics nothing is printed" '[ -z "$plain" ]'
echo "$pass passed, $fail failed"
ms_finish $fail
