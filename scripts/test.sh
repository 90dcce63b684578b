#!/usr/bin/env bash
# make test: the secure build's hardening and heap tests, sanitizer builds (ASan+UBSan, TSan) of the ms_* API tests, then
# the release build's whole CTest suite last, so that the output ends with its summary.
# Every ctest call has --no-tests=error: a label that matches nothing is a failure, not a pass.
# MEMSPACE_CHECK_ALL=1 (make check-all) runs the long labels too, and every test each extra build can run (the
# secure build's whole suite).
set -u
build=${1:-build}
jobs=$(nproc 2>/dev/null || echo 2)
status=0
all=${MEMSPACE_CHECK_ALL:-0}
exclude="long|defect"
[ "$all" = 1 ] && exclude="defect"

# extra_build NAME LABEL CMAKE-FLAGS...: configures and builds $build/NAME, runs the tests labelled LABEL
extra_build() {
  local name=$1 label=$2 dir="$build/$1"
  shift 2
  echo "== $name build ($*): tests labelled ${label:-(all)}"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMSPACE_BUILD_BENCH=OFF "$@" >/dev/null || { status=1; return; }
  cmake --build "$dir" -j "$jobs" >/dev/null || { echo "$name build failed"; status=1; return; }
  ( cd "$dir" && ctest --output-on-failure --no-tests=error -j "$jobs" ${label:+-L "$label"} -LE "$exclude" ) || status=1
}

# the secure build (guard pages, encoded free lists, canaries, random carving order); its libmemspace.so is also
# what `memspace bench heap` runs as memspace-secure
if [ "$all" = 1 ]; then
  extra_build secure "" -DMEMSPACE_SECURE=ON
  extra_build asan "sanitize|tsan" -DMEMSPACE_ASAN=ON -DMEMSPACE_UBSAN=ON
  extra_build tsan tsan -DMEMSPACE_TSAN=ON # not the sanitize tests: mlock/VmLck accounting differs under TSan's runtime
else
  dir="$build/secure"
  # the heap label's programs: the secure build's canaries, guard pages and carving order change what they see
  heap_tests=$(sed -n 's/^ms_unit_test(\([a-z_]*\) .*/\1/p' tests/heap/CMakeLists.txt | tr '\n' ' ')
  echo "== secure build (-DMEMSPACE_SECURE=ON): tests labelled hardening or heap"
  if cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DMEMSPACE_SECURE=ON -DMEMSPACE_BUILD_BENCH=OFF >/dev/null &&
     cmake --build "$dir" -j "$jobs" --target memspace test_hardening ms_count_prog test_faults $heap_tests >/dev/null; then
    ( cd "$dir" && ctest --output-on-failure --no-tests=error -j "$jobs" -L "hardening|heap" -LE "$exclude" ) || status=1
  else
    echo "secure build failed"; status=1
  fi
  extra_build asan "sanitize|tsan" -DMEMSPACE_ASAN=ON -DMEMSPACE_UBSAN=ON
  extra_build tsan tsan -DMEMSPACE_TSAN=ON
fi
echo "== release build: every test"
( cd "$build" && ctest --output-on-failure --no-tests=error -j "$jobs" -LE "$exclude" ) || status=1
exit $status
