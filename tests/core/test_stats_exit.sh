#!/usr/bin/env bash
# Statistics at exit (docs/stats.md "At exit"): one block per process, headed by its pid and program, never
# interleaved with another process's block; MEMSPACE_STATS_FILE (%p or .PID), MEMSPACE_STATS_FORMAT=json; the
# heap's mremap probes counted as probes, not failures.
# test_stats_exit.sh LIB [OVERRIDE]: OVERRIDE 0 is a library without the override layer (MEMSPACE_OVERRIDE=OFF,
# every sanitizer build): preloaded, it prints its statistics but serves no malloc, so the checks of a Python heap's
# blocks and probes are left out (the test is reported as skipped).
set -u
lib=$1 override=${2:-1}
. "$(dirname "$0")/../common/ms_test.sh"
py=/usr/bin/python3
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
run() { LD_PRELOAD=$lib MEMSPACE_SHOW_STATS=1 "$@"; }

# three bash processes (bash leaves through exit(); dash's _exit runs no exit handlers): three labelled blocks
msg=$(run bash -c 'bash -c true; bash -c true; true' 2>&1)
check "three blocks" '[ "$(echo "$msg" | grep -c "^memspace .* statistics of pid [0-9]* (bash)$")" = 3 ]'
check "three distinct pids" '[ "$(echo "$msg" | sed -n "s/.* of pid \([0-9]*\) .*/\1/p" | sort -u | wc -l)" = 3 ]'
seq=$(echo "$msg" | grep -E "^(memspace|\[)" | sed "s/^memspace.*/H/" | tr "\n" " ")
check "each block whole: header, [process], [malloc], [heap], [pages] in turn" \
  '[ "$seq" = "H [process] [malloc] [heap] [pages] H [process] [malloc] [heap] [pages] H [process] [malloc] [heap] [pages] " ]'
check "parts never used print no section" '! echo "$msg" | grep -qE "^\[(spaces|spill|dma|frames)\]"'

# many processes at once on one pipe, blocks past PIPE_BUF (JSON of a Python heap): each block parses whole
if [ "$override" != 1 ]; then
  ms_part_refused "concurrent JSON blocks of a Python heap, mremap probes: this library has no override layer (a sanitizer build), so Python's heap is the C library's"
elif [ -x $py ]; then
  out=$(for i in 1 2 3 4 5 6; do run env MEMSPACE_STATS_FORMAT=json $py -c "x=[str(i)*i for i in range(2000)]" & done 2>&1; wait)
  check "concurrent JSON blocks, none interleaved" "echo \"\$out\" | $py -c '
import json, sys
t = sys.stdin.read(); d = json.JSONDecoder(); i = 0; n = 0; big = 0
while True:
    while i < len(t) and t[i].isspace(): i += 1
    if i == len(t): break
    o, j = d.raw_decode(t, i); big += j - i > 4096; i = j; n += 1
    assert o[\"pid\"] > 0 and o[\"program\"] and o[\"version\"] and isinstance(o[\"pages\"][\"syscalls\"], int)
assert n == 6 and big == 6, (n, big)'"
  # the heap's mremap probes (a growing Python list) are not failures
  msg=$(run $py -c "l=[]
for i in range(3000000): l.append(i)" 2>&1)
  check "probes counted" '[ "$(echo "$msg" | awk "/syscall_probes/ {print \$2}")" -gt 0 ]'
  check "probes are not failures" '[ "$(echo "$msg" | awk "/syscall_failures/ {print \$2}")" = 0 ]'
else
  echo "python3 missing: concurrent JSON and probe checks skipped"
fi

# MEMSPACE_STATS_FILE: one file per process, %p replaced by the pid, nothing on stderr
msg=$(run env MEMSPACE_STATS_FILE="$dir/st.%p.txt" bash -c 'bash -c true; true' 2>&1)
check "stats file: stderr clean" '[ -z "$msg" ]'
check "stats file: one per process" '[ "$(ls "$dir" | grep -c "^st\.[0-9]*\.txt$")" = 2 ]'
ok=1; for f in "$dir"/st.*.txt; do p=${f##*/st.}; p=${p%.txt}; head -1 "$f" | grep -q "of pid $p (bash)$" || ok=0; done
check "stats file: named by its own pid" '[ $ok = 1 ]'
run env MEMSPACE_STATS_FILE="$dir/plain" MEMSPACE_STATS_FORMAT=json bash -c 'true' 2>/dev/null
f=$(ls "$dir"/plain.* 2>/dev/null | head -1)
check "stats file without %p: .PID appended" '[ -n "$f" ] && [[ "$f" =~ /plain\.[0-9]+$ ]]'
check "stats file, json: valid, pid of the name" '[ -n "$f" ] && [ ! -x $py ] || $py -c "import json,sys; d=json.load(open(sys.argv[1])); assert d[\"pid\"]==int(sys.argv[1].rsplit(\".\",1)[1])" "$f"'
# a relative path names a file in the directory the process started in, not the one it exits from
mkdir "$dir/start" "$dir/start/sub"
(cd "$dir/start" && run env MEMSPACE_STATS_FILE=rel.%p bash -c 'cd sub; true' 2>/dev/null)
check "relative stats file: written in the start directory, not the one the program moved to" \
  '[ "$(ls "$dir/start" | grep -c "^rel\.")" = 1 ] && [ -z "$(ls "$dir/start/sub")" ]'
msg=$(run env MEMSPACE_STATS_FILE="$dir/missing/st" bash -c 'true' 2>&1)
check "stats file unopenable: reported, block on stderr" '[[ "$msg" == *"MEMSPACE_STATS_FILE: cannot open"* ]] && [[ "$msg" == *"statistics of pid"* ]]'

echo "$pass passed, $fail failed"
ms_finish $fail
