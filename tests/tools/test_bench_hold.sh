#!/bin/sh
# memspace bench holds the guest's free page reporting while it runs and puts the values back when it ends, also
# when it is killed by SIGTERM (a fixture directory stands for /sys/module/page_reporting/parameters).
tool=$1
dir=$(mktemp -d /tmp/memspace-bench-hold.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/params"
echo 0 > "$dir/params/min_free_ms"
echo 1024 > "$dir/params/max_waiting_mib"
MSB_PAGE_REPORTING_DIR=$dir/params "$tool" bench spaces --quick --out "$dir/out" > "$dir/log" 2>&1 &
pid=$!
i=0
while [ "$(cat "$dir/params/min_free_ms")" != 300000 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
fail=0
[ "$(cat "$dir/params/min_free_ms")" = 300000 ] || { echo "FAIL: min_free_ms not held: $(cat "$dir/params/min_free_ms")"; fail=1; }
[ "$(cat "$dir/params/max_waiting_mib")" = 65536 ] || { echo "FAIL: max_waiting_mib not held"; fail=1; }
kill -TERM $pid
wait $pid
st=$?
[ $st -eq 143 ] || { echo "FAIL: bench exited $st after SIGTERM (want 143)"; cat "$dir/log"; fail=1; }
[ "$(cat "$dir/params/min_free_ms")" = 0 ] || { echo "FAIL: min_free_ms left at $(cat "$dir/params/min_free_ms")"; fail=1; }
[ "$(cat "$dir/params/max_waiting_mib")" = 1024 ] || { echo "FAIL: max_waiting_mib left at $(cat "$dir/params/max_waiting_mib")"; fail=1; }
grep -q "held while the bench runs: min_free_ms=300000 (was 0) max_waiting_mib=65536 (was 1024)" "$dir/log" ||
  { echo "FAIL: the hold is not reported"; cat "$dir/log"; fail=1; }
# an output directory it cannot write is refused before anything is held: the settings are never written
touch -d '2001-01-01' "$dir/params/min_free_ms"
before=$(stat -c %y "$dir/params/min_free_ms")
MSB_PAGE_REPORTING_DIR=$dir/params "$tool" bench spaces --quick --out /proc/self/no-such-dir > "$dir/log" 2>&1
st=$?
[ $st -eq 1 ] || { echo "FAIL: bench with an unwritable --out exited $st (want 1)"; cat "$dir/log"; fail=1; }
grep -q "cannot write to /proc/self/no-such-dir" "$dir/log" || { echo "FAIL: no message naming the directory"; cat "$dir/log"; fail=1; }
[ "$(stat -c %y "$dir/params/min_free_ms")" = "$before" ] || { echo "FAIL: min_free_ms written by a refused bench"; fail=1; }
exit $fail
