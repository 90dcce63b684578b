#!/bin/sh
# memspace info prints every item of docs/contract.md §2 and exits 0.
tool=$1
out=$("$tool" info) || { echo "memspace info failed"; exit 1; }
echo "$out"
fail=0
for want in "base page" "transparent huge pages" "hugetlb" "NUMA nodes" "RLIMIT_MEMLOCK" "overcommit" "swap" \
            "cgroup memory limit" "physical addresses readable" "vm.compact_unevictable_allowed" \
            "kernel.numa_balancing" "kernel.sched_rt_runtime_us" "glibc" "jemalloc" "mimalloc" "tcmalloc" "tbbmalloc"; do
  echo "$out" | grep -q "$want" || { echo "FAIL: no line for '$want'"; fail=1; }
done
# a size without pages reserved names its own sysfs file; /proc/sys/vm/nr_hugepages only for the default size
# (meminfo's Hugepagesize), the one size it reserves
deflt=$(awk '/^Hugepagesize:/ {print $2}' /proc/meminfo)
for dir in /sys/kernel/mm/hugepages/hugepages-*kB; do
  [ -d "$dir" ] || continue
  kb=${dir##*hugepages-}; kb=${kb%kB}
  [ "$(cat "$dir/nr_hugepages")" = 0 ] || continue
  case $kb in 1048576) label="hugetlb 1 GiB pages" ;; 2048) label="hugetlb 2 MiB pages" ;; *) continue ;; esac
  line=$(echo "$out" | grep "^  $label")
  echo "$line" | grep -qF "$dir/nr_hugepages" || { echo "FAIL: '$label' does not name $dir/nr_hugepages"; fail=1; }
  if [ "$kb" != "$deflt" ] && echo "$line" | grep -qF /proc/sys/vm/nr_hugepages; then
    echo "FAIL: '$label' names /proc/sys/vm/nr_hugepages, which reserves ${deflt} kB pages only"; fail=1
  fi
done
# a setting's control bytes are shown escaped, never sent to the terminal raw
out=$(MEMSPACE_SPILL_DIR="$(printf '/tmp/\033[2Jx')" "$tool" info)
case $out in *"$(printf '\033')"*) echo "FAIL: an escape byte of MEMSPACE_SPILL_DIR printed raw"; fail=1 ;; esac
echo "$out" | grep -qF '/tmp/\x1b[2Jx' || { echo "FAIL: MEMSPACE_SPILL_DIR not shown escaped"; fail=1; }
# a value with spaces at an end, or of nothing but spaces, is shown in quotes, not as a blank
out=$(MEMSPACE_SPILL_DIR="   " MEMSPACE_PURGE_DELAY=" 5 " "$tool" info)
echo "$out" | grep -q "MEMSPACE_SPILL_DIR  *'   '  (invalid" || { echo "FAIL: a MEMSPACE_SPILL_DIR of spaces not shown quoted"; fail=1; }
echo "$out" | grep -q "MEMSPACE_PURGE_DELAY  *' 5 '$" || { echo "FAIL: MEMSPACE_PURGE_DELAY=' 5 ' not shown quoted"; fail=1; }
# a MEMSPACE_* variable that names no option is listed as such, with the option it resembles; the scripts' own
# variables (MEMSPACE_RUN_PID...) are not
out=$(MEMSPACE_SHOWSTATS=1 MEMSPACE_RUN_PID=1 "$tool" info)
echo "$out" | grep -q "MEMSPACE_SHOWSTATS .*unknown: not an option, ignored; did you mean MEMSPACE_SHOW_STATS?" ||
  { echo "FAIL: the misspelt MEMSPACE_SHOWSTATS not pointed out"; fail=1; }
echo "$out" | grep -q "MEMSPACE_RUN_PID" && { echo "FAIL: MEMSPACE_RUN_PID listed as a setting"; fail=1; }
echo "$out" | grep -q "(none set)" && { echo "FAIL: '(none set)' beside an unknown variable"; fail=1; }
# a long value (a path near PATH_MAX) is shown whole, escaped, with its end
long=/tmp/$(printf '%03000d' 0)$(printf '\001')end
out=$(MEMSPACE_SPILL_DIR="$long" "$tool" info)
echo "$out" | grep -q '0\\x01end' || { echo "FAIL: a 3000-byte MEMSPACE_SPILL_DIR not shown to its end"; fail=1; }
"$tool" info extra >/dev/null 2>&1 && { echo "FAIL: extra argument accepted"; fail=1; }
exit $fail
