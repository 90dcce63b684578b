#!/usr/bin/env bash
# Impossible sizes, counts and alignments at every entry point (oversize_prog.cc), under LD_PRELOAD of memspace in
# one mode, against the C library's answers: the program's lines must be glibc's and it must report no failure
# (a block returned for an impossible size, an ms_* call answering otherwise than its C counterpart, anything
# mapped at 0).
# usage: oversize.sh LIBMEMSPACE OVERSIZE_PROG MODE [SPILL_DIR]   MODE: heap, secure, spill, space
# Where glibc and libstdc++ answer otherwise than POSIX/C++ require, the reference says what is required:
#  - aligned_alloc with an alignment that is not a power of two: NULL + EINVAL (C17, glibc 2.38; older glibc
#    rounds the alignment up like memalign);
#  - aligned operator new of SIZE_MAX: libstdc++ (GCC 12) rounds the size up to the alignment, wraps to 0 and
#    returns a block; required: std::bad_alloc (nothrow: NULL).
set -u
lib=$1 prog=$2 mode=$3 spill_dir=${4:-}
ref=$("$prog" 2>/dev/null | sed -E \
  -e 's/^(aligned_alloc\((3|24|2\^62\+1),[^)]*\)): .*/\1: NULL EINVAL/' \
  -e 's/^(new[^:]*SIZE_MAX,align[^:]*nothrow\)): ok$/\1: NULL/' \
  -e 's/^(new[^:]*SIZE_MAX,align[^:]*\)): ok$/\1: bad_alloc/')
case $mode in
  heap) env=() ;;
  secure) env=(MEMSPACE_SECURE=1) ;;
  spill) env=(MEMSPACE_SPILL_THRESHOLD=4K "MEMSPACE_SPILL_DIR=$spill_dir") ;;
  space) env=(MEMSPACE_SPACE_INITIAL=64M MEMSPACE_SPACE_EXPAND=64M) ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
out=$(env "${env[@]}" LD_PRELOAD="$lib" "$prog"); rc=$?
if ! d=$(diff <(echo "$ref") <(echo "$out")); then
  echo "$mode: answers differ from the C library's (< glibc, > memspace):"; echo "$d"; rc=1
fi
echo "$mode: $(echo "$out" | wc -l) calls, exit $rc"
exit $rc
