#!/usr/bin/env bash
# The usage texts list every option `memspace run` takes, against the one option table in tools/run.c: memspace
# --help's synopsis, memspace run --help's list and docs/contract.md §2 name each row, name nothing else, and the
# parser accepts each (the top-level usage omitted --spill, --secure, --verbose and --purge-delay).
set -u
tool=$1 src=$2
. "$(dirname "$0")/../common/ms_test.sh"
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }

table=$(grep -oE '^ *\[RO_[A-Z_]+\] = \{"--[a-z-]+"' "$src/tools/run.c" | grep -oE -- '--[a-z-]+' | sort)
check "the option table is found" '[ $(echo "$table" | wc -l) -ge 10 ]'
table_nohelp=$(echo "$table" | grep -vx -- '--help')
top=$("$tool" --help | sed -n '/memspace run/,/PROGRAM ARGS/p' | grep -oE -- '--[a-z-]+' | sort -u)
check "memspace --help's run synopsis names every option and no other" '[ "$top" = "$table_nohelp" ]'
[ "$top" = "$table_nohelp" ] || diff <(echo "$table_nohelp") <(echo "$top")
run=$("$tool" run --help | grep -oE -- '^  --[a-z-]+' | sed 's/^  //' | sort -u)
check "memspace run --help lists every option and no other" '[ "$run" = "$table" ]'
[ "$run" = "$table" ] || diff <(echo "$table") <(echo "$run")
doc=$(sed -n '/^## §2/,/^## §3/p' "$src/docs/contract.md" | sed -n '/`memspace run \[/,/PROGRAM ARGS/p' | grep -oE -- '--[a-z-]+' | sort -u)
check "docs/contract.md §2's run synopsis names every option and no other" '[ "$doc" = "$table_nohelp" ]'
[ "$doc" = "$table_nohelp" ] || diff <(echo "$table_nohelp") <(echo "$doc")
for o in $table; do
  case $o in
    --heap) args=(--heap size) ;; --purge-delay) args=(--purge-delay 100) ;; --space-at) args=(--space-at start) ;;
    --space-initial|--space-expand|--spill-threshold) args=("$o" 1M) ;; --spill-dir) args=(--spill-dir /tmp) ;;
    *) args=("$o") ;;
  esac
  err=$("$tool" run "${args[@]}" -- true 2>&1 >/dev/null)
  check "the parser accepts $o" '[[ "$err" != *"unknown option"* ]]'
done
err=$("$tool" run --no-such-option -- true 2>&1); st=$?
check "an option not in the table is refused" '[ $st = 2 ] && [[ "$err" == *"unknown option"* ]]'
# -h and --help of every command: the usage on standard output and status 0, as `memspace --help` gives it
for cmd in "" info run bench version; do
  for h in -h --help; do
    # shellcheck disable=SC2086 # (an empty command: none)
    out=$("$tool" $cmd $h 2>/dev/null); st=$?
    check "memspace $cmd $h: usage on stdout, status 0" '[ $st = 0 ] && [[ "$out" == *usage:* ]]'
  done
done
# "--" ends the options and is never an option's value: the value is said to be missing, status 2
for o in --space-initial --space-expand --spill-threshold --spill-dir --heap --purge-delay --space-at; do
  err=$("$tool" run "$o" -- true 2>&1 >/dev/null); st=$?
  ok=0
  case $err in *"'--'"*|*"cannot spill to --"*) ;; *"$o"*) ok=1 ;; esac
  check "memspace run $o -- true: status 2, the value missing ($err)" '[ $st = 2 ] && [ $ok = 1 ]'
done
# nor is another of run's options: "--spill-dir --stats" lacks a directory even where one named --stats exists
wd=$(mktemp -d); mkdir -p -- "$wd/--stats"
for v in --stats --verbose --heap=size -h; do
  err=$(cd "$wd" && "$tool" run --spill-dir "$v" -- true 2>&1 >/dev/null); st=$?
  check "memspace run --spill-dir $v -- true: status 2, the directory missing ($err)" \
    '[ $st = 2 ] && [[ "$err" == *"--spill-dir needs a directory"* ]]'
done
rm -rf "$wd"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
