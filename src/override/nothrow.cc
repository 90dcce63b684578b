/* SPDX-License-Identifier: MIT */
/* nothrow.cc: the nothrow forms of operator new. When allocation fails they call the new-handler like the throwing
   forms, and a std::bad_alloc thrown by the handler must come back as NULL, which takes a catch clause. The C++
   runtime symbols the catch needs are weak references: a C program never loads libstdc++, never throws, and never
   reaches them. */
#include "memspace.h"
#include <cstddef>
#include <new>

extern "C" void *msi_new_throwing(std::size_t size, std::size_t alignment, const void *caller); /* override.c */
/* C functions, which never throw: noexcept, so that no operator here needs a landing pad that calls
   std::terminate around them */
extern "C" void *msi_malloc(std::size_t size) noexcept;
extern "C" void *msi_aligned_alloc(std::size_t alignment, std::size_t size) noexcept;

__asm__(".weak __cxa_begin_catch\n\t.weak __cxa_end_catch\n\t.weak __gxx_personality_v0");
#ifdef __clang__
/* clang ends the catch clause below with a landing pad of its own that calls std::terminate (gcc leaves that to the
   personality routine): a weak reference too, reached only once an exception is being handled, when the C++
   runtime is loaded. A strong one would make libstdc++ a dependency (DT_NEEDED) of every process. */
__asm__(".weak _ZSt9terminatev");
#endif

extern "C" void *msi_new_nothrow_elsewhere(std::size_t size, std::size_t alignment, const void *caller);
extern "C" int msi_cxx_personality_bound(void) noexcept; /* override.c */

/* the operators' slow path; `caller`: the operator's return address, which it passes (override.c's
   new_throwing says why) */
__attribute__((noinline)) static void *nothrow_slow(std::size_t size, std::size_t alignment, const void *caller) noexcept {
  /* the personality routine is bound when this library is loaded: without it the catch below catches nothing */
  if (!msi_cxx_personality_bound()) return msi_new_nothrow_elsewhere(size, alignment, caller);
  try {
    return msi_new_throwing(size, alignment, caller);
  } catch (...) {
    return nullptr;
  }
}

static inline __attribute__((always_inline)) void *nothrow_new(std::size_t size, std::size_t alignment) noexcept {
  if (alignment & (alignment - 1)) return nullptr; /* not a power of two (0: the unaligned forms) */
  void *p = alignment > 16 ? msi_aligned_alloc(alignment, size) : msi_malloc(size);
  return p ? p : nothrow_slow(size, alignment, __builtin_return_address(0));
}

MS_API void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return nothrow_new(n, 0); }
MS_API void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return nothrow_new(n, 0); }
MS_API void *operator new(std::size_t n, std::align_val_t al, const std::nothrow_t &) noexcept {
  return nothrow_new(n, static_cast<std::size_t>(al));
}
MS_API void *operator new[](std::size_t n, std::align_val_t al, const std::nothrow_t &) noexcept {
  return nothrow_new(n, static_cast<std::size_t>(al));
}

/* this library's own definitions under hidden names (override.c's runtime_sym skips them): the exported names'
   addresses would be the process's winning definitions, bound by a symbol lookup at every start-up */
#define OWN_AS(target) __attribute__((visibility("hidden"), malloc, alloc_size(1), alias(target)))
extern "C" OWN_AS("_ZnwmRKSt9nothrow_t") void *msi_own_new_nothrow(std::size_t n, const std::nothrow_t &) noexcept;
extern "C" OWN_AS("_ZnwmSt11align_val_tRKSt9nothrow_t") void *
msi_own_new_aligned_nothrow(std::size_t n, std::align_val_t al, const std::nothrow_t &) noexcept;
