/* SPDX-License-Identifier: MIT */
/* override.c: the drop-in replacement of the C library's allocator (built only when MEMSPACE_OVERRIDE): the
   malloc family with glibc's exact C semantics, glibc's control calls answered with memspace's figures, the
   __libc_* entry points and every C++ operator new (defined here in C under their mangled names, so a C program
   never depends on libstdc++: the new-handler and std::bad_alloc are looked up in the C++ runtime with dlsym only
   when a C++ program needs them; operator delete is free's alias in src/core/route.c).
   Pointers that are not ours (allocated before memspace took over, or by another allocator) go to the C library's
   own free/realloc, found with dlsym(RTLD_NEXT): the test is an O(1) address-range check. */
#include "os.h"
#include "../core/route_fast.h"
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------------------------ */
/* the C library's functions, for foreign pointers                                                             */
/* ------------------------------------------------------------------------------------------------------------ */

/* this library's own mallinfo2 and malloc_usable_size under hidden names (aliases, defined with them below): the
   C library's function found by name is never ours. The exported names' addresses would be the process's winning
   definitions, bound by a symbol lookup at every start-up. */
static struct mallinfo2 own_mallinfo2(void);
#if defined(__has_attribute) && __has_attribute(copy) /* (GCC's -Wmissing-attributes; clang has neither) */
#define OWN_COPY(f) __attribute__((copy(f)))
#else
#define OWN_COPY(f)
#endif
static size_t own_usable(void *p);
typedef void free_fn(void *);
typedef void *realloc_fn(void *, size_t);
typedef size_t usable_fn(void *);
static free_fn *_Atomic libc_free;
static realloc_fn *_Atomic libc_realloc;
static usable_fn *_Atomic libc_usable;

static void *libc_sym(const char *name) {
  void *f = dlsym(RTLD_NEXT, name);
  if (!f) {
    void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (h) f = dlsym(h, name);
  }
  return f;
}

/* p lies on the calling thread's stack, between its stack pointer and the stack's top: glibc's free reads a chunk
   header from the bytes before it, whatever the stack holds there (it aborts, or faults without a word), so it is
   reported here. The top: the thread's descriptor, which glibc puts right above a thread's stack, or for the main
   thread the program's file name that the kernel put at the top of its stack (AT_EXECFN, above the arguments and
   the environment; a function already bound, where glibc's __libc_stack_end would be one more symbol for the
   dynamic loader to look up in every process); at most 64 MiB above the stack pointer (an alternate signal stack
   elsewhere then finds neither) */
static bool on_own_stack(const void *p) {
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0), a = (uintptr_t)p, max = (uintptr_t)64 << 20;
  uintptr_t self = (uintptr_t)pthread_self(), top = (uintptr_t)getauxval(AT_EXECFN);
  if (self > sp && self - sp <= max) top = self;
  return top > sp && top - sp <= max && a >= sp && a < top;
}
/* what is wrong with a pointer that is neither memspace's nor on the stack, as a block of the C library's; NULL
   when it may be one. The C library's blocks are 16-byte aligned, and its free reads the chunk header in the 16
   bytes before the block and writes its list links in the first 16 bytes of it: a pointer into no mapping
   (free((void *)0x1000)), into PROT_NONE memory (a reservation's unused part, a guard page) or read-only memory
   would fault there without a word. One madvise on those pages (msi_os_writable): foreign frees are rare, blocks
   from before memspace took over */
static const char *foreign_fault(const void *p) {
  uintptr_t a = (uintptr_t)p, ps = msi_os_page_size();
  if (a & 15) return "not 16-byte aligned, so not the C library's block either";
  if (a < ps) return "in the first page, which is never mapped";
  uintptr_t from = (a - 16) & ~(ps - 1);
  if (msi_os_writable((void *)from, a + 16 - from) == 0) return NULL;
  return errno == EFAULT ? "PROT_NONE or read-only memory, so not the C library's block either"
                         : "not mapped: it or the 16 bytes before it";
}

