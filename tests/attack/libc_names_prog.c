/* libc_names_prog: glibc's internal names of the malloc family (__libc_malloc, __libc_free, ...), which a program or
   library calls directly (a heap tracer's or a debugging library's malloc forwards to them), and its deprecated
   mallinfo (and __libc_mallinfo, __libc_mallopt), used together with malloc's blocks as glibc allows: a block of malloc freed or reallocated with
   __libc_free/__libc_realloc and the reverse, each aligned form, mallinfo counting the live bytes. Under glibc they
   are one allocator. Prints "ok", or "FAIL: ..." and exits 1. */
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
extern struct mallinfo __libc_mallinfo(void);
extern int __libc_mallopt(int, int);

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
  void *live = malloc(1 << 20);
  memset(live, 1, 1 << 20);
  struct mallinfo mi = mallinfo();
  if ((size_t)mi.uordblks + (size_t)mi.hblkhd < (1 << 20)) fail("mallinfo does not count a live 1 MiB block");
  mi = __libc_mallinfo();
  if ((size_t)mi.uordblks + (size_t)mi.hblkhd < (1 << 20)) fail("__libc_mallinfo does not count a live 1 MiB block");
  if (__libc_mallopt(M_TRIM_THRESHOLD, 1 << 20) != 1) fail("__libc_mallopt(M_TRIM_THRESHOLD) refused");
  free(live);
  printf("%s\n", bad ? "failed" : "ok");
  return bad;
}
