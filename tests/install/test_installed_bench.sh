#!/usr/bin/env bash
# An installed memspace (docs/contract.md §1-2): `memspace bench` finds its helper programs and scripts under the
# prefix and writes to ./memspace-results, leaving no partial file; memspace.pc lets a program under a
# non-system prefix find the library without LD_LIBRARY_PATH; `make uninstall` removes every installed file and
# memspace's own directories.
set -u
build=$1 src=$2
. "$(dirname "$0")/../common/ms_test.sh"
tmp=$(mktemp -d /tmp/memspace-installed.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
prefix=$tmp/opt/memspace # (a prefix with a component named memspace: its shared directories stay all the same)
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }
# what the heap bench's real programs take from its helper directory: a missing one shows as "not installed"
for f in heap_churn.py heap_numpy_churn.py heap_http_load.py heap_r_growth.R libheap_floor.so; do
  [ -e "$prefix/libexec/memspace/bench/$f" ] || fail "bench helper $f not installed"
done
# every program and script the bench runs from build/bench has its installed copy (heap_cgroup_purge, spill_probe...)
for f in "$build"/bench/*; do
  [ -f "$f" ] || continue
  case ${f##*/} in Makefile | *.cmake) continue ;; esac
  [ -e "$prefix/libexec/memspace/bench/${f##*/}" ] || fail "bench helper ${f##*/} (in $build/bench) not installed"
done
mkdir "$tmp/work"
# without PYTHONDONTWRITEBYTECODE, as a new user runs it: the scripts it runs must write no __pycache__ there
(cd "$tmp/work" && env -u PYTHONDONTWRITEBYTECODE "$prefix/bin/memspace" bench spaces --quick >"$tmp/bench.log" 2>&1) ||
  { tail -20 "$tmp/bench.log"; fail "installed memspace bench spaces --quick"; }
grep -q "cannot run" "$tmp/bench.log" && { grep "cannot run" "$tmp/bench.log"; fail "a helper program was not found"; }
[ "$(head -1 "$tmp/work/memspace-results/spaces.csv")" = "part,case,impl,threads,size_bytes,metric,value" ] ||
  fail "no memspace-results/spaces.csv in the working directory"
grep -q "^spaces,.*,memspace,.*mean_ns" "$tmp/work/memspace-results/spaces.csv" || fail "no memspace rows in spaces.csv"
ls "$tmp/work/memspace-results" | grep -q partial && fail "a .partial file was left"
[ -s "$tmp/work/memspace-results/results.md" ] || fail "no memspace-results/results.md (bench/report.py)"
libdir=$(dirname "$(find "$prefix" -name libmemspace.so.0 | head -1)")
[ -e "$libdir/libmemspace-debug.so" ] || fail "libmemspace-debug.so (docs/heap.md) not installed"
if ms_need_cmd pkg-config; then
  printf '#include <memspace.h>\nint main(void){return ms_version() > 0 ? 0 : 1;}\n' >"$tmp/v.c"
  flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs memspace)
  [[ "$flags" != *//* ]] || fail "pkg-config's flags hold a '//': $flags"
  cc "$tmp/v.c" -o "$tmp/v" $flags || fail "build with pkg-config"
  env -u LD_LIBRARY_PATH "$tmp/v" || fail "a program built with pkg-config's flags does not find the library"
fi
make -s -C "$src" uninstall BUILD="$build" >/dev/null || fail "make uninstall"
left=$(find "$prefix" -type f | head -3)
[ -z "$left" ] || fail "left after make uninstall: $left"
[ -d "$prefix/include" ] && [ -d "$prefix/bin" ] || fail "make uninstall removed a shared directory (include, bin)"
left=$(find "$prefix" -mindepth 1 -type d -name memspace | head -3)
[ -z "$left" ] || fail "memspace's own directories left after make uninstall: $left"
echo "1 passed, 0 failed"
ms_finish 0
