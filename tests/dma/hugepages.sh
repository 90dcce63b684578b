#!/bin/sh
# CTest fixture for the DMA tests: `hugepages.sh setup STATE` adds 64 x 2 MiB pages (and one 1 GiB page when the
# kernel finds one within 20 s) to the hugetlb pools; `hugepages.sh cleanup STATE` takes back what setup added.
# Adds and subtracts instead of writing absolute values, so other parts' reservations are kept. Never fails:
# when the kernel refuses, it prints the reason and the tests skip what needs huge pages.
mode=$1
state=${2:-/tmp/memspace-dma-hugepages.state}
p2=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
p1=/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages

add() { # file count timeout -> prints pages obtained
  file=$1; want=$2; limit=$3
  [ -w "$file" ] || { echo "dma fixture: cannot write $file (not root, or no such page size)" >&2; echo 0; return; }
  old=$(cat "$file")
  if ! err=$(timeout "$limit" sh -c "echo $((old + want)) > $file" 2>&1); then
    echo "dma fixture: writing $file refused: ${err:-timed out}" >&2
  fi
  new=$(cat "$file")
  echo $((new > old ? new - old : 0))
}

sub() { # file count
  file=$1; n=$2
  [ "$n" -gt 0 ] 2>/dev/null || return 0
  cur=$(cat "$file")
  target=$((cur - n)); [ $target -lt 0 ] && target=0
  echo $target > "$file" || echo "dma fixture: could not restore $file to $target" >&2
}

case "$mode" in
  setup)
    got2=$(add $p2 64 60)
    got1=0
    [ -e $p1 ] && got1=$(add $p1 1 20)
    echo "$got2 $got1" > "$state"
    echo "dma fixture: added $got2 x 2 MiB and $got1 x 1 GiB huge pages"
    ;;
  cleanup)
    [ -r "$state" ] || exit 0
    read got2 got1 < "$state"
    sub $p2 "$got2"
    [ -e $p1 ] && sub $p1 "$got1"
    rm -f "$state"
    echo "dma fixture: gave back $got2 x 2 MiB and $got1 x 1 GiB huge pages"
    ;;
  *) echo "usage: $0 setup|cleanup STATE" >&2; exit 2 ;;
esac
exit 0
