/* SPDX-License-Identifier: MIT */
/* track.h: tells memory checkers about blocks. Compiles to nothing unless MEMSPACE_VALGRIND (valgrind client
   requests) or an AddressSanitizer build (poisoning). Every part marks its blocks with these macros. */
#ifndef MSI_TRACK_H
#define MSI_TRACK_H
#include <stddef.h>

#if defined(__has_feature)
#define MSI_HAS_FEATURE_(x) __has_feature(x)
#else
#define MSI_HAS_FEATURE_(x) 0
#endif

#if defined(MEMSPACE_VALGRIND) && MEMSPACE_VALGRIND
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#define MSI_TRACK_MALLOC(p, size, zero) VALGRIND_MALLOCLIKE_BLOCK((p), (size), 0, (zero))
#define MSI_TRACK_FREE(p) VALGRIND_FREELIKE_BLOCK((p), 0)
#define MSI_TRACK_RESIZE(p, old, size) VALGRIND_RESIZEINPLACE_BLOCK((p), (old), (size), 0)
#define MSI_TRACK_NOACCESS(p, size) VALGRIND_MAKE_MEM_NOACCESS((p), (size))
#define MSI_TRACK_UNDEFINED(p, size) VALGRIND_MAKE_MEM_UNDEFINED((p), (size))
#define MSI_TRACK_DEFINED(p, size) VALGRIND_MAKE_MEM_DEFINED((p), (size))
#define MSI_TRACK_ACTIVE() (RUNNING_ON_VALGRIND)
#elif defined(__SANITIZE_ADDRESS__) || MSI_HAS_FEATURE_(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define MSI_TRACK_MALLOC(p, size, zero) ASAN_UNPOISON_MEMORY_REGION((p), (size))
#define MSI_TRACK_FREE(p) ((void)(p))
#define MSI_TRACK_RESIZE(p, old, size) ASAN_UNPOISON_MEMORY_REGION((p), (size))
#define MSI_TRACK_NOACCESS(p, size) ASAN_POISON_MEMORY_REGION((p), (size))
#define MSI_TRACK_UNDEFINED(p, size) ASAN_UNPOISON_MEMORY_REGION((p), (size))
#define MSI_TRACK_DEFINED(p, size) ASAN_UNPOISON_MEMORY_REGION((p), (size))
#define MSI_TRACK_ACTIVE() 1
#else
#define MSI_TRACK_MALLOC(p, size, zero) ((void)(p), (void)(size), (void)(zero))
#define MSI_TRACK_FREE(p) ((void)(p))
#define MSI_TRACK_RESIZE(p, old, size) ((void)(p), (void)(old), (void)(size))
#define MSI_TRACK_NOACCESS(p, size) ((void)(p), (void)(size))
#define MSI_TRACK_UNDEFINED(p, size) ((void)(p), (void)(size))
#define MSI_TRACK_DEFINED(p, size) ((void)(p), (void)(size))
#define MSI_TRACK_ACTIVE() 0
#endif
#endif
