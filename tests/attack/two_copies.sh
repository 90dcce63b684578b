#!/usr/bin/env bash
# A program linked with libmemspace.a and run with libmemspace.so preloaded (LD_PRELOAD, or `memspace run`): the
# program's own copy serves malloc, the preloaded one stays inert. One copy reads the MEMSPACE_* variables and
# prints the statistics at exit, once (two live copies would both print them, and the preloaded copy, constructed
# first, would create the process space nobody uses and clear MEMSPACE_SPACE_* before the program's copy reads them).
# Usage: two_copies.sh MEMSPACE_TOOL LIBMEMSPACE_SO PROG (two_copies_prog) NOPIE_PROG (malloc_address_prog)
#        DLOPEN_HOST (dlopen_host)
set -u
tool=$1 so=$2 prog=$3 nopie=$4 host=$5
fail=0
check() { if eval "$2"; then :; else echo "FAIL: $1"; fail=1; fi; }
count() { printf '%s\n' "$1" | grep -c -- "$2"; }

out=$(MEMSPACE_SHOW_STATS=1 LD_PRELOAD=$so "$prog" 2>&1); echo "$out"
check "statistics printed once under LD_PRELOAD" '[ "$(count "$out" "statistics of pid")" = 1 ]'
check "the program's copy read MEMSPACE_SHOW_STATS" '[[ "$out" == *"show_stats=1"* ]]'

out=$("$tool" run --stats -- "$prog" 2>&1); echo "$out"
check "statistics printed once under memspace run --stats" '[ "$(count "$out" "statistics of pid")" = 1 ]'

out=$(MEMSPACE_VERBOSE=1 "$tool" run --space-initial 64M --space-at firstalloc -- "$prog" 2>&1); echo "$out"
check "the program's copy read MEMSPACE_SPACE_INITIAL" '[[ "$out" == *"space_initial=67108864"* ]]'
check "one process space" '[ "$(count "$out" "process space:")" = 1 ]'
check "one copy active" '[ "$(count "$out" " active in ")" = 1 ]'
check "the inert copy says so, naming the program" \
  '[[ "$out" == *"malloc is served by $prog, not by this copy of memspace"*"stays inert"* ]]'

# invalid value: reported once (by the copy serving malloc)
out=$(MEMSPACE_CACHE=bogus LD_PRELOAD=$so "$prog" 2>&1); echo "$out"
check "an invalid value reported once" '[ "$(count "$out" "invalid value .bogus. for MEMSPACE_CACHE")" = 1 ]'

# the preloaded library alone still serves a dynamically linked program and prints its statistics
out=$(MEMSPACE_SHOW_STATS=1 LD_PRELOAD=$so ls / 2>&1 >/dev/null)
check "a program without a copy of its own: statistics printed" '[ "$(count "$out" "statistics of pid")" = 1 ]'
check "... with the malloc calls counted" '[[ "$out" == *"[malloc]"* ]]'

# a program without PIE that takes malloc's address binds it to its own PLT entry (python3 does): memspace serves it
out=$(MEMSPACE_SHOW_STATS=1 MEMSPACE_VERBOSE=1 LD_PRELOAD=$so "$nopie" 2>&1); echo "$out"
check "malloc's address taken without PIE: memspace active" '[ "$(count "$out" " active in ")" = 1 ]'
check "... not inert" '[[ "$out" != *"stays inert"* ]]'
check "... its statistics printed, the malloc calls counted" \
  '[ "$(count "$out" "statistics of pid")" = 1 ] && [[ "$out" == *"[malloc]"* ]]'

# libmemspace.so loaded with dlopen (ctypes): the C library serves malloc, and that copy reads its options
out=$(MEMSPACE_SHOW_STATS=1 MEMSPACE_VERBOSE=1 "$host" "$so" 2>&1); echo "$out"
check "dlopen: allocated" '[[ "$out" == *allocated* ]]'
check "dlopen: not inert" '[[ "$out" != *"stays inert"* ]]'
check "dlopen: its statistics printed" '[ "$(count "$out" "statistics of pid")" = 1 ]'
exit $fail
