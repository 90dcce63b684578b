#!/bin/sh
# memspace info where /proc or /sys is not mounted (a container or sandbox, here a mount namespace with an empty
# tmpfs over each) and as a user without privileges: exit status 0, every line still printed, and what could not be
# read is "unknown", never a statement about the kernel ("not in this kernel", "kernel without THP", "no NUMA
# support") nor an empty kernel release. Needs root for the mount namespace; the unprivileged run needs `nobody`.
set -u
tool=$1
. "$(dirname "$0")/../common/ms_test.sh"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
if ! err=$(unshare -m true 2>&1); then ms_skip_refused "unshare -m: $err"; fi
for tree in /proc /sys; do
  out=$(unshare -m sh -c 'mount -t tmpfs none "$1" && exec "$2" info' sh "$tree" "$tool" 2>&1); st=$?
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
# /proc hidden: root's CAP_IPC_LOCK is still seen (capget needs no /proc)
if [ "$(id -u)" = 0 ]; then
  out=$(unshare -m sh -c 'mount -t tmpfs none /proc && exec "$1" info' sh "$tool" 2>&1)
  echo "$out" | grep -q "RLIMIT_MEMLOCK.*CAP_IPC_LOCK" || bad "/proc hidden: root's CAP_IPC_LOCK not said"
fi
ms_finish $fail
