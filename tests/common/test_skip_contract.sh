#!/bin/sh
# The skip contract (ms_test.h, ms_test.sh): a skipped case exits 77 (CTest: Skipped), never 0; a missing piece
# of the environment is a failure under CI=true, a refusal by the kernel is not; a failure exits 1.
# usage: test_skip_contract.sh SKIP_PROBE
probe=$1
. "$(dirname "$0")/ms_test.sh"
fail=0
expect() { # EXIT-STATUS PATTERN ENV...
  want=$1 pattern=$2; shift 2
  out=$(env -u CI "$@" "$probe" 2>&1); st=$?
  if [ $st != "$want" ] || ! echo "$out" | grep -q -- "$pattern"; then
    echo "FAIL: $*: exit $st (want $want), output:"; echo "$out" | sed 's/^/    /'; fail=1
  else
    echo "ok   $*: exit $st"
  fi
}
expect 0 "PASSED  \] 2" MS_PROBE_UNSET=1
expect 77 "MS_SKIP refused: mlock of 4 pages: Operation not permitted" MS_PROBE=refused
expect 77 "MS_SKIP refused" MS_PROBE=refused CI=true
expect 77 "MS_SKIP missing: python3-numpy" MS_PROBE=missing
expect 1 "CI=true: a failure" MS_PROBE=missing CI=true
expect 77 "MS_SKIP unclassified" MS_PROBE=plain
expect 1 "FAILED" MS_PROBE=fail
# the shell side
for ci in "" true; do
  for kind in refused missing; do
    st=$(CI=$ci sh -c ". '$(dirname "$0")/ms_test.sh'; ms_skip_$kind reason" >/dev/null; echo $?)
    want=77; [ "$kind.$ci" = missing.true ] && want=1
    [ "$st" = $want ] && echo "ok   sh ms_skip_$kind CI=$ci: exit $st" || { echo "FAIL: sh ms_skip_$kind CI=$ci: exit $st, want $want"; fail=1; }
  done
  st=$(CI=$ci sh -c ". '$(dirname "$0")/ms_test.sh'; ms_need_cmd no-such-tool-here || true; ms_finish 0" >/dev/null; echo $?)
  want=77; [ "$ci" = true ] && want=1
  [ "$st" = $want ] && echo "ok   sh ms_need_cmd CI=$ci: exit $st" || { echo "FAIL: sh ms_need_cmd (missing) CI=$ci: exit $st, want $want"; fail=1; }
done
exit $fail
