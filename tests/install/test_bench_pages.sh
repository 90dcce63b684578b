#!/bin/sh
# memspace bench pages --quick: finishes, writes pages.csv (docs/contract.md §2 header, metrics with units, the
# published Windows figures apart) and pages.cmd, and leaves nr_hugepages as it found it, and the free page
# reporting values it holds while it runs (a fixture directory stands for /sys/module/page_reporting/parameters).
tool=$1
out=$(mktemp -d /tmp/memspace-bench-pages.XXXXXX)
trap 'rm -rf "$out"' EXIT
before=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null)
mkdir "$out/params" && echo 7 > "$out/params/min_free_ms" && echo 9 > "$out/params/max_waiting_mib"
MSB_PAGE_REPORTING_DIR=$out/params "$tool" bench pages --quick --out "$out" || { echo "FAIL: bench exited $?"; exit 1; }
after=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null)
fail=0
# other jobs on the machine may change the pool meanwhile: a difference is reported, not failed
[ "$before" = "$after" ] || echo "note: nr_hugepages $before -> $after (changed by the bench or by another job)"
csv=$out/pages.csv
[ "$(head -1 "$csv")" = "part,case,impl,threads,size_bytes,metric,value" ] || { echo "FAIL: CSV header"; fail=1; }
for want in "memset/mmap_munmap,linux" "touch64k/madv_free,linux" "memset/memset_alone,linux" \
            "memset/mmap_munmap,gerstmann-published" "frame/keep_idle,memspace" "frame/keep,memspace"; do
  grep -q "^pages,$want," "$csv" || { echo "FAIL: no rows for $want"; fail=1; }
done
# impl is [a-z0-9-]+; every metric ends in a unit or is a count, and its value is a number; status rows say why not
bad=$(awk -F, 'NR > 1 && ($3 !~ /^[a-z0-9-]+$/ || ($6 == "status" ? $7 !~ /^(skipped|not_installed)$/ : ($6 !~ /(_ns|_s|_bytes|^page_faults)$/ || $7 !~ /^-?[0-9.e+-]+$/)))' "$csv" | head -3)
[ -z "$bad" ] || { echo "FAIL: bad rows: $bad"; fail=1; }
[ "$(cat "$out/params/min_free_ms") $(cat "$out/params/max_waiting_mib")" = "7 9" ] ||
  { echo "FAIL: free page reporting not restored: $(cat "$out/params/min_free_ms") $(cat "$out/params/max_waiting_mib")"; fail=1; }
grep -q "^host: free page reporting min_free_ms=300000 (was 7) max_waiting_mib=65536 (was 9)$" "$out/pages.cmd" ||
  { echo "FAIL: pages.cmd has no host line for the hold"; fail=1; }
grep -q "^machine:" "$out/pages.cmd" || { echo "FAIL: pages.cmd without machine line"; fail=1; }
exit $fail