/* Whether the C library's malloc holds a live block of the kind p's header claims: glibc marks a block mapped on
   its own (IS_MMAPPED, bit 1 of the size word before p), else it lies in an arena. When the C library holds none
   (the usual case: memspace serves every malloc, __libc_malloc included), p is no block of its either. The check
   matters: for a block marked mapped glibc's free unmaps [p - 16 - prev_size, + prev_size + size), so a forged
   header in the program's own memory would unmap any range, memspace's live blocks included, and the next mmap
   would hand their pages to someone else.
   The C library answers through mallinfo2 (glibc 2.33), else mallinfo (every glibc: the same counts in ints,
   their low 32 bits, so a count of a whole multiple of 4 GiB reads as none). Looked up once, the failure too (a
   lookup walks the loaded objects' symbol tables: not once per free). Without either (a static program, another
   C library) nothing tells a block of the C library's from a forged one: OWN_UNKNOWN, and the callers keep the
   pointer (leaked, said once) rather than hand it over (a forged header would unmap any range) or abort (a real
   block of the C library's would end the program). */
typedef struct mallinfo2 mallinfo2_fn(void);
typedef struct mallinfo mallinfo_fn(void);
enum { OWN_NONE, OWN_MAYBE, OWN_UNKNOWN };
static _Atomic int libc_query_state; /* 0 not looked up, 1 mallinfo2, 2 mallinfo, 3 neither */
static void *_Atomic libc_query;
static int libc_may_own(const void *p) {
  int st = atomic_load_explicit(&libc_query_state, memory_order_acquire);
  if (!st) {
    void *f = libc_sym("mallinfo2");
    st = 1;
    if (!f || f == (void *)own_mallinfo2) f = libc_sym("mallinfo"), st = 2; /* (not exported here: the C library's) */
    if (!f) st = 3;
    atomic_store_explicit(&libc_query, f, memory_order_relaxed);
    atomic_store_explicit(&libc_query_state, st, memory_order_release); /* racing threads store the same */
  }
  if (st == 3) return OWN_UNKNOWN;
  void *f = atomic_load_explicit(&libc_query, memory_order_relaxed);
  bool mapped = ((const size_t *)p)[-1] & 2;
  bool held; /* the C library holds bytes in blocks of that kind: the same two fields in either struct */
  if (st == 1) { struct mallinfo2 mi = ((mallinfo2_fn *)f)(); held = mapped ? mi.hblkhd : mi.uordblks; }
  else { struct mallinfo mi = ((mallinfo_fn *)f)(); held = mapped ? mi.hblkhd : mi.uordblks; }
  return held ? OWN_MAYBE : OWN_NONE;
}

/* the pointer stays where it is (libc_may_own: OWN_UNKNOWN) */
static void foreign_keep(const void *p, const char *call) {
  MSI_WARN_ONCE("%s(%p): not memspace's, and the C library cannot say whether it holds such a block (no mallinfo2 "
                "or mallinfo); left as it is (leaked)", call, p);
}

/* the pointer is handed to the C library: OWN_MAYBE, or aborts; OWN_UNKNOWN returned (keep it) */
static int foreign_check(const void *p, const char *call) {
  char space[64];
  if (MSI_UNLIKELY(msi_space_owner_name(p, space, sizeof space))) {
    msi_error("%s(): invalid pointer: %p is a block of memory space \"%s\" (the ms_space_ calls take it); aborting", call,
              p, space);
    abort();
  }
  const char *why = on_own_stack(p) ? "an address on this thread's stack" : foreign_fault(p);
  int own = why ? OWN_NONE : libc_may_own(p);
  if (!why && own == OWN_NONE) why = "not memspace's, and the C library's malloc holds no such block";
  if (MSI_UNLIKELY(why != NULL)) {
    msi_error("%s(): invalid pointer (%s): %p; aborting", call, why, p);
    abort();
  }
  return own;
}

/* p, checked (foreign_check), to the C library's free */
static void libc_free_checked(void *p) {
  free_fn *f = atomic_load_explicit(&libc_free, memory_order_acquire);
  if (!f) {
    f = (free_fn *)libc_sym("free");
    if (!f || f == (free_fn *)msi_free) {
      MSI_WARN_ONCE("free(%p): not memspace's and the C library's free is unavailable; leaked", p);
      return;
    }
    atomic_store_explicit(&libc_free, f, memory_order_release);
  }
  f(p);
}

