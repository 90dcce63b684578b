# ms_test.sh: skips for shell tests, the contract of tests/common/ms_test.h (POSIX sh; source it:
# `. "$(dirname "$0")/../common/ms_test.sh"`). Every CTest test has SKIP_RETURN_CODE 77 (tests/CMakeLists.txt).
#   ms_skip_refused REASON...  the kernel or a missing privilege refused what the test needs: prints
#                              "MS_SKIP refused: REASON" (give the kernel's words) and exits 77. Allowed in CI.
#   ms_skip_missing WHAT...    the environment is incomplete (a package, a tool, a Python module that
#                              `scripts/deps.sh test` installs): prints "MS_SKIP missing: WHAT" and exits 77;
#                              under CI=true (.ci/run) it is a failure: exit 1.
#   ms_part_refused / ms_part_missing: the same for one part of a test that goes on: they print, return 1 (the
#                              caller leaves that part out) and are remembered by ms_finish.
#   ms_need_cmd CMD [PACKAGE]  0 when CMD is on PATH, else ms_part_missing "CMD (PACKAGE)".
#   ms_finish FAILED           ends the test: exit 1 when FAILED is not 0 or a part was missing under CI=true,
#                              else 77 when a part was skipped, else 0.
ms_skipped=0
ms_ci_missing=0
ms_ci() { [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; }
ms_part_refused() { echo "MS_SKIP refused: $*"; ms_skipped=1; return 1; }
ms_part_missing() {
  if ms_ci; then
    echo "MS_SKIP missing: $* (CI=true: a failure)"
    ms_ci_missing=1
  else
    echo "MS_SKIP missing: $*"
    ms_skipped=1
  fi
  return 1
}
ms_skip_refused() { ms_part_refused "$@"; exit 77; }
ms_skip_missing() { ms_part_missing "$@"; ms_finish 0; }
ms_need_cmd() { command -v "$1" >/dev/null 2>&1 || ms_part_missing "$1 (Debian package ${2:-$1})"; }
ms_finish() {
  if [ "${1:-0}" != 0 ] || [ $ms_ci_missing != 0 ]; then exit 1; fi
  if [ $ms_skipped != 0 ]; then echo "MS_SKIP: part of this test was skipped: exit status 77 (CTest: Skipped)"; exit 77; fi
  exit 0
}
