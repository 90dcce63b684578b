#!/bin/sh
# as_nobody.sh PROG LIB SCRIPT: runs `sh -c SCRIPT` with $prog and $lib set to PROG and LIB, as user nobody
# without capabilities when run as root (else as the caller). A build directory nobody cannot reach (a clone
# under /root, mode 700) is no reason to skip: PROG and LIB are then copied into a directory nobody can read.
# Exits 77 with the skip contract's line (tests/common/ms_test.sh) when the drop cannot be made.
prog=$1 lib=$2 script=$3
if [ "$(id -u)" != 0 ]; then
  export prog lib
  exec sh -c "$script"
fi
command -v setpriv >/dev/null || { echo "MS_SKIP missing: setpriv (Debian package util-linux) to drop root"; exit 77; }
drop="setpriv --reuid=65534 --regid=65534 --clear-groups"
if ! $drop test -x "$prog" || ! $drop test -r "$lib"; then
  tmp=$(mktemp -d) || exit 1
  trap 'rm -rf "$tmp"' EXIT
  chmod 755 "$tmp" && cp "$prog" "$lib" "$tmp/" && chmod a+rX "$tmp"/* || exit 1 # (whatever root's umask)
  prog=$tmp/$(basename "$prog") lib=$tmp/$(basename "$lib")
  $drop test -x "$prog" && $drop test -r "$lib" || { echo "MS_SKIP refused: user nobody cannot run $prog"; exit 77; }
fi
export prog lib
$drop sh -c "$script"
