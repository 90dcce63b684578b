/* misuse.c: one heap misuse per run, for misuse_matrix.sh, which runs every case under glibc and under memspace
   (preloaded: default build, MEMSPACE_SECURE=1, the secure build). A plain malloc program: it never links
   memspace, so it measures whatever allocator is loaded.

   Usage: misuse CASE. Before the misuse the program prints "pointer 0x..." on stderr: the pointer a report must
   name. After it, the program checks what it can see: a live block handed out again, or malloc returning the
   wrong pointer, exits 10 ("unsafe"); nothing wrong seen exits 0 ("harmless"). An allocator that detects the
   misuse aborts (SIGABRT) with its message. Exit 2: unknown case; 3: the setup failed (no adjacent blocks). */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* through volatile pointers: the compiler neither warns about nor optimises the misuse away */
static void (*volatile free_fn)(void *) = free;
static void *(*volatile malloc_fn)(size_t) = malloc;
#define free(p) free_fn(p)
#define malloc(n) malloc_fn(n)

static void name(const void *p) {
  fprintf(stderr, "pointer %p\n", p);
  fflush(stderr);
}

static int unsafe(const char *what, const void *p) {
  fprintf(stderr, "UNSAFE: %s: %p\n", what, p);
  return 10;
}

/* n blocks of `size` must be distinct and none of them one of the `live` blocks */
static int check_fresh(size_t size, int n, void *const *live, int nlive) {
  void *got[16];
  for (int i = 0; i < n; i++) {
    got[i] = malloc(size);
    for (int j = 0; j < nlive; j++)
      if (got[i] == live[j]) return unsafe("malloc returned a live block", got[i]);
    for (int j = 0; j < i; j++)
      if (got[i] == got[j]) return unsafe("malloc returned the same block twice", got[i]);
  }
  return 0;
}

static void *thread_free(void *p) {
  free(p);
  return NULL;
}
static void free_in_thread(void *p) {
  pthread_t t;
  pthread_create(&t, NULL, thread_free, p);
  pthread_join(t, NULL);
}

static char global_area[256] __attribute__((aligned(64)));

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  /* the same thread; freed by another thread, then again by the owner; freed by the owner, then by another thread */
  int df = !strcmp(c, "double_free") ? 1 : !strcmp(c, "double_free_thread") ? 2 : !strcmp(c, "double_free_thread2") ? 3 : 0;
  if (df) {
    char *p = malloc(40), *keep = malloc(40);
    name(p);
    if (df == 2) free_in_thread(p);
    else free(p);
    if (df == 3) free_in_thread(p);
    else free(p);
    void *live[] = {keep};
    return check_fresh(40, 2, live, 1);
  }
  if (!strcmp(c, "interior")) {
    char *p = malloc(64);
    name(p + 16);
    free(p + 16);
    void *live[] = {p, p + 16};
    return check_fresh(64, 2, live, 2) ? 10 : check_fresh(48, 2, live + 1, 1);
  }
  if (!strcmp(c, "foreign")) { /* a static array's address */
    name(global_area + 64);
    free(global_area + 64);
    void *live[] = {global_area + 64};
    return check_fresh(64, 4, live, 1);
  }
  if (!strcmp(c, "stack")) {
    char buf[256] __attribute__((aligned(64)));
    memset(buf, 0, sizeof buf);
    name(buf + 64);
    free(buf + 64);
    void *live[] = {buf + 64};
    return check_fresh(64, 4, live, 1);
  }
  if (!strcmp(c, "never_allocated")) { /* a block start never handed out (glibc: "free(): invalid pointer") */
    char *p = malloc(16);
    name(p + 16);
    free(p + 16);
    void *live[] = {p};
    return check_fresh(16, 2, live, 1);
  }
  if (!strcmp(c, "overflow_1") || !strcmp(c, "overflow_16")) { /* into a free neighbour */
    char *a = malloc(16), *b = malloc(16);
    name(b);
    free(b);
    if (c[9] == '1' && c[10] == 0) strcpy(a, "0123456789abcdef"); /* 17 bytes: the NUL past a's 16 */
    else memset(a, 'x', 32);                                     /* 16 bytes past a's 16 */
    void *live[] = {a};
    return check_fresh(16, 2, live, 1);
  }
  if (!strcmp(c, "uaf_link")) { /* a freed block's link overwritten (glibc: "malloc(): unaligned tcache chunk") */
    void *p2 = malloc(32), *p1 = malloc(32);
    name(p1);
    free(p2);
    free(p1);
    *(void **)p1 = global_area;
    void *a = malloc(32), *b = malloc(32);
    if (a == (void *)global_area || b == (void *)global_area) return unsafe("malloc returned the planted pointer", b);
    return 0;
  }
  if (!strcmp(c, "uaf_link_live")) { /* a freed block's link redirected to a live block (one bit flipped, or more) */
    char *x = malloc(400), *y = malloc(400), *z = malloc(400);
    name(z);
    free(y);
    free(x);
    *(uintptr_t *)x ^= (uintptr_t)y ^ (uintptr_t)z; /* an encoded link (glibc's, memspace's) now points at z */
    void *live[] = {z};
    return check_fresh(400, 2, live, 1);
  }
  if (!strcmp(c, "direct_overflow")) { /* blocks mapped on their own (under ulimit -v): a write past b's end */
    char *a = malloc(9 << 20), *b = malloc(9 << 20);
    size_t ub = malloc_usable_size(b);
    name(b + ub);
    fprintf(stderr, "a %p b %p usable %zu: b's end %s a\n", (void *)a, (void *)b, ub, b + ub == a ? "is" : "is not");
    volatile char *end = b + ub;
    a[0] = 0;
    *end = 1; /* a guard page: SIGSEGV; else a's first byte, or unmapped memory */
    return a[0] ? unsafe("the write landed in the next block", a) : 0;
  }
  fprintf(stderr, "unknown case %s\n", c);
  return 2;
}
