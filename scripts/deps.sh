#!/usr/bin/env bash
# Installs the Debian packages a target needs (make test / make bench), only those missing.
# Usage: scripts/deps.sh build|test|bench
set -u
what=${1:-build}
pkgs="cmake make gcc g++ libcmocka-dev python3"
case "$what" in
  test)  pkgs="$pkgs pkg-config python3-matplotlib python3-numpy sqlite3 git valgrind clang libclang-rt-14-dev libpython3.11-testsuite e2fsprogs xfsprogs util-linux libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 libtbbmalloc2 r-base-core" ;;
  bench) pkgs="$pkgs python3-matplotlib python3-numpy sqlite3 libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 libtbbmalloc2 r-base-core" ;;
esac
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "memspace: missing packages:$missing (not a Debian system: install them by hand)" >&2
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "memspace: missing Debian packages:$missing" >&2
  echo "memspace: install them with: sudo apt-get install$missing" >&2
  exit 1
fi
echo "memspace: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || true
# one package at a time falls back gracefully when a name is not in this release
if ! apt-get install -y -qq --no-install-recommends $missing >/dev/null; then
  for p in $missing; do apt-get install -y -qq --no-install-recommends "$p" >/dev/null || echo "memspace: could not install $p" >&2; done
fi
exit 0
