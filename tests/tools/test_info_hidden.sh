#!/bin/sh
# memspace info where /proc or /sys is not mounted (a container or sandbox, here a mount namespace with an empty
# tmpfs over each): exit status 0, every line still printed, and what could not be
# read is "unknown", never a statement about the kernel ("not in this kernel", "kernel without THP", "no NUMA
# support") nor an empty kernel release; NUMA nodes with a gap in their numbers are all counted. Needs root for
# the mount namespace.
set -u
tool=$1
. "$(dirname "$0")/../common/ms_test.sh"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
if ! err=$(unshare -m --propagation private true 2>&1); then ms_skip_refused "unshare -m: $err"; fi
for tree in /proc /sys; do
  out=$(unshare -m --propagation private sh -c 'mount -t tmpfs none "$1" && exec "$2" info' sh "$tree" "$tool" 2>&1); st=$?
  echo "--- $tree hidden (status $st)"; echo "$out"
  [ $st = 0 ] || bad "memspace info with $tree hidden: status $st"
  for line in "base page" "transparent huge pages" "RLIMIT_MEMLOCK" "cgroup memory limit" "NUMA nodes" \
              "kernel.numa_balancing" "physical addresses readable"; do
    echo "$out" | grep -q "^  $line" || bad "$tree hidden: no '$line' line"
  done
  for lie in "not in this kernel" "kernel without" "no NUMA support" "(Linux ," "  ?"; do
    echo "$out" | grep -qF -- "$lie" && bad "$tree hidden: '$lie' printed, where the file was only unreadable"
  done
done
# NUMA node numbers with a gap (node1 offline or absent): both nodes counted, not the run before the gap
out=$(unshare -m --propagation private sh -c 'mount -t tmpfs none /sys/devices/system/node && mkdir /sys/devices/system/node/node0 \
      /sys/devices/system/node/node2 && echo 0,2 > /sys/devices/system/node/online && exec "$1" info' sh "$tool" 2>&1)
echo "$out" | grep "NUMA nodes"
echo "$out" | grep -q "NUMA nodes  *2 (online 0,2)" || bad "nodes 0 and 2: not counted as 2"
# /proc hidden: root's CAP_IPC_LOCK is still seen (capget needs no /proc)
if [ "$(id -u)" = 0 ]; then
  out=$(unshare -m --propagation private sh -c 'mount -t tmpfs none /proc && exec "$1" info' sh "$tool" 2>&1)
  echo "$out" | grep -q "RLIMIT_MEMLOCK.*CAP_IPC_LOCK" || bad "/proc hidden: root's CAP_IPC_LOCK not said"
fi
ms_finish $fail
