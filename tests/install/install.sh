#!/bin/sh
# install.sh BUILD SRC CC [SAN]: `cmake --install BUILD --prefix TMP`, then a tiny program against the installed
# package built three ways and run: pkg-config, a CMake project with find_package(memspace), and statically
# against libmemspace.a with only -lpthread. SAN: a sanitizer build's flags (-fsanitize=thread...): its static
# library calls the sanitizer's runtime, so the static program is built with them too, as any program linking
# such a build statically must be (the shared library names the runtime itself).
set -u
build=$1 src=$2 cc=${3:-cc} san=${4:-}
tmp=$(mktemp -d /tmp/memspace-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }
for f in include/memspace.h bin/memspace; do [ -e "$tmp/prefix/$f" ] || fail "$f not installed"; done
libdir=$(dirname "$(find "$tmp/prefix" -name libmemspace.so.0 | head -1)")
[ -n "$libdir" ] && [ -e "$libdir/libmemspace.so" ] && [ -e "$libdir/libmemspace.a" ] || fail "libraries not installed"
[ -e "$libdir/pkgconfig/memspace.pc" ] || fail "memspace.pc not installed"
[ -e "$libdir/cmake/memspace/memspaceConfig.cmake" ] || fail "CMake package not installed"

cat > "$tmp/hello.c" <<'C'
#include <memspace.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  ms_pages_t r;
  if (ms_pages_reserve(1 << 20, 0, MS_PAGES_COMMIT, -1, &r) != 0) return 1;
  memset(r.addr, 1, r.size);
  ms_frame_config_t c;
  memset(&c, 0, sizeof c);
  c.range_size = 1 << 20;
  ms_frame_t *f = ms_frame_create(&c);
  if (!f || !ms_frame_alloc(f, 100, 0)) return 2;
  ms_frame_flip(f);
  ms_frame_destroy(f);
  ms_pages_release(r.addr, r.size);
  printf("memspace %d ok\n", ms_version());
  return 0;
}
C
# 1. pkg-config
. "$src/../common/ms_test.sh"
if ms_need_cmd pkg-config; then
  flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs memspace) || fail "pkg-config memspace"
  $cc "$tmp/hello.c" -o "$tmp/hello_pc" $flags || fail "build with pkg-config flags: $flags"
  LD_LIBRARY_PATH="$libdir" "$tmp/hello_pc" || fail "run pkg-config build"
fi
# 2. CMake find_package
mkdir -p "$tmp/proj"
cp "$tmp/hello.c" "$tmp/proj/"
cat > "$tmp/proj/CMakeLists.txt" <<'C'
cmake_minimum_required(VERSION 3.18)
project(hello C)
find_package(memspace REQUIRED)
add_executable(hello hello.c)
target_link_libraries(hello PRIVATE memspace::memspace)
add_executable(hello_static hello.c)
target_link_libraries(hello_static PRIVATE memspace::memspace_static) # README: libmemspace.a, pthread with it
C
cmake -S "$tmp/proj" -B "$tmp/proj/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_C_COMPILER="$cc" \
  >"$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; fail "configure with find_package(memspace)"; }
cmake --build "$tmp/proj/build" >"$tmp/cb.log" 2>&1 || { cat "$tmp/cb.log"; fail "build with memspace::memspace"; }
"$tmp/proj/build/hello" || fail "run CMake build"
"$tmp/proj/build/hello_static" || fail "run CMake build with memspace::memspace_static"
# 3. static: libmemspace.a with -lpthread only
# shellcheck disable=SC2086 # (SAN: flags, split)
$cc $san "$tmp/hello.c" -o "$tmp/hello_static" -I"$tmp/prefix/include" "$libdir/libmemspace.a" -lpthread || fail "static link"
"$tmp/hello_static" || fail "run static build"
echo "installed package works: pkg-config, find_package, static"
ms_finish 0
