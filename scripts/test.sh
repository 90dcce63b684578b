#!/usr/bin/env bash
# make test: the release build's CTest suite, then sanitizer builds (ASan+UBSan, TSan) of the ms_* API tests.
# MEMSPACE_CHECK_ALL=1 (make check-all) runs the long labels too.
set -u
build=${1:-build}
jobs=$(nproc 2>/dev/null || echo 2)
status=0
exclude="long|defect"
[ "${MEMSPACE_CHECK_ALL:-0}" = 1 ] && exclude="defect"
( cd "$build" && ctest --output-on-failure -j "$jobs" -LE "$exclude" ) || status=1
# the secure build (guard pages, encoded free lists, canaries, random carving order): its hardening tests; its
# libmemspace.so is also what `memspace bench heap` runs as memspace-secure
dir="$build/secure"
echo "== secure build (-DMEMSPACE_SECURE=ON): tests labelled hardening"
if cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DMEMSPACE_SECURE=ON -DMEMSPACE_BUILD_BENCH=OFF >/dev/null &&
   cmake --build "$dir" -j "$jobs" --target memspace test_hardening >/dev/null; then
  ( cd "$dir" && ctest --output-on-failure -j "$jobs" -L hardening -LE "$exclude" ) || status=1
else
  echo "secure build failed"; status=1
fi
for san in asan tsan; do
  case $san in
    asan) flags="-DMEMSPACE_ASAN=ON -DMEMSPACE_UBSAN=ON"; label="sanitize" ;;
    tsan) flags="-DMEMSPACE_TSAN=ON"; label="tsan" ;;
  esac
  dir="$build/$san"
  echo "== $san build ($flags): tests labelled $label"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMSPACE_BUILD_BENCH=OFF $flags >/dev/null || { status=1; continue; }
  cmake --build "$dir" -j "$jobs" >/dev/null || { echo "$san build failed"; status=1; continue; }
  ( cd "$dir" && ctest --output-on-failure -j "$jobs" -L "$label" -LE "$exclude" ) || status=1
done
exit $status
