#!/usr/bin/env bash
# noproc.sh TOOL PROGRAM...: runs `TOOL run -- PROGRAM...` in a mount namespace whose /proc is an empty tmpfs (a
# chroot or container without /proc). The maintenance thread cannot count the process's threads there: a program
# whose last thread ends with pthread_exit must still exit (exit_last_thread waits 30 s for its child).
set -u
. "$(dirname "$0")/../common/ms_test.sh"
tool=$1; shift
command -v unshare >/dev/null || ms_skip_missing "unshare (Debian package util-linux)"
why=$(unshare -m sh -c 'mount -t tmpfs none /proc' 2>&1) || ms_skip_refused "a mount namespace with its own /proc: $why"
exec unshare -m sh -c 'mount -t tmpfs none /proc && exec "$@"' sh "$tool" run -- "$@"
