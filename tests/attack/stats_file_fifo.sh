#!/bin/sh
# MEMSPACE_STATS_FILE naming a FIFO nobody reads: the program exits (open is refused, the statistics go to
# stderr with the reason), it does not wait forever in open at exit. The name is the pattern with ".PID"
# appended, so the shell makes the FIFO under its own pid and execs the program in its place; timeout ends a
# hang with status 124.
lib=$1
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
out=$(timeout 20 sh -c 'mkfifo "$1/stats.$$" || exit 77
  exec env LD_PRELOAD="$2" MEMSPACE_SHOW_STATS=1 MEMSPACE_STATS_FILE="$1/stats" /bin/true' sh "$d" "$lib" 2>&1); rc=$?
echo "status $rc: $(printf '%s' "$out" | head -3)"
[ $rc -eq 77 ] && { echo "MS_SKIP refused: mkfifo"; exit 77; }
[ $rc -eq 0 ] || exit 1
# the reason by its name (ENXIO: opening a FIFO without a reader for writing, without blocking)
case $out in
  *"MEMSPACE_STATS_FILE: cannot open $d/stats."*"(ENXIO: no such device or address): statistics on stderr"*) exit 0;;
esac
exit 1
