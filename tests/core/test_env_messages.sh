#!/usr/bin/env bash
# The library's messages about the environment (docs/options.md): an invalid value names the default by its name
# and is reported once in a process tree; a misspelled MEMSPACE_* variable is reported with the option it resembles,
# once; MEMSPACE_VERBOSE=1 prints one line at start with the version and the options in force.
set -u
lib=$1
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }
tree='sh -c "sh -c true; sh -c true; env"'

msg=$(MEMSPACE_CACHE=garbage LD_PRELOAD=$lib sh -c "$tree" 2>&1)
check "invalid value: the default named" '[[ "$msg" == *"invalid value '"'"'garbage'"'"' for MEMSPACE_CACHE"*"using the default performance"* ]]'
check "invalid value: an enum's choices listed readably" '[[ "$msg" == *"(heap cache preset: unlimited, performance, size, none)"* ]]'
check "invalid value: reported once in the tree" '[ "$(echo "$msg" | grep -c "invalid value")" = 1 ]'
check "invalid value: not passed on" '! echo "$msg" | grep -q "^MEMSPACE_CACHE="'
# a size, a boolean or a number: the message says what the variable takes
msg=$(MEMSPACE_SPACE_INITIAL=4X LD_PRELOAD=$lib /bin/true 2>&1)
check "invalid size: what a size is said ($msg)" '[[ "$msg" == *"MEMSPACE_SPACE_INITIAL"*"takes bytes or a number with K, M, G or T)"* ]]'
msg=$(MEMSPACE_SPILL_THRESHOLD=-5 LD_PRELOAD=$lib /bin/true 2>&1)
check "invalid spill threshold: auto named ($msg)" '[[ "$msg" == *"K, M, G or T, or auto)"* ]]'
msg=$(MEMSPACE_SHOW_STATS=maybe LD_PRELOAD=$lib /bin/true 2>&1)
check "invalid boolean: its words listed ($msg)" '[[ "$msg" == *"takes 1/0, true/false, yes/no, on/off)"* ]]'
msg=$(MEMSPACE_PURGE_DELAY=-2 LD_PRELOAD=$lib /bin/true 2>&1)
check "invalid number: its range said ($msg)" '[[ "$msg" == *"takes -1 to 86400000)"* ]]'
msg=$(MEMSPACE_SHOWSTATS=1 LD_PRELOAD=$lib sh -c "$tree" 2>&1)
check "misspelling: did you mean" '[[ "$msg" == *"unknown variable MEMSPACE_SHOWSTATS"*"did you mean MEMSPACE_SHOW_STATS"* ]]'
check "misspelling: reported once in the tree" '[ "$(echo "$msg" | grep -c "unknown variable")" = 1 ]'
msg=$(MEMSPACE_show_stats=1 LD_PRELOAD=$lib /bin/true 2>&1)
check "a name in the wrong case: did you mean" '[[ "$msg" == *"unknown variable MEMSPACE_show_stats"*"did you mean MEMSPACE_SHOW_STATS"* ]]'
msg=$(MEMSPACE_CHECK_ALL=1 MEMSPACE_SHOW_STATS=0 LD_PRELOAD=$lib /bin/true 2>&1)
check "the scripts' own variables and valid options: nothing said" '[ -z "$msg" ]'
msg=$(MEMSPACE_VERBOSE=1 MEMSPACE_CACHE=size LD_PRELOAD=$lib /bin/true 2>&1)
check "MEMSPACE_VERBOSE: version, program, options" '[[ "$msg" == *"memspace: "*" active in true (pid "*"CACHE=size"*"VERBOSE=1"* ]]'
long="MEMSPACE_$(printf 'X%.0s' $(seq 200))"
msg=$(env "$long=1" LD_PRELOAD=$lib timeout 20 /bin/true 2>&1); st=$?
check "an unknown name too long to copy is reported, the program runs" '[ $st = 0 ] && [[ "$msg" == *"unknown variable MEMSPACE_XXX"* ]]'
echo "$pass passed, $fail failed"
[ $fail = 0 ]
