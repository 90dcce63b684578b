#!/bin/sh
# huge_pool.sh reserve STATE N : adds N free 2 MiB hugetlb pages to the pool, saving the old count in STATE
# huge_pool.sh restore STATE   : puts the saved count back (CTest cleanup fixture: runs even after failures)
# Never fails the fixture when the kernel refuses: the tests then skip with the reason.
nr=/proc/sys/vm/nr_hugepages
case "$1" in
reserve)
  old=$(cat $nr 2>/dev/null) || { echo "no $nr: kernel without hugetlb"; exit 0; }
  [ -f "$2" ] || echo "$old" > "$2"
  free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null || echo 0)
  if [ "$free" -lt "$3" ]; then
    echo $((old + $3 - free)) > $nr 2>/dev/null || echo "writing $nr refused (kept $old)"
  fi
  echo "nr_hugepages: $old -> $(cat $nr), free $(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null)"
  ;;
restore)
  if [ -f "$2" ]; then
    old=$(cat "$2")
    echo "$old" > $nr 2>/dev/null || echo "could not restore $nr to $old"
    rm -f "$2"
    echo "nr_hugepages restored to $(cat $nr)"
  fi
  ;;
esac
exit 0