void msi_foreign_free(void *p) {
  if (foreign_check(p, "free") == OWN_UNKNOWN) foreign_keep(p, "free");
  else libc_free_checked(p);
}

/* 0 for a pointer glibc's malloc_usable_size would fault on or read a forged header at (foreign_check's tests) */
size_t msi_foreign_usable(const void *p) {
  if (!p || on_own_stack(p) || foreign_fault(p) || libc_may_own(p) != OWN_MAYBE) return 0;
  usable_fn *f = atomic_load_explicit(&libc_usable, memory_order_acquire);
  if (!f) {
    f = (usable_fn *)libc_sym("malloc_usable_size");
    if (!f || f == (usable_fn *)own_usable) return 0;
    atomic_store_explicit(&libc_usable, f, memory_order_release);
  }
  return f((void *)p);
}

/* a foreign block moves into memspace: allocate, copy what the C library says is usable, free there */
void *msi_foreign_realloc(void *p, size_t size) {
  if (foreign_check(p, "realloc") == OWN_UNKNOWN) { /* its size is unknown too: the block stays as it is */
    foreign_keep(p, "realloc");
    errno = ENOMEM;
    return NULL;
  }
  size_t old = msi_foreign_usable(p);
  if (!old) {
    realloc_fn *r = atomic_load_explicit(&libc_realloc, memory_order_acquire);
    if (!r) {
      r = (realloc_fn *)libc_sym("realloc");
      if (!r || r == (realloc_fn *)msi_realloc) { errno = ENOMEM; return NULL; }
      atomic_store_explicit(&libc_realloc, r, memory_order_release);
    }
    return r(p, size);
  }
  void *n = msi_malloc(size);
  if (!n) return NULL;
  msi_memcpy(n, p, old < size ? old : size);
  libc_free_checked(p); /* (checked above) */
  return n;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* which copy of the library serves malloc                                                                      */
/* ------------------------------------------------------------------------------------------------------------ */

/* the definition of malloc the dynamic linker bound for the whole process, read through this object's GOT (the
   compiler loads the address of an external default-visibility function from there): in the main program it is
   always the program's own; volatile, so the comparison is never folded */
static void *bound_malloc(void) {
  void *(*volatile f)(size_t) = malloc;
  return (void *)f;
}

/* A copy of the library whose malloc is not the process's serves no call of the malloc family: a program linked
   with libmemspace.a and run with libmemspace.so preloaded (`memspace run`), an allocator ahead of this one in
   LD_PRELOAD, a program with a malloc of its own (not a copy loaded with dlopen, where the C library's serves).
   That copy stays inert (options.c): it reads no MEMSPACE_* variable, so the copy serving malloc alone creates
   the process space, reports invalid values, clears the variables it consumes and prints the statistics at
   exit. Two loads in the common case: it runs in every process at start-up. */
MSI_STARTUP_TEXT bool msi_malloc_elsewhere(void) {
  void *bound = bound_malloc();
  if (bound == (void *)msi_malloc) return false;
  /* A program built without PIE that takes malloc's address (python3 stores it in a table) has the address bound
     to a PLT entry of its own, so that the address is the same everywhere: its symbol is undefined there (a value
     without a section), and calls through it reach the first definition, this copy's. Looked up only then (dladdr1
     walks that object's symbols). Unknown: not inert. */
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (!dladdr1(bound, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym) return false;
  if (sym->st_shndx == SHN_UNDEF) return false;
  /* the C library's own malloc: this copy came after start-up (dlopen, Python's ctypes) for its ms_* API, and
     reads its options as a preloaded one does (getauxval: a function only the C library defines) */
  Dl_info libc;
  return !(dladdr((void *)getauxval, &libc) && libc.dli_fbase == info.dli_fbase);
}

/* MEMSPACE_VERBOSE's line in the inert copy: which object serves malloc instead */
void msi_malloc_elsewhere_note(void) {
  Dl_info own, other;
  const char *self = dladdr((void *)msi_malloc, &own) && own.dli_fname && *own.dli_fname ? own.dli_fname : "?";
  const char *owner = dladdr(bound_malloc(), &other) && other.dli_fname && *other.dli_fname ? other.dli_fname
                                                                                              : "the program";
  msi_verbose("%s (pid %d): malloc is served by %s, not by this copy of memspace (%s), which stays inert and reads "
              "no MEMSPACE_* variable", program_invocation_short_name, msi_os_getpid(), owner, self);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* the malloc family                                                                                            */
/* ------------------------------------------------------------------------------------------------------------ */

/* malloc, free, calloc and realloc are the front door's own functions under a second name (src/core/route.c, the
   end): no jump between the exported name and the front door. The rest of the family, which a short-lived program's
   C library calls too (sed's and mawk's reallocarray), sits at the start of the text with the front door rather
   than on a page of its own at the far end, one page fault more in each such process */
#define FAMILY_TEXT MSI_HOT_TEXT
FAMILY_TEXT MS_API size_t malloc_usable_size(void *p) { return msi_usable_size(p); }
static size_t own_usable(void *p) OWN_COPY(malloc_usable_size) __attribute__((alias("malloc_usable_size")));

FAMILY_TEXT MS_API void *reallocarray(void *p, size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) { errno = ENOMEM; return NULL; }
  return msi_realloc(p, total);
}

FAMILY_TEXT MS_API void *aligned_alloc(size_t alignment, size_t size) {
  if (!msi_is_pow2(alignment)) { errno = EINVAL; return NULL; }
  return msi_aligned_alloc(alignment, size);
}

/* the error is the return value: errno stays as it was, on failure too (POSIX; the Linux manual: "errno is not
   set"), and *out is untouched on failure */
FAMILY_TEXT MS_API int posix_memalign(void **out, size_t alignment, size_t size) {
  if (!msi_is_pow2(alignment) || alignment % sizeof(void *) != 0) return EINVAL;
  int saved = errno;
  void *p = msi_aligned_alloc(alignment, size);
  int err = p ? 0 : errno == EINVAL ? EINVAL : ENOMEM;
  errno = saved;
  if (p) *out = p;
  return err;
}

/* glibc: an alignment that is not a power of two is rounded up to one; absurd ones fail with EINVAL */
FAMILY_TEXT MS_API void *memalign(size_t alignment, size_t size) {
  if (alignment <= 16) return msi_malloc(size);
  if (alignment > SIZE_MAX / 2 + 1) { errno = EINVAL; return NULL; }
  if (!msi_is_pow2(alignment)) alignment = (size_t)1 << (64 - __builtin_clzll(alignment));
  return msi_aligned_alloc(alignment, size);
}

MS_API void *valloc(size_t size) { return msi_aligned_alloc((size_t)sysconf(_SC_PAGESIZE), size); }

MS_API void *pvalloc(size_t size) {
  size_t ps = (size_t)sysconf(_SC_PAGESIZE), rounded;
  if (__builtin_add_overflow(size, ps - 1, &rounded)) { errno = ENOMEM; return NULL; }
  rounded &= ~(ps - 1);
  return msi_aligned_alloc(ps, rounded ? rounded : ps);
}

/* glibc's internal names of the family, which heap tracers and debugging libraries that define malloc forward to
   (gprofng's libgp-heap.so, which `gprofng collect app -H on` puts ahead of an LD_PRELOAD it finds, and glibc's
   libc_malloc_debug.so): they free the blocks of the rest of the family (memspace's posix_memalign, reallocarray...)
   with __libc_free, which glibc's would abort on. The control calls' internal names stay glibc's. */
MS_API void *__libc_malloc(size_t size) { return msi_malloc(size); }
MS_API void __libc_free(void *p) { msi_free(p); }
MS_API void *__libc_calloc(size_t count, size_t size) { return msi_calloc(count, size); }
MS_API void *__libc_realloc(void *p, size_t size) { return msi_realloc(p, size); }
MS_API void *__libc_memalign(size_t alignment, size_t size) { return memalign(alignment, size); }
MS_API void *__libc_valloc(size_t size) { return valloc(size); }
MS_API void *__libc_pvalloc(size_t size) { return pvalloc(size); }

/* ------------------------------------------------------------------------------------------------------------ */
/* glibc's control calls                                                                                        */
/* ------------------------------------------------------------------------------------------------------------ */

MS_API int malloc_trim(size_t pad) {
  (void)pad;
  ms_heap_collect(1);
  return 1;
}

/* Accepted and ignored (memspace tunes itself through MEMSPACE_*), with glibc's answers: 1 for every parameter,
   a number it does not know included, except M_MXFAST beyond glibc's largest fast size (80 * sizeof(size_t) / 4)
   or negative, which glibc refuses with 0. */
MS_API int mallopt(int param, int value) {
  if (param == M_MXFAST && (value < 0 || (size_t)value > 80 * sizeof(size_t) / 4)) return 0;
  return 1;
}

/* mallinfo2's fields from a snapshot */
static void mallinfo_of(const ms_stats_t *st, struct mallinfo2 *mi) {
  memset(mi, 0, sizeof *mi);
  /* (the large blocks' share of the mapped bytes is not all counted there: never a wrapped difference) */
  mi->arena = st->heap_mapped_bytes > st->heap_large_bytes ? st->heap_mapped_bytes - st->heap_large_bytes : 0;
  mi->hblkhd = st->heap_large_bytes + st->spill_bytes; /* spilled blocks are mapped regions too (file-backed) */
  mi->hblks = st->spill_blocks;
  mi->uordblks = st->heap_allocated_bytes - st->heap_large_bytes;
  mi->fordblks = st->heap_cached_bytes;
}

/* a snapshot on the stack, while another call holds the static one */
static MSI_NOINLINE void mallinfo_on_stack(struct mallinfo2 *mi) {
  ms_stats_t st;
  ms_stats_get(&st, sizeof st);
  mallinfo_of(&st, mi);
}

/* The snapshot is a static one that one call at a time takes (a flag, never waited for): glibc's mallinfo2 needs
   almost no stack, and programs call it where little is left, in a signal handler on an alternate stack of
   SIGSTKSZ (8 KiB, less the signal frame: 3.5 KiB with AVX-512's state). A call that finds it taken, by another
   thread or by the handler of a signal that interrupted one (also in a child forked meanwhile, where the flag stays
   set), takes one on its stack (5.6 KiB). */
MS_API struct mallinfo2 mallinfo2(void) {
  static atomic_flag busy = ATOMIC_FLAG_INIT;
  MSI_COLD_BSS static ms_stats_t snapshot;
  struct mallinfo2 mi;
  if (!atomic_flag_test_and_set_explicit(&busy, memory_order_acquire)) {
    ms_stats_get(&snapshot, sizeof snapshot);
    mallinfo_of(&snapshot, &mi);
    atomic_flag_clear_explicit(&busy, memory_order_release);
  } else {
    mallinfo_on_stack(&mi);
  }
  ms_space_info_t ps; /* MEMSPACE_SPACE_INITIAL: the process space serves malloc, its blocks are the program's */
  if (msi_proc_space_info(&ps)) mi.arena += ps.size, mi.uordblks += ps.used, mi.fordblks += ps.free;
  return mi;
}
static struct mallinfo2 own_mallinfo2(void) OWN_COPY(mallinfo2) __attribute__((alias("mallinfo2")));

MS_API void malloc_stats(void) { ms_stats_print(NULL, NULL, 0); }

/* malloc_info writes into the caller's FILE: the one place the library touches stdio (it is the interface). Options
   other than 0 answer EINVAL as the return value, errno untouched, as glibc's does (a NULL FILE too, which glibc's
   would crash on); a failed write answers -1. */
MS_API int malloc_info(int options, FILE *fp) {
  if (options != 0 || !fp) return EINVAL;
  ms_stats_t st;
  ms_stats_get(&st, sizeof st);
  char buf[1024];
  msi_snprintf(buf, sizeof buf,
               "<malloc version=\"memspace-1\">\n"
               "<total type=\"allocated\" size=\"%llu\"/>\n"
               "<total type=\"mapped\" size=\"%llu\"/>\n"
               "<total type=\"cached\" size=\"%llu\"/>\n"
               "<total type=\"large\" size=\"%llu\"/>\n"
               "<total type=\"returned\" size=\"%llu\"/>\n"
               "<system type=\"current\" size=\"%llu\"/>\n"
               "</malloc>\n",
               (unsigned long long)st.heap_allocated_bytes, (unsigned long long)st.heap_mapped_bytes,
               (unsigned long long)st.heap_cached_bytes, (unsigned long long)st.heap_large_bytes,
               (unsigned long long)st.heap_returned_bytes, (unsigned long long)st.heap_mapped_bytes);
  return fputs(buf, fp) < 0 ? -1 : 0;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* C++ operators                                                                                                */
/* ------------------------------------------------------------------------------------------------------------ */

typedef void new_handler_t(void);

/* A symbol of the C++ runtime that a library loaded with dlopen brought in (a C++ extension module of Python, a
   plugin of a C program): RTLD_LOCAL keeps it out of the global scope, and a runtime loaded after start-up is
   missing from this library's relocations. Searched in the scope of the object `caller` lies in (the code that
   called operator new: its runtime, also one linked into it with -static-libstdc++), then in the shared runtimes.
   Looked up when memory runs out only; the handles stay open, so the function found stays valid. `own`: this
   library's definition of the same name, never the answer (a module linked with -lmemspace has it in scope). */
static void *runtime_sym(const char *name, const void *caller, const void *own) {
  static const char *const runtimes[] = {"libstdc++.so.6", "libc++.so.1"};
  Dl_info di;
  void *f = NULL, *h;
  if (caller && dladdr(caller, &di) && di.dli_fname && *di.dli_fname &&
      (h = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD)))
    f = dlsym(h, name);
  for (size_t i = 0; (!f || f == own) && i < MSI_ARRAY_LEN(runtimes); i++)
    if ((h = dlopen(runtimes[i], RTLD_LAZY | RTLD_NOLOAD))) f = dlsym(h, name);
  return f == own ? NULL : f;
}

/* the C++ runtime's `name`: in the global scope (a C++ program), else where runtime_sym finds it */
static void *cxx_sym(const char *name, const void *caller) {
  void *f = dlsym(RTLD_DEFAULT, name);
  return f ? f : runtime_sym(name, caller, NULL);
}

static new_handler_t *current_new_handler(const void *caller) {
  static new_handler_t *(*_Atomic get)(void);
  new_handler_t *(*g)(void) = atomic_load_explicit(&get, memory_order_acquire);
  if (!g) {
    g = (new_handler_t * (*)(void)) cxx_sym("_ZSt15get_new_handlerv", caller);
    if (!g) return NULL;
    atomic_store_explicit(&get, g, memory_order_release);
  }
  return g();
}

static void *own_new(size_t); /* this library's operator new(size_t) (an alias, below) */
static _Noreturn MSI_NOINLINE void throw_bad_alloc(const void *caller) {
  void (*t)(void) = (void (*)(void))cxx_sym("_ZSt17__throw_bad_allocv", caller);
  if (t) t();
  /* a runtime linked into the caller (-static-libstdc++) keeps only what the caller uses: its own operator new
     throws, given a size no malloc serves (the new-handler is unset when memspace throws) */
  void *(*n)(size_t) = (void *(*)(size_t))runtime_sym("_Znwm", caller, (const void *)own_new);
  if (n) n(SIZE_MAX);
  msi_error("operator new: out of memory and no C++ runtime to throw std::bad_alloc");
  abort();
}

/* `caller`: an address in the code that called operator new (runtime_sym), or NULL */
static MSI_NOINLINE void *new_slow(size_t size, size_t alignment, bool nothrow, const void *caller) {
  for (;;) {
    void *p = alignment > 16 ? msi_aligned_alloc(alignment, size) : msi_malloc(size);
    if (p) return p;
    new_handler_t *h = current_new_handler(caller);
    if (!h) {
      if (nothrow) return NULL;
      throw_bad_alloc(caller);
    }
    h();
  }
}

/* the throwing forms' slow path, also used by the nothrow forms (nothrow.cc) inside a catch clause */
void *msi_new_throwing(size_t size, size_t alignment, const void *caller);
void *msi_new_throwing(size_t size, size_t alignment, const void *caller) {
  return new_slow(size, alignment, false, caller);
}

/* Whether the C++ runtime's personality routine was bound when this library was loaded (nothrow.cc: without it its
   catch clause catches nothing). Tested here, in C: clang's C++ front end declares the personality routine of
   nothrow.cc's own functions itself, not weak, and folds the test of its address there to true. */
extern void __gxx_personality_v0(void) __attribute__((weak));
int msi_cxx_personality_bound(void);
int msi_cxx_personality_bound(void) { return &__gxx_personality_v0 != NULL; }

/* The nothrow forms when their catch clause has no personality routine (nothrow.cc: no C++ runtime in the global
   scope at start-up, a C program that loads C++ code with dlopen): the runtime's own nothrow form calls the
   throwing one (new_slow: the new-handler, then std::bad_alloc) and catches. Without a runtime no new-handler can
   be set: NULL. `alignment` 0 for the unaligned forms. */
/* (nothrow.cc: the nothrow forms under hidden names) */
extern void *own_new_nt(size_t, const void *) __asm__("msi_own_new_nothrow") __attribute__((visibility("hidden")));
extern void *own_new_al_nt(size_t, size_t, const void *) __asm__("msi_own_new_aligned_nothrow")
    __attribute__((visibility("hidden")));
void *msi_new_nothrow_elsewhere(size_t size, size_t alignment, const void *caller);
void *msi_new_nothrow_elsewhere(size_t size, size_t alignment, const void *caller) {
  static const char nothrow; /* std::nothrow_t is empty: any address stands for it */
  if (alignment) {
    void *(*f)(size_t, size_t, const void *) = (void *(*)(size_t, size_t, const void *))runtime_sym(
        "_ZnwmSt11align_val_tRKSt9nothrow_t", caller, (const void *)own_new_al_nt);
    if (f) return f(size, alignment, &nothrow);
  } else {
    void *(*f)(size_t, const void *) =
        (void *(*)(size_t, const void *))runtime_sym("_ZnwmRKSt9nothrow_t", caller, (const void *)own_new_nt);
    if (f) return f(size, &nothrow);
  }
  return new_slow(size, alignment, true, caller);
}

/* The throwing forms' slow path: every request but one msi_malloc_pop served (malloc's slow path, an aligned block),
   then new_slow on NULL. The operators pass their return address, their caller (new_impl is always inlined into
   them): a C++ runtime linked into the caller (-static-libstdc++) is found from it. Reading it costs the slow path
   one load, the fast path nothing; the slow path's own return address would be this library's wherever the
   compiler makes a call instead of a tail call (-O0, -O1, -Og), and operator new would abort instead of throwing.
   nothrow.cc does the same. A short process's first blocks come this way (its heap is empty): with the family */
static MSI_NOINLINE FAMILY_TEXT void *new_other(size_t size, size_t alignment, const void *from) {
  void *p = alignment > 16 ? msi_aligned_alloc(alignment, size) : msi_malloc_slow(size);
  return MSI_LIKELY(p != NULL) ? p : new_slow(size, alignment, false, from);
}

/* malloc's fast path is inline here (route_fast.h): a block popped off a free list is returned at once, with no
   call and no register saved; the rest is one tail call */
static inline __attribute__((always_inline)) void *new_impl(size_t size, size_t alignment) {
  if (alignment <= 16) {
    void *p = msi_malloc_pop(size);
    if (MSI_LIKELY(p != NULL)) return p;
  }
  return new_other(size, alignment, __builtin_return_address(0));
}

#define OP(name, sym) MS_API name __asm__(sym); FAMILY_TEXT name /* (FAMILY_TEXT: see the malloc family) */
OP(void *op_new(size_t n), "_Znwm") { return new_impl(n, 0); }
static void *own_new(size_t) __attribute__((alias("_Znwm")));
OP(void *op_new_arr(size_t n), "_Znam") { return new_impl(n, 0); }
/* an alignment that is not a power of two is undefined behaviour in C++; libstdc++ throws std::bad_alloc at once
   (without the new-handler), and so does memspace, also for one of 16 or less (which would take the plain path) */
static inline __attribute__((always_inline)) void *new_aligned(size_t size, size_t alignment) {
  if (MSI_UNLIKELY(!msi_is_pow2(alignment))) throw_bad_alloc(NULL);
  return new_impl(size, alignment);
}
OP(void *op_new_al(size_t n, size_t al), "_ZnwmSt11align_val_t") { return new_aligned(n, al); }
OP(void *op_new_arr_al(size_t n, size_t al), "_ZnamSt11align_val_t") { return new_aligned(n, al); }
/* the nothrow forms are in nothrow.cc: they need a catch clause; the delete forms are free's aliases (route.c) */
