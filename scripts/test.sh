#!/usr/bin/env bash
# make test: the secure build's hardening and heap tests, sanitizer builds (ASan+UBSan, TSan) of the ms_* API tests, a
# clang build's compiler-sensitive tests, then the release build's whole CTest suite last, so that the output ends
# with its summary.
# Every ctest call has --no-tests=error: a label that matches nothing is a failure, not a pass.
# MEMSPACE_CHECK_ALL=1 (make check-all) runs the long labels too, and every test each extra build can run (the
# secure build's and the clang build's whole suites).
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
  # the heap label's unit tests (unit_tests_heap): the secure build's canaries, guard pages and carving order
  # change what they see
  echo "== secure build (-DMEMSPACE_SECURE=ON): tests labelled hardening or heap"
  if cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DMEMSPACE_SECURE=ON -DMEMSPACE_BUILD_BENCH=OFF >/dev/null &&
     cmake --build "$dir" -j "$jobs" --target memspace test_hardening ms_count_prog test_faults unit_tests_heap >/dev/null; then
    ( cd "$dir" && ctest --output-on-failure --no-tests=error -j "$jobs" -L "hardening|heap" -LE "$exclude" ) || status=1
  else
    echo "secure build failed"; status=1
  fi
  extra_build asan "sanitize|tsan" -DMEMSPACE_ASAN=ON -DMEMSPACE_UBSAN=ON
  extra_build tsan tsan -DMEMSPACE_TSAN=ON
fi
# the clang build (Release, as `make build` with CC=clang): what gcc and clang compile or link differently: the
# override layer (aliases, weak references to the C++ runtime, the C++ operators' landing pads), the libraries the
# shared library needs, the start-up layout (section attributes), the static and installed library, the
# contract's examples, and programs compiled with clang calling the malloc family (tests labelled override,
# preload, install, contract, clang). make test installs clang (scripts/deps.sh test).
clang_labels="override|preload|install|contract|clang"
[ "$all" = 1 ] && clang_labels=""
if command -v clang >/dev/null 2>&1 && command -v clang++ >/dev/null 2>&1; then
  extra_build clang "$clang_labels" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
else
  echo "== clang build: skipped: no clang/clang++ (Debian package clang; make test installs it)"
  case "${CI:-}" in true|1) echo "CI=true: a skipped build is a failure"; status=1 ;; esac
fi
echo "== release build: every test"
( cd "$build" && ctest --output-on-failure --no-tests=error -j "$jobs" -LE "$exclude" ) || status=1
exit $status
