#!/bin/sh
# exports.sh LIB: every symbol the shared library defines dynamically is ms_*, a name of docs/contract.md §1 (the
# malloc family, glibc's control calls and the family's __libc_* names, exactly the contract's list) or a C++
# operator new/delete, and every name of that list is there; SONAME is libmemspace.so.0.
# exports.sh LIB [OVERRIDE]: OVERRIDE 0 is a library built without the override layer (MEMSPACE_OVERRIDE=OFF, every
# sanitizer build): the malloc family and the C++ operators are not required there (that part is reported as
# skipped); the rest is checked all the same.
. "$(dirname "$0")/../common/ms_test.sh"
lib=$1 override=${2:-1}
allowed=" malloc calloc realloc free aligned_alloc posix_memalign memalign valloc pvalloc reallocarray
 malloc_usable_size malloc_trim mallinfo2 mallopt malloc_stats malloc_info __libc_malloc __libc_calloc
 __libc_realloc __libc_free __libc_memalign __libc_valloc __libc_pvalloc "
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
  echo "not allowed by docs/contract.md §1: $sym"
  bad=1
done
echo "$n exported symbols checked"
# every name the contract promises is there: the malloc family, the C++ operators, the spaces and DMA APIs
defined=" $(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | tr '\n' ' ') "
required="$allowed _Znwm _Znam _ZnwmRKSt9nothrow_t _ZnamRKSt9nothrow_t _ZnwmSt11align_val_t _ZnamSt11align_val_t
 _ZnwmSt11align_val_tRKSt9nothrow_t _ZnamSt11align_val_tRKSt9nothrow_t _ZdlPv _ZdaPv _ZdlPvm _ZdaPvm
 _ZdlPvRKSt9nothrow_t _ZdaPvRKSt9nothrow_t _ZdlPvSt11align_val_t _ZdaPvSt11align_val_t _ZdlPvmSt11align_val_t
 _ZdaPvmSt11align_val_t _ZdlPvSt11align_val_tRKSt9nothrow_t _ZdaPvSt11align_val_tRKSt9nothrow_t
 ms_space_create ms_space_create_in ms_space_destroy ms_space_malloc ms_space_calloc ms_space_aligned_alloc
 ms_space_realloc ms_space_free ms_space_usable_size ms_space_expand ms_space_shrink ms_space_info ms_space_check
 ms_space_walk ms_dma_alloc ms_dma_register ms_dma_free ms_dma_addr ms_dma_size ms_dma_page_size ms_dma_segments
 ms_dma_phys ms_dma_write"
if [ "$override" != 1 ]; then
  ms_part_refused "the malloc family and the C++ operators of docs/contract.md §1: this library is built without the override layer (a sanitizer build)"
  required=$(echo "$required" | tr ' ' '\n' | grep '^ms_')
fi
for sym in $required; do
  case "$defined" in
    *" $sym "*) ;;
    *) echo "missing export promised by docs/contract.md §1: $sym"; bad=1 ;;
  esac
done
soname=$( (readelf -d "$lib" 2>/dev/null || objdump -p "$lib") | grep SONAME | sed 's/.*\[\(.*\)\].*/\1/; s/.*SONAME *//' | head -1)
if [ "$soname" != "libmemspace.so.0" ]; then
  echo "SONAME is '$soname', expected libmemspace.so.0"
  bad=1
else
  echo "SONAME $soname"
fi
[ "$n" -gt 0 ] || { echo "no symbols found (nm missing?)"; bad=1; }
# nothing runs cpuid at load time: libgcc's __cpu_indicator_init (pulled in by __builtin_cpu_supports) is a
# constructor that runs cpuid at every process start, and in a VM guest each cpuid traps to the hypervisor
if nm "$lib" 2>/dev/null | grep -q "__cpu_indicator_init\|__cpu_model"; then
  echo "libgcc's __cpu_indicator_init is linked in: a constructor running cpuid in every process"
  bad=1
fi
ms_finish $bad
