/* libc_names_prog: glibc's internal names of the malloc family (__libc_malloc, __libc_free, ...), which a program or
   library calls directly (a heap tracer's or a debugging library's malloc forwards to them), used together with
   malloc's blocks as glibc allows: a block of malloc freed or reallocated with __libc_free/__libc_realloc and the
   reverse, each aligned form. Under glibc they are one allocator. Then the C library's own __libc_malloc and
   __libc_memalign, looked up in libc.so.6 (what a caller binds to where the allocator does not define them): their
   blocks go through the process's free, realloc and malloc_usable_size, and the C library's mallinfo2 counts them
   gone afterwards (handed back to it, not leaked: the test runs it with GLIBC_TUNABLES=glibc.malloc.tcache_count=0,
   since the C library's thread cache counts its blocks as in use). Prints "ok", or "FAIL: ..." and exits 1. */
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

static int bad;
static void fail(const char *what) {
  printf("FAIL: %s\n", what);
  bad = 1;
}
static int same(const unsigned char *p, int v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return 0;
  return 1;
}

/* the bytes the C library's own malloc holds, in its arenas and in blocks mapped on their own */
static size_t glibc_held(struct mallinfo2 (*info)(void)) {
  struct mallinfo2 mi = info();
  return mi.uordblks + mi.hblkhd;
}

static void glibc_blocks(const size_t *sizes, size_t count) {
  void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  void *(*g_malloc)(size_t) = libc ? (void *(*)(size_t))dlsym(libc, "__libc_malloc") : NULL;
  void *(*g_memalign)(size_t, size_t) = libc ? (void *(*)(size_t, size_t))dlsym(libc, "__libc_memalign") : NULL;
  struct mallinfo2 (*g_info)(void) = libc ? (struct mallinfo2(*)(void))dlsym(libc, "mallinfo2") : NULL;
  if (!g_malloc || !g_memalign || !g_info) {
    fail("libc.so.6's __libc_malloc, __libc_memalign or mallinfo2 not found");
    return;
  }
  free(g_malloc(16)); /* the C library's first malloc takes its thread cache's own block */
  size_t before = glibc_held(g_info);
  for (size_t i = 0; i < count; i++) {
    size_t n = sizes[i];
    unsigned char *p = g_malloc(n);
    if (!p) { fail("the C library's __libc_malloc"); return; }
    memset(p, 0x33, n);
    if (malloc_usable_size(p) < n) fail("malloc_usable_size of the C library's block");
    free(p);
    p = g_malloc(n);
    if (!p) { fail("the C library's __libc_malloc"); return; }
    memset(p, 0x44, n);
    unsigned char *q = realloc(p, 2 * n); /* moves out of the C library's heap, bytes kept */
    if (!q || !same(q, 0x44, n)) fail("realloc of the C library's block lost its bytes");
    free(q);
    p = g_malloc(n);
    if (!p) { fail("the C library's __libc_malloc"); return; }
    memset(p, 0x55, n);
    q = realloc(p, n / 2);
    if (!q || !same(q, 0x55, n / 2)) fail("realloc (smaller) of the C library's block lost its bytes");
    free(q);
    void *a = g_memalign(4096, n);
    if (!a || (uintptr_t)a % 4096) { fail("the C library's __libc_memalign"); return; }
    if (malloc_usable_size(a) < n) fail("malloc_usable_size of the C library's __libc_memalign block");
    free(a);
  }
  if (glibc_held(g_info) != before) fail("the C library's blocks freed through free/realloc are still held (leaked)");
}

int main(void) {
  static const size_t sizes[] = {24, 1000, 70000, 300000, 3 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = sizes[i];
    unsigned char *p = malloc(n); /* malloc's block to __libc_realloc and __libc_free */
    if (!p) return 2;
    memset(p, 0x11, n);
    unsigned char *q = __libc_realloc(p, 2 * n);
    if (!q || !same(q, 0x11, n)) fail("__libc_realloc of malloc's block lost its bytes");
    __libc_free(q);
    p = __libc_malloc(n); /* and the reverse */
    if (!p) return 2;
    memset(p, 0x22, n);
    if (malloc_usable_size(p) < n) fail("malloc_usable_size of __libc_malloc's block");
    q = realloc(p, n / 2);
    if (!q || !same(q, 0x22, n / 2)) fail("realloc of __libc_malloc's block lost its bytes");
    free(q);
    void *a = NULL;
    if (posix_memalign(&a, 4096, n)) return 2;
    __libc_free(a);
    a = aligned_alloc(64, n);
    __libc_free(a);
    p = __libc_calloc(1, n);
    if (!p || !same(p, 0, n)) fail("__libc_calloc not zeroed");
    free(p);
    a = __libc_memalign(256, n);
    if (!a || (uintptr_t)a % 256) fail("__libc_memalign");
    free(a);
    a = __libc_valloc(n);
    if (!a || (uintptr_t)a % 4096) fail("__libc_valloc");
    free(a);
    a = __libc_pvalloc(n);
    if (!a || (uintptr_t)a % 4096) fail("__libc_pvalloc");
    free(a);
  }
  glibc_blocks(sizes, sizeof sizes / sizeof sizes[0]);
  printf("%s\n", bad ? "failed" : "ok");
  return bad;
}
