#!/bin/sh
# header_languages.sh SRC CC CXX: include/memspace.h, alone and with its inline function used, compiles without a
# warning as strict C (C11, C17, -pedantic) and as C++ (C++11 to C++20, -pedantic, -Wold-style-cast), with the
# build's compilers and with clang and clang++ where installed: a program's own warnings never come from the header.
set -u
src=$1 cc=${2:-cc} cxx=${3:-c++}
. "$(dirname "$0")/../common/ms_test.sh"
tmp=$(mktemp -d /tmp/memspace-header.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/use.c" <<'C'
#include <memspace.h>
#include <string.h>
int main(void) {
  ms_stats_t st;
  memset(&st, 0, sizeof st);
  const ms_stats_class_t *c = ms_stats_class(&st, MS_STATS_SIZE_CLASSES);
  return ms_version() > 0 && c->allocated == 0 ? 0 : 1;
}
C
cp "$tmp/use.c" "$tmp/use.cpp"
fail=0
try() { # COMPILER FILE FLAGS...
  comp=$1 file=$2
  shift 2
  # shellcheck disable=SC2068 # (flags, split)
  if ! out=$($comp -Wall -Wextra -Werror "$@" -I"$src/include" -c "$file" -o "$tmp/use.o" 2>&1); then
    echo "FAIL: $comp $* $(basename "$file"):"
    echo "$out" | head -8
    fail=1
  fi
}
for c in "$cc" clang; do
  [ "$c" = clang ] && { ms_need_cmd clang clang || continue; }
  for std in c11 c17; do try "$c" "$tmp/use.c" -std=$std -pedantic -Wstrict-prototypes -Wundef -Wshadow -Wconversion; done
done
for c in "$cxx" clang++; do
  [ "$c" = clang++ ] && { ms_need_cmd clang++ clang || continue; }
  for std in c++11 c++17 c++20; do
    try "$c" "$tmp/use.cpp" -std=$std -pedantic -Wold-style-cast -Wzero-as-null-pointer-constant -Wshadow -Wconversion
  done
done
[ $fail = 0 ] && echo "include/memspace.h compiles cleanly as C and C++"
ms_finish $fail
