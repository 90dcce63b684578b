#!/usr/bin/env bash
# Installs the Debian packages a target needs (make test / make bench), only those missing.
# Usage: scripts/deps.sh build|test|bench
set -u
what=${1:-build}
pkgs="cmake make gcc g++ libcmocka-dev python3"
case "$what" in
  test)  pkgs="$pkgs pkg-config python3-matplotlib python3-numpy sqlite3 git valgrind strace libcap2-bin clang libclang-rt-14-dev libpython3.11-testsuite e2fsprogs xfsprogs util-linux libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 libtbbmalloc2 r-base-core" ;;
  bench) pkgs="$pkgs python3-matplotlib python3-numpy sqlite3 git libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 libtbbmalloc2 r-base-core" ;;
esac
ci=0
case "${CI:-}" in true|1) ci=1 ;; esac
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
# A package `make test` needs that cannot be had is a failure (its tests would skip and CI would stay green);
# for bench, a missing peer only gives not_installed rows: said, not fatal (a build package still is).
fatal() { # PACKAGES: exits 1 unless every one is a peer of `make bench`
  [ "$what" != bench ] && exit 1
  for p in "$@"; do
    case " cmake make gcc g++ libcmocka-dev python3 " in *" $p "*) exit 1 ;; esac
  done
  exit 0
}
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
  echo "memspace: not a Debian system (no apt-get/dpkg-query): cannot check or install:$missing" >&2
  echo "memspace: install the equivalents by hand; tests needing them report themselves as skipped" >&2
  if [ "$what" = test ] && [ $ci = 1 ]; then
    echo "memspace: CI=true: make test needs them: failing" >&2
    exit 1
  fi
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "memspace: missing Debian packages:$missing" >&2
  # a fresh Debian 12 installed with a root password has no sudo: then su with a login shell (Debian's plain su
  # keeps the caller's PATH, without /usr/sbin, where dpkg's helpers are), which asks for root's password
  how="sudo apt-get install$missing"
  command -v sudo >/dev/null 2>&1 || how="su - -c 'apt-get install$missing'"
  echo "memspace: install them with: $how (or run make $what as root)" >&2
  exit 1
fi
echo "memspace: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || echo "memspace: apt-get update failed (installing from the current lists)" >&2
# all at once, else one at a time so that every package that can be had is; then each is checked
if ! apt-get install -y -qq --no-install-recommends $missing >/dev/null; then
  for p in $missing; do apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1; done
fi
failed=""
for p in $missing; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || failed="$failed $p"
done
[ -z "$failed" ] && exit 0
echo "memspace: could not install:$failed (needed by make $what)" >&2
fatal $failed
