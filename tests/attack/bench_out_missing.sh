#!/bin/sh
# memspace bench PART --out with no directory: exit 2 and "--out needs a directory", before any benchmark runs
# (an empty name would make the output "/PART.csv"). Usage: bench_out_missing.sh MEMSPACE
tool=$1
check() {
  out=$("$tool" bench pages --quick "$@" 2>&1)
  rc=$?
  echo "memspace bench pages --quick $*: status $rc: $out"
  [ $rc -eq 2 ] || exit 1
  case $out in *'--out needs a directory'*) ;; *) exit 1 ;; esac
}
check --out
check --out=
check --out ''
echo ok
