#!/bin/sh
# exports.sh LIB: every symbol the shared library defines dynamically is ms_*, a name of CONTRACT §1 (the
# malloc family, glibc's control calls and their __libc_ aliases) or a C++ operator new/delete; SONAME is
# libmemspace.so.0.
lib=$1
allowed=" malloc calloc realloc free aligned_alloc posix_memalign memalign valloc pvalloc reallocarray
 malloc_usable_size malloc_trim mallinfo mallinfo2 mallopt malloc_stats malloc_info cfree
 __libc_malloc __libc_calloc __libc_realloc __libc_free __libc_memalign __libc_valloc __libc_pvalloc "
bad=0
n=0
for sym in $(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//'); do
  n=$((n + 1))
  case "$sym" in
    ms_*) continue ;;
    _Znwm|_Znam|_ZnwmRKSt9nothrow_t|_ZnamRKSt9nothrow_t|_ZnwmSt11align_val_t|_ZnamSt11align_val_t) continue ;;
    _ZnwmSt11align_val_tRKSt9nothrow_t|_ZnamSt11align_val_tRKSt9nothrow_t) continue ;;
    _ZdlPv*|_ZdaPv*) continue ;;
    MEMSPACE_0) continue ;;   # the version node
  esac
  case "$allowed" in
    *" $sym "*|*" $sym
"*) continue ;;
  esac
  echo "not allowed by CONTRACT §1: $sym"
  bad=1
done
echo "$n exported symbols checked"
soname=$( (readelf -d "$lib" 2>/dev/null || objdump -p "$lib") | grep SONAME | sed 's/.*\[\(.*\)\].*/\1/; s/.*SONAME *//' | head -1)
if [ "$soname" != "libmemspace.so.0" ]; then
  echo "SONAME is '$soname', expected libmemspace.so.0"
  bad=1
else
  echo "SONAME $soname"
fi
[ "$n" -gt 0 ] || { echo "no symbols found (nm missing?)"; bad=1; }
exit $bad
