/* libc_forward: a heap tracer preloaded ahead of the allocator, as gprofng's libgp-heap.so and glibc's
   libc_malloc_debug.so are: it defines malloc, calloc, realloc and free, counts, and forwards to glibc's internal
   names (__libc_malloc...). The rest of the family (posix_memalign, aligned_alloc, memalign, strdup's malloc...)
   comes from the allocator behind it, and the tracer's free must take those blocks too. */
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static unsigned long calls;
void *malloc(size_t n) { calls++; return __libc_malloc(n); }
void *calloc(size_t c, size_t n) { calls++; return __libc_calloc(c, n); }
void *realloc(void *p, size_t n) { calls++; return __libc_realloc(p, n); }
void free(void *p) { calls++; __libc_free(p); }
