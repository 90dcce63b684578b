#!/bin/sh
# huge_pool.sh reserve STATE N : makes at least N free 2 MiB hugetlb pages, saving how many it added in STATE
# huge_pool.sh restore STATE   : takes back exactly what reserve added (CTest cleanup fixture: runs even after
# failures). Adds and subtracts instead of writing absolute values, so other parts' reservations are kept.
# Never fails the fixture when the kernel refuses: the tests then skip with the reason.
nr=/proc/sys/vm/nr_hugepages
case "$1" in
reserve)
  old=$(cat $nr 2>/dev/null) || { echo "no $nr: kernel without hugetlb"; exit 0; }
  free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null || echo 0)
  if [ "$free" -lt "$3" ]; then
    echo $((old + $3 - free)) > $nr 2>/dev/null || echo "writing $nr refused (kept $old)"
  fi
  new=$(cat $nr)
  echo $((new > old ? new - old : 0)) > "$2"
  echo "nr_hugepages: $old -> $new, free $(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null)"
  ;;
restore)
  if [ -f "$2" ]; then
    added=$(cat "$2")
    cur=$(cat $nr)
    target=$((cur - added)); [ $target -lt 0 ] && target=0
    echo "$target" > $nr 2>/dev/null || echo "could not restore $nr to $target"
    rm -f "$2"
    echo "nr_hugepages: gave back $added, now $(cat $nr)"
  fi
  ;;
esac
exit 0
