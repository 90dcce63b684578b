/* errno_prog: the malloc family's errno as glibc sets it. posix_memalign returns its error and leaves errno as it
   was, on success and on failure; the others return NULL with errno ENOMEM (no memory for the size) or EINVAL (an
   alignment no allocator can give). Run under `memspace run` in each mode (heap, spill, process space). */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed;
/* an alignment out of the compiler's sight: clang assumes a constant one (alloc_align) and its optimizer may fail
   on one that is not a power of two or too large */
static size_t hidden(size_t a) {
  volatile size_t v = a;
  return v;
}
#define CHECK(cond)                                                                                           \
  do {                                                                                                        \
    if (!(cond)) { printf("FAIL line %d: %s (errno %d)\n", __LINE__, #cond, errno); failed = 1; }             \
  } while (0)

/* expr returns NULL and sets errno to e */
#define NULL_ERRNO(expr, e)                                                                                   \
  do {                                                                                                        \
    errno = 0;                                                                                                \
    void *p_ = (expr);                                                                                        \
    int e_ = errno;                                                                                           \
    if (p_ != NULL || e_ != (e)) {                                                                            \
      printf("FAIL line %d: %s: %p errno %d, expected NULL errno %d\n", __LINE__, #expr, p_, e_, (e));        \
      failed = 1;                                                                                             \
    }                                                                                                         \
    free(p_);                                                                                                 \
  } while (0)

int main(void) {
  void *p = NULL;
  /* posix_memalign: errno untouched */
  errno = EDOM;
  CHECK(posix_memalign(&p, 64, 100) == 0 && p && ((uintptr_t)p & 63) == 0);
  CHECK(errno == EDOM);
  free(p);
  void *keep = (void *)0x1234;
  p = keep;
  errno = EDOM;
  CHECK(posix_memalign(&p, 64, SIZE_MAX - 4096) == ENOMEM);
  CHECK(errno == EDOM);
  CHECK(p == keep); /* *out is unchanged on failure */
  errno = EDOM;
  CHECK(posix_memalign(&p, 4096, SIZE_MAX / 2) == ENOMEM);
  CHECK(errno == EDOM);
  errno = EDOM;
  CHECK(posix_memalign(&p, hidden(24), 100) == EINVAL); /* not a power of two */
  CHECK(errno == EDOM);
  errno = EDOM;
  CHECK(posix_memalign(&p, hidden(4), 100) == EINVAL); /* not a multiple of sizeof(void *) */
  CHECK(errno == EDOM);
  errno = EDOM;
  CHECK(posix_memalign(&p, hidden(0), 100) == EINVAL);
  CHECK(errno == EDOM);
  errno = EDOM;
  CHECK(posix_memalign(&p, hidden((size_t)1 << 63), 1) == ENOMEM);
  CHECK(errno == EDOM);
  CHECK(p == keep);

  /* the others: NULL + ENOMEM or EINVAL */
  NULL_ERRNO(malloc(SIZE_MAX), ENOMEM);
  NULL_ERRNO(malloc(SIZE_MAX - 4095), ENOMEM);
  NULL_ERRNO(calloc(SIZE_MAX / 2, 3), ENOMEM);
  NULL_ERRNO(calloc(1, SIZE_MAX), ENOMEM);
  NULL_ERRNO(aligned_alloc(64, SIZE_MAX), ENOMEM);
  NULL_ERRNO(aligned_alloc(4096, SIZE_MAX - 100), ENOMEM);
  NULL_ERRNO(aligned_alloc(hidden(24), 100), EINVAL);
  NULL_ERRNO(aligned_alloc(hidden(0), 100), EINVAL);
  NULL_ERRNO(memalign(64, SIZE_MAX), ENOMEM);
  NULL_ERRNO(memalign(hidden(SIZE_MAX / 2 + 2), 1), EINVAL);
  NULL_ERRNO(memalign(hidden(SIZE_MAX), 1), EINVAL);
  NULL_ERRNO(memalign(hidden((size_t)1 << 63), 1), ENOMEM);
  NULL_ERRNO(valloc(SIZE_MAX), ENOMEM);
  NULL_ERRNO(valloc(SIZE_MAX - 8192), ENOMEM);
  NULL_ERRNO(pvalloc(SIZE_MAX), ENOMEM);
  NULL_ERRNO(pvalloc(SIZE_MAX - 8192), ENOMEM);

  /* realloc/reallocarray failure: NULL + ENOMEM, the block intact */
  char *b = malloc(32);
  CHECK(b != NULL);
  memset(b, 'x', 32);
  NULL_ERRNO(realloc(b, SIZE_MAX), ENOMEM);
  NULL_ERRNO(realloc(b, SIZE_MAX - 4095), ENOMEM);
  NULL_ERRNO(reallocarray(b, SIZE_MAX / 2, 3), ENOMEM);
  NULL_ERRNO(reallocarray(b, (size_t)1 << 32, (size_t)1 << 32), ENOMEM);
  CHECK(b[0] == 'x' && b[31] == 'x' && malloc_usable_size(b) >= 32);
  free(b);

  /* success keeps the caller's errno (C11 7.5p3 forbids zero; glibc keeps it): a realloc that grows, moves and
     shrinks a block, across the spill threshold both ways (attack_errno_spill: 64K), large blocks grown where an
     in-place try is refused, and the frees */
  char *g = malloc(200000);
  CHECK(g != NULL);
  static const size_t steps[] = {250000,  2000000, 6000000,  100000,    1000,    300000,
                                     70000,   3000000, 17825792, 67108864, 209715200, 5000000};
  for (size_t i = 0; g && i < sizeof steps / sizeof steps[0]; i++) {
    errno = EDOM;
    char *h = realloc(g, steps[i]);
    /* (a fixed process space of 16 MiB refuses the largest: NULL + ENOMEM, the block kept) */
    CHECK(h ? errno == EDOM : steps[i] > 16u << 20 && errno == ENOMEM);
    if (h) g = h;
  }
  errno = EDOM;
  free(g);
  CHECK(errno == EDOM);

  /* every allocation form of large blocks keeps the caller's errno when it succeeds, also where it reuses cached
     pages of other sizes (in-place mremap probes refused on the way) */
  static const size_t big[] = {233835740, 1 << 20, 40000000, 3 << 20, 106000000, 17 << 20, 5000000, 64 << 20};
  for (int r = 0; r < 3; r++)
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
      size_t n = big[i] + (size_t)r * 4096;
      void *v[4];
      errno = EDOM;
      v[0] = malloc(n);
      CHECK(!v[0] || errno == EDOM);
      v[1] = calloc(1, n);
      CHECK(!v[1] || errno == EDOM);
      v[2] = memalign(4096, n);
      CHECK(!v[2] || errno == EDOM);
      v[3] = aligned_alloc(64, n);
      CHECK(!v[3] || errno == EDOM);
      for (int k = 0; k < 4; k++) free(v[k]);
      errno = EDOM;
    }

  /* memalign rounds an alignment that is not a power of two up, as glibc does */
  errno = EDOM;
  p = memalign(24, 100);
  CHECK(p && ((uintptr_t)p & 31) == 0);
  free(p);
  /* valloc and pvalloc: page aligned; pvalloc(0) is one page */
  p = valloc(1);
  CHECK(p && ((uintptr_t)p & 4095) == 0);
  free(p);
  p = pvalloc(0);
  CHECK(p && ((uintptr_t)p & 4095) == 0 && malloc_usable_size(p) >= 4096);
  free(p);
  if (!failed) printf("errno_prog: all checks passed\n");
  return failed;
}
