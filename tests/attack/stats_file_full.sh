#!/bin/sh
# MEMSPACE_STATS_FILE on a full file system: the failed write is said on stderr (the statistics there are
# incomplete), not lost without a word. A 16 KiB tmpfs filled by dd, in a private mount namespace.
lib=$1
# unshare's own refusal (no CAP_SYS_ADMIN, a chroot whose / is no mount point) is the kernel's, not the test's
why=$(unshare -m --propagation private true 2>&1) || { echo "MS_SKIP refused: a private mount namespace: $why"; exit 77; }
unshare -m --propagation private sh -c '
  d=$(mktemp -d) && mount -t tmpfs -o size=16k none "$d" || exit 77
  dd if=/dev/zero of="$d/fill" bs=4k count=64 2>/dev/null
  out=$(LD_PRELOAD='"$lib"' MEMSPACE_SHOW_STATS=1 MEMSPACE_STATS_FILE="$d/stats.%p" /bin/true 2>&1); rc=$?
  echo "status $rc: $out"
  umount "$d"; rmdir "$d"
  [ $rc -eq 0 ] || exit 1
  case $out in *"MEMSPACE_STATS_FILE: writing $d/stats."*" failed (ENOSPC: no space left on device)"*) exit 0;; esac
  exit 1'
rc=$?
[ $rc -eq 77 ] && echo "MS_SKIP refused: a private mount namespace with a tmpfs"
exit $rc
