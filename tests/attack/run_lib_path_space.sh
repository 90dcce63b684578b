#!/bin/sh
# run_lib_path_space.sh BUILD: memspace run from a build directory whose path holds a space (/home/me/my code/...)
# refuses with exit 2 and the reason: the loader splits LD_PRELOAD at spaces and colons, so the program would run
# without memspace (ld.so's "cannot be preloaded: ignored", exit status 0). The copies of the tool and library keep a
# CMakeCache.txt beside them, as build/ does, so the tool looks for the library there.
build=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ms-lib-path.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
for d in "$tmp/plain" "$tmp/a b" "$tmp/a:b"; do
  mkdir -p "$d" && cp "$build/memspace" "$build"/libmemspace.so* "$d/" && touch "$d/CMakeCache.txt" || exit 1
  out=$(MEMSPACE_VERBOSE=1 "$d/memspace" run -- /bin/true 2>&1); rc=$?
  echo "$d: status $rc: $out" | head -3
  case $d in
    */plain) [ $rc = 0 ] && case $out in *"active in true"*) true ;; *) false ;; esac || fail=1 ;;
    *) [ $rc = 2 ] && case $out in *"memspace run: the library's path '$d/"*"holds a space or ':'"*) true ;; *) false ;; esac || fail=1 ;;
  esac
done
exit $fail
