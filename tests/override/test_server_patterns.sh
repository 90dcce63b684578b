#!/usr/bin/env bash
# Patterns of long-running servers under the preloaded library (server_prog.c names each and the servers that
# use it): what nginx, postgres, redis and memcached do to their process once it runs (the process title over the
# environment, privileges dropped) must not change where memspace puts its files or make malloc fail.
set -u
. "$(dirname "$0")/../common/ms_test.sh"
lib=$1 prog=$2
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }
# a real filesystem (spill refuses tmpfs): the test's working directory in the build tree
dir=$(mktemp -d "$PWD/server_patterns.XXXXXX"); trap 'rm -rf "$dir"' EXIT
mkdir "$dir/spill" "$dir/decoy"

# title: the process title written over the environment strings; MEMSPACE_SPILL_DIR and MEMSPACE_STATS_FILE
# keep naming what they named at start-up (not the title's bytes, or the empty string, and $TMPDIR then)
out=$(cd "$dir" && env TMPDIR="$dir/decoy" LD_PRELOAD="$lib" MEMSPACE_SPILL_THRESHOLD=64K \
      MEMSPACE_SPILL_DIR="$dir/spill" MEMSPACE_SHOW_STATS=1 MEMSPACE_STATS_FILE="$dir/stats.%p" "$prog" title 2>&1); rc=$?
echo "$out"
check "title: the program ran" '[ $rc = 0 ] && echo "$out" | grep -q "^spill-file "'
check "title: the spill file is in MEMSPACE_SPILL_DIR" 'echo "$out" | grep -q "^spill-file $dir/spill/"'
check "title: no spill file elsewhere" '! echo "$out" | grep "^spill-file " | grep -qv "^spill-file $dir/spill/"'
check "title: statistics written to MEMSPACE_STATS_FILE" '[ "$(ls "$dir" | grep -c "^stats\.[0-9]*$")" = 1 ]'
check "title: statistics not on stderr" '! echo "$out" | grep -q "statistics of pid"'
check "title: nothing in the decoy \$TMPDIR" '[ -z "$(ls -A "$dir/decoy")" ]'

# drop: a locked process space in a daemon that gives up root (or lowers RLIMIT_MEMLOCK) once started; its
# expansions are refused the lock and go on unlocked, said once (not ENOMEM for every allocation past the initial
# size)
out=$(cd "$dir" && env LD_PRELOAD="$lib" MEMSPACE_SPACE_INITIAL=2M MEMSPACE_SPACE_EXPAND=1M MEMSPACE_SPACE_AT=start \
      "$prog" drop 2>&1); rc=$?
echo "$out"
if [ $rc = 77 ]; then
  ms_part_refused "drop: the process space was not locked at start ($(echo "$out" | grep -m1 "memspace: warning" || echo "VmLck 0"))"
else
  check "drop: the program ran" '[ $rc = 0 ]'
  check "drop: every allocation past the initial size served" 'echo "$out" | grep -q "^allocated 32 of 32$"'
  check "drop: what was locked at start stays locked" '! echo "$out" | grep -q "^lost-lock"'
  check "drop: the refused lock said once" '[ "$(echo "$out" | grep -c "grows unlocked from here on")" = 1 ]'
fi

echo "$pass passed, $fail failed"
ms_finish $fail
