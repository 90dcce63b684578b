#!/bin/sh
# run_size_range.sh TOOL: memspace run refuses (exit 2, naming the option) a size the library would ignore: a
# MEMSPACE_* size option takes at most LLONG_MAX bytes, and a tool passing 2^63..2^64-1 on would leave the program
# running with a warning and the default instead (no spilling, or a fixed-size space) after accepting it.
tool=$1
fail=0
for opt in --spill-threshold --space-expand; do
  for v in 9223372036854775808 18446744073709551615 8589934592G; do
    out=$("$tool" run --space-initial 16M "$opt" "$v" -- true 2>&1); rc=$?
    echo "$opt $v: status $rc: $out"
    [ $rc = 2 ] && case $out in *"memspace run: $opt: '$v' is too large"*) true ;; *) false ;; esac || fail=1
  done
done
out=$("$tool" run --spill-threshold 9223372036854775807 -- true 2>&1); rc=$?
echo "--spill-threshold LLONG_MAX: status $rc: $out"
[ $rc = 0 ] && [ -z "$out" ] || fail=1
exit $fail
