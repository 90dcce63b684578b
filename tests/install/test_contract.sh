#!/usr/bin/env bash
# test_contract.sh TOOL PROBE: docs/contract.md's concrete names and promises that external tests rely on, checked from
# the outside (the tool and an unchanged program, tests/install/contract_probe.c):
#   §3 every variable: its documented values accepted silently, an invalid value reported once naming the
#      variable with the default kept (MEMSPACE_HUGE_PAGES only 0, 2M, 1G); the routing spill > space > heap;
#      a fixed-size space fails with ENOMEM; MEMSPACE_SPACE_AT=start locks the space before main, firstalloc takes
#      nothing before the first allocation; MEMSPACE_HUGE_PAGES gives the heap no hugetlb page, the process space
#      its huge pages; spill goes to MEMSPACE_SPILL_DIR, else $TMPDIR, else /var/tmp;
#      space settings cleared for children unless inherited; SHOW_STATS prints at exit.
#   §2 `memspace run`: every option of the synopsis accepted, exit status the program's, one warning per run.
# Exports and SONAME: exports.sh; the API's names and types: contract_api.c; CSVs: test_contract_bench.sh.
set -u
tool=$1 probe=$2
fail=0 pass=0
check() { if eval "$2"; then pass=$((pass + 1)); else echo "FAIL: $1"; fail=$((fail + 1)); fi; }
tmp=$(mktemp -d /tmp/memspace-contract.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
run() { "$tool" run -- "$@"; } # the program with the library preloaded, environment as given

# --- §3: valid values (the contract's spellings) give no warning ------------------------------------------------
valid=(MEMSPACE_CACHE=unlimited MEMSPACE_CACHE=performance MEMSPACE_CACHE=size MEMSPACE_CACHE=none
       MEMSPACE_PURGE_DELAY=-1 MEMSPACE_PURGE_DELAY=0 MEMSPACE_PURGE_DELAY=1000
       MEMSPACE_SPACE_INITIAL=8388608 MEMSPACE_SPACE_INITIAL=8192K MEMSPACE_SPACE_INITIAL=8M
       MEMSPACE_SPACE_INITIAL=8MiB MEMSPACE_SPACE_INITIAL=8MB MEMSPACE_SPACE_EXPAND=0 MEMSPACE_SPACE_EXPAND=1M
       MEMSPACE_SPACE_AT=start MEMSPACE_SPACE_AT=firstalloc MEMSPACE_SPACE_INHERIT=1 MEMSPACE_SPACE_INHERIT=0
       MEMSPACE_SPILL_THRESHOLD=1G MEMSPACE_SPILL_THRESHOLD=1GiB MEMSPACE_SPILL_THRESHOLD=1GB MEMSPACE_SPILL_DIR=/tmp
       MEMSPACE_HUGE_PAGES=0 MEMSPACE_HUGE_PAGES=2M MEMSPACE_HUGE_PAGES=1G MEMSPACE_SECURE=1 MEMSPACE_SECURE=0
       MEMSPACE_SHOW_STATS=1 MEMSPACE_SHOW_STATS=0 MEMSPACE_VERBOSE=1 MEMSPACE_VERBOSE=0)
for kv in "${valid[@]}"; do
  err=$(env "$kv" "$tool" run -- true 2>&1 >/dev/null)
  check "$kv accepted without a warning" '! grep -qi "invalid" <<<"$err"'
done

# --- §3: an invalid value is reported once, naming the variable; the default is used ---------------------------
invalid=(MEMSPACE_CACHE=fast MEMSPACE_PURGE_DELAY=-2 MEMSPACE_PURGE_DELAY=soon MEMSPACE_SPACE_INITIAL=12X
         MEMSPACE_SPACE_EXPAND=-1 MEMSPACE_SPACE_AT=never MEMSPACE_SPACE_INHERIT=maybe MEMSPACE_SPILL_THRESHOLD=1Q
         MEMSPACE_HUGE_PAGES=3M MEMSPACE_HUGE_PAGES=4K MEMSPACE_HUGE_PAGES=yes MEMSPACE_SECURE=2
         MEMSPACE_SHOW_STATS=sometimes MEMSPACE_VERBOSE=loud)
for kv in "${invalid[@]}"; do
  name=${kv%%=*}
  err=$(env "$kv" "$tool" run -- true 2>&1 >/dev/null)
  n=$(grep -c "$name" <<<"$err")
  check "$kv reported once naming $name (got $n lines: $err)" '[ "$n" = 1 ]'
done
# the default is used: an invalid space size means no space, an invalid threshold no spill
out=$(MEMSPACE_SPACE_INITIAL=12X run "$probe" 100 2>/dev/null)
check "invalid MEMSPACE_SPACE_INITIAL: default (heap), got '$out'" '[[ "$out" == where=heap* ]]'
out=$(MEMSPACE_SPILL_THRESHOLD=1Q run "$probe" 2000000 2>/dev/null)
check "invalid MEMSPACE_SPILL_THRESHOLD: default (no spill), got '$out'" '[[ "$out" == where=heap* ]]'

# --- §3: routing: spill if the block reaches the threshold, else the space if one is set, else the heap ----------
out=$(run "$probe" 100)
check "no mode set: heap, got '$out'" '[[ "$out" == where=heap* ]]'
out=$(MEMSPACE_SPACE_INITIAL=8M run "$probe" 100)
check "MEMSPACE_SPACE_INITIAL: space, got '$out'" '[[ "$out" == where=space* ]]'
out=$(MEMSPACE_SPACE_INITIAL=8M MEMSPACE_SPILL_THRESHOLD=1M run "$probe" 1048576)
check "block at the threshold: spill before space, got '$out'" '[[ "$out" == where=spill* ]]'
out=$(MEMSPACE_SPACE_INITIAL=8M MEMSPACE_SPILL_THRESHOLD=1M run "$probe" 1048575)
check "block under the threshold: space, got '$out'" '[[ "$out" == where=space* ]]'
out=$(MEMSPACE_SPILL_THRESHOLD=1M run "$probe" 1048575)
check "block under the threshold, no space: heap, got '$out'" '[[ "$out" == where=heap* ]]'
# a fixed-size space (expand 0): malloc fails with ENOMEM when full
out=$(MEMSPACE_SPACE_INITIAL=4M MEMSPACE_SPACE_EXPAND=0 run "$probe" fill 65536)
check "fixed space fills up and fails with ENOMEM, got '$out'" '[[ "$out" == filled=*" errno=12" ]]'
bytes=${out#filled=}; bytes=${bytes%% *}
check "fixed space holds at most its size, got $bytes" '[ "$bytes" -le 4194304 ] && [ "$bytes" -gt 0 ]'
out=$(MEMSPACE_SPACE_INITIAL=4M MEMSPACE_SPACE_EXPAND=4M run "$probe" fill 65536)
bytes=${out#filled=}; bytes=${bytes%% *}
check "an expanding space grows beyond its initial size, got '$out'" '[ "$bytes" -gt 4194304 ]'
# spill directory: MEMSPACE_SPILL_DIR, else $TMPDIR, else /var/tmp
mkdir -p "$tmp/spill" "$tmp/tmpdir"
out=$(MEMSPACE_SPILL_THRESHOLD=1M MEMSPACE_SPILL_DIR="$tmp/spill" TMPDIR="$tmp/tmpdir" run "$probe" 2000000)
check "MEMSPACE_SPILL_DIR used, got '$out'" '[[ "$out" == "where=spill errno=0 dir=$tmp/spill" ]]'
out=$(env -u MEMSPACE_SPILL_DIR MEMSPACE_SPILL_THRESHOLD=1M TMPDIR="$tmp/tmpdir" "$tool" run -- "$probe" 2000000)
check "default spill directory \$TMPDIR, got '$out'" '[[ "$out" == "where=spill errno=0 dir=$tmp/tmpdir" ]]'
if [ -d /var/tmp ] && [ -w /var/tmp ]; then
  out=$(env -u MEMSPACE_SPILL_DIR -u TMPDIR MEMSPACE_SPILL_THRESHOLD=1M "$tool" run -- "$probe" 2000000 2>/dev/null)
  check "default spill directory /var/tmp without \$TMPDIR, got '$out'" \
    '[[ "$out" == "where=spill errno=0 dir=/var/tmp" || "$out" == where=heap* ]]'
fi

# MEMSPACE_SPACE_AT: start commits and locks the space before main; firstalloc takes nothing before the first
# allocation (the probe reads VmLck without allocating). A lock refused (RLIMIT_MEMLOCK without CAP_IPC_LOCK) is
# reported and the space runs unlocked: then only that report is checked.
out=$(MEMSPACE_SPACE_INITIAL=4M MEMSPACE_SPACE_AT=start run "$probe" locked 2>&1)
if [[ "$out" == *"runs unlocked"* ]]; then
  check "MEMSPACE_SPACE_AT=start, lock refused: reported naming the space, got '$out'" '[[ "$out" == *"process space: "* ]]'
else
  kb=${out##*locked_kb=}
  check "MEMSPACE_SPACE_AT=start: 4 MiB locked before main, got '$out'" '[ "$kb" -ge 4096 ] 2>/dev/null'
fi
out=$(MEMSPACE_SPACE_INITIAL=4M MEMSPACE_SPACE_AT=firstalloc run "$probe" locked 2>/dev/null)
check "MEMSPACE_SPACE_AT=firstalloc: nothing locked before the first allocation, got '$out'" '[ "$out" = locked_kb=0 ]'

# MEMSPACE_HUGE_PAGES: the heap takes no hugetlb page whatever it says (transparent huge pages at most); the process
# space does take them where the pool has them (2 free 2 MiB pages needed for the 4 MiB space: else not checked)
for hp in 2M 1G; do
  out=$(MEMSPACE_HUGE_PAGES=$hp run "$probe" hugetlb 2>&1)
  check "MEMSPACE_HUGE_PAGES=$hp: 48 MiB of heap blocks on no hugetlb page, got '$out'" '[ "$out" = hugetlb_kb=0 ]'
done
free2m=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null || echo 0)
if [ "$free2m" -ge 2 ]; then
  # the pool is shared with every process of the machine: pages taken meanwhile give a reported fallback, a skip
  err=$(MEMSPACE_VERBOSE=1 MEMSPACE_HUGE_PAGES=2M MEMSPACE_SPACE_INITIAL=4M run "$probe" hugetlb 2>&1 >/dev/null)
  out=$(MEMSPACE_HUGE_PAGES=2M MEMSPACE_SPACE_INITIAL=4M run "$probe" hugetlb 2>/dev/null)
  if [[ "$out" != hugetlb_kb=4096 && "$err" == *"unavailable"* ]]; then
    echo "not checked: 2 MiB pages for the process space: ${err%%$'\n'*}"
  else
    check "MEMSPACE_HUGE_PAGES=2M: the process space on 2 MiB hugetlb pages, got '$out'" '[ "$out" = hugetlb_kb=4096 ]'
  fi
else
  echo "not checked: $free2m free 2 MiB pages, the process space's check needs 2"
fi

# --- §3 / §2: space settings apply to the program only, unless inherited ------------------------------------------
out=$(MEMSPACE_SPACE_INITIAL=8M MEMSPACE_SPACE_EXPAND=1M MEMSPACE_SPACE_AT=firstalloc run sh -c 'env | grep -c "^MEMSPACE_SPACE_"')
check "space variables cleared for children, got $out" '[ "$out" = 0 ]'
out=$("$tool" run --space-initial 8M --space-expand 1M --space-at start -- sh -c 'env | grep -c "^MEMSPACE_SPACE_"')
check "memspace run: space options not inherited, got $out" '[ "$out" = 0 ]'
out=$("$tool" run --space-initial 8M --inherit -- sh -c 'env | grep "^MEMSPACE_SPACE_" | sort | tr "\n" " "')
check "--inherit keeps them, got '$out'" '[ "$out" = "MEMSPACE_SPACE_INHERIT=1 MEMSPACE_SPACE_INITIAL=8M " ]'
out=$(MEMSPACE_SPACE_INITIAL=8M MEMSPACE_SPACE_INHERIT=1 run sh -c 'sh -c "env | grep -c ^MEMSPACE_SPACE_INITIAL="')
check "MEMSPACE_SPACE_INHERIT=1 keeps them for grandchildren, got $out" '[ "$out" = 1 ]'
out=$(MEMSPACE_SPACE_INITIAL=8M MEMSPACE_SPACE_INHERIT=1 run sh -c "$probe 100")
check "an inheriting child is served by its own space, got '$out'" '[[ "$out" == where=space* ]]'

# --- §3: statistics at exit, verbose decisions ------------------------------------------------------------------
err=$(MEMSPACE_SHOW_STATS=1 run "$probe" 100 2>&1 >/dev/null)
check "MEMSPACE_SHOW_STATS=1 prints statistics to stderr" '[ -n "$err" ] && grep -qi "statistics\|heap" <<<"$err"'
err=$(MEMSPACE_SHOW_STATS=0 run "$probe" 100 2>&1 >/dev/null)
check "MEMSPACE_SHOW_STATS=0 prints nothing, got '$err'" '[ -z "$err" ]'
err=$(MEMSPACE_VERBOSE=1 MEMSPACE_SPILL_THRESHOLD=1M MEMSPACE_SPILL_DIR="$tmp/spill" run "$probe" 2000000 2>&1 >/dev/null)
check "MEMSPACE_VERBOSE=1 reports the spill file" 'grep -qi "spill" <<<"$err"'
# huge pages unavailable: a process space asking 1 GiB pages where the pool has none free is reported as a fallback
# under MEMSPACE_VERBOSE=1, and silently taken without it
free1g=$(cat /sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages 2>/dev/null || echo 0)
if [ "$free1g" = 0 ]; then
  err=$(MEMSPACE_VERBOSE=1 MEMSPACE_HUGE_PAGES=1G MEMSPACE_SPACE_INITIAL=4M run true 2>&1)
  check "MEMSPACE_VERBOSE=1 reports 1 GiB pages unavailable, got: $err" '[[ "$err" == *"1 GiB pages"*"unavailable"* ]]'
  # the space's line names the pages it got instead (2 MiB hugetlb pages when that pool has some, else transparent
  # huge pages, 2 MiB only where the kernel finds them, else base pages), never a bare page size
  check "...and the pages the space got instead, got: $err" \
    'grep -qE "space process: .*unavailable, using (transparent huge pages|2 MiB hugetlb pages|4 KiB base pages)" <<<"$err"'
  err=$(MEMSPACE_HUGE_PAGES=1G MEMSPACE_SPACE_INITIAL=4M run true 2>&1 | grep -v "runs unlocked")
  check "...and says nothing without it, got: $err" '[ -z "$err" ]'
fi

# --- §2: memspace run: every option of the synopsis, exit status the program's -----------------------------------
"$tool" run --heap size --space-initial 8M --space-expand 0 --space-at firstalloc --spill-threshold 1G \
  --spill-dir "$tmp/spill" --inherit --stats -- sh -c 'exit 42' 2>/dev/null
check "every option accepted, exit status passed through" '[ $? = 42 ]'
for preset in unlimited performance size none; do
  out=$("$tool" run --heap $preset -- "$probe" 100 2>&1)
  check "--heap $preset runs the program on memspace, got '$out'" '[[ "$out" == where=heap* ]]'
done
( "$tool" run -- sh -c 'kill -TERM $$' ) 2>/dev/null
check "a program killed by a signal is reported as such (exec)" '[ $? = 143 ]'

echo "$pass passed, $fail failed"
[ $fail = 0 ]
