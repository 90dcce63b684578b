#!/bin/sh
# static_deps.sh LIB.a CC: every symbol the static library leaves undefined is defined by the C library (with its
# pthreads and dynamic linker): the library depends on libc and pthreads only (DEVELOPERS.md), so a program links
# it with -lpthread and nothing else (docs/contract.md §1), and no compiler-runtime helper (libgcc's
# __popcountdi2 from __builtin_popcountll without the popcnt instruction, __cpu_model...) creeps in. Weak
# references (the C++ runtime's, looked up only when present) are left out.
# static_deps.sh LIB.a CC [SAN]: SAN, a sanitizer build's flags: its instrumentation calls the sanitizer's runtime
# (__tsan_*, __asan_*, __ubsan_*, __sanitizer_*) and, on the unwinding paths it adds, the unwinder's
# _Unwind_Resume and __gcc_personality_v0; those names are counted apart, said, and allowed there.
lib=$1
cc=${2:-cc}
san=${3:-}
defs=$(mktemp)
trap 'rm -f "$defs"' EXIT
nm --defined-only "$lib" 2>/dev/null | awk 'NF == 3 {print $3}' >"$defs"
for name in libc.so.6 libpthread.so.0 libdl.so.2 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1; do
  f=$("$cc" -print-file-name="$name")
  [ -f "$f" ] && nm -D --defined-only "$f" | awk '{print $3}' | sed 's/@.*//' >>"$defs"
done
bad=0
n=0
nsan=0
for sym in $(nm -u "$lib" | awk '$1 == "U" {print $2}' | sed 's/@.*//' | sort -u); do
  n=$((n + 1))
  [ "$sym" = _GLOBAL_OFFSET_TABLE_ ] && continue # made by the linker
  grep -qx -- "$sym" "$defs" && continue
  if [ -n "$san" ]; then
    case "$sym" in
      __tsan_*|__asan_*|__ubsan_*|__sanitizer_*|_Unwind_Resume|__gcc_personality_v0) nsan=$((nsan + 1)); continue ;;
    esac
  fi
  echo "undefined in $lib and not the C library's: $sym"
  bad=1
done
echo "$n undefined symbols checked"
[ "$nsan" = 0 ] || echo "$nsan of them the sanitizer's runtime or the unwinder's (a build with $san)"
[ "$n" -gt 0 ] || { echo "no undefined symbols found (nm missing?)"; bad=1; }
exit $bad
