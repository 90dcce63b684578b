#!/bin/sh
# override_off.sh SRC: the build docs/linking.md describes for the ms_* API without the override layer
# (-DMEMSPACE_OVERRIDE=OFF) configures: no test or target may need the override's own targets there
# (tests/attack named libmemspace-debug.so unconditionally, so that configure step failed with "No target
# memspace_debug"). Configure only: the build itself is the release build's sources minus src/override.
set -u
src=$1
tmp=$(mktemp -d /tmp/memspace-override-off.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if ! cmake -S "$src" -B "$tmp/build-api" -DCMAKE_BUILD_TYPE=Release -DMEMSPACE_OVERRIDE=OFF >"$tmp/log" 2>&1; then
  grep -A6 "CMake Error" "$tmp/log" | head -20
  echo "FAIL: cmake -DMEMSPACE_OVERRIDE=OFF (docs/linking.md) does not configure"
  exit 1
fi
grep -q "^MEMSPACE_OVERRIDE:BOOL=OFF" "$tmp/build-api/CMakeCache.txt" || { echo "FAIL: MEMSPACE_OVERRIDE not OFF"; exit 1; }
echo "the -DMEMSPACE_OVERRIDE=OFF build of docs/linking.md configures"
