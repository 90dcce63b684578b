/* SPDX-License-Identifier: MIT */
/* malloc_huge: every entry point of the malloc family with sizes, alignments and counts near SIZE_MAX, at
   SIZE_MAX/2 + 1 and with products that overflow, through the plain C names (run with libmemspace.so preloaded,
   in spill mode with a small threshold and in plain heap mode; it also passes against glibc). Each call must
   answer NULL (or an error code) with the errno POSIX and glibc give, leave a block passed in intact, and map
   nothing at address 0; afterwards ordinary allocations still work. Prints "ok malloc_huge" and exits 0. */
#include <errno.h>
#include <malloc.h>
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free" /* the block survives a realloc that failed: that is the test */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the sizes reach the calls unseen by the compiler (it would warn about, or fold, calls it can prove too large) */
static size_t opaque(size_t v) { volatile size_t x = v; return x; }
#define O(v) opaque((size_t)(v))

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); \
    printf("\n"); failures++; } } while (0)

/* true when some mapping starts at address 0 (or below the lowest address a program may map) */
static int low_mapping(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return 0;
  unsigned long lo;
  int found = 0;
  char line[512];
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "%lx-", &lo) == 1 && lo < 65536) found = 1;
  fclose(f);
  return found;
}

/* a pointer returned NULL with errno `want` (a call that must fail) */
#define EXPECT_NULL(call, want) do { errno = 0; void *r_ = (call); int e_ = errno; \
    CHECK(r_ == NULL, "%s returned %p (usable %zu), expected NULL", #call, r_, r_ ? malloc_usable_size(r_) : 0); \
    CHECK(r_ != NULL || e_ == (want), "%s: errno %d (%s), expected %d", #call, e_, strerror(e_), (want)); \
    CHECK(!low_mapping(), "%s mapped something at address 0", #call); } while (0)

static const size_t sizes[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 4095, SIZE_MAX - 8191, SIZE_MAX - 65535,
                               SIZE_MAX / 2 + 1, SIZE_MAX / 2, (size_t)PTRDIFF_MAX + 1, SIZE_MAX / 2 - 4095};

/* p holds n bytes of `v`: checks them, the block is still usable */
static void intact(const unsigned char *p, size_t n, int v, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)v) { CHECK(0, "%s: block changed at %zu", what, i); return; }
}

int main(void) {
  const size_t nsizes = sizeof sizes / sizeof sizes[0];
  for (size_t i = 0; i < nsizes; i++) {
    size_t s = O(sizes[i]);
    EXPECT_NULL(malloc(s), ENOMEM);
    EXPECT_NULL(calloc(1, s), ENOMEM);
    EXPECT_NULL(calloc(s, 1), ENOMEM);
    EXPECT_NULL(realloc(NULL, s), ENOMEM);
    EXPECT_NULL(aligned_alloc(4096, s), ENOMEM);
    EXPECT_NULL(aligned_alloc(64, s), ENOMEM);
    EXPECT_NULL(memalign(4096, s), ENOMEM);
    EXPECT_NULL(memalign(1 << 20, s), ENOMEM);
    EXPECT_NULL(valloc(s), ENOMEM);
    EXPECT_NULL(pvalloc(s), ENOMEM);
    EXPECT_NULL(reallocarray(NULL, s, 1), ENOMEM);
    size_t aligns[] = {8, 64, 4096, 1 << 20, (size_t)1 << 40, SIZE_MAX / 2 + 1};
    for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++) {
      void *p = (void *)0x1;
      int r = posix_memalign(&p, aligns[a], s);
      CHECK(r == ENOMEM, "posix_memalign(%zu, %#zx) = %d, expected ENOMEM", aligns[a], s, r);
      CHECK(p == (void *)0x1, "posix_memalign(%zu, %#zx) wrote %p on failure", aligns[a], s, p);
      CHECK(!low_mapping(), "posix_memalign mapped something at address 0");
    }
  }
  /* products that overflow */
  EXPECT_NULL(calloc(O(SIZE_MAX / 2 + 1), 2), ENOMEM);
  EXPECT_NULL(calloc(O((size_t)1 << 32), O((size_t)1 << 32)), ENOMEM);
  EXPECT_NULL(calloc(O(SIZE_MAX), O(SIZE_MAX)), ENOMEM);
  EXPECT_NULL(calloc(3, O(SIZE_MAX / 3 + 1)), ENOMEM);
  EXPECT_NULL(reallocarray(NULL, O(SIZE_MAX / 2 + 1), 2), ENOMEM);
  EXPECT_NULL(reallocarray(NULL, O((size_t)1 << 33), O((size_t)1 << 31)), ENOMEM);
  /* alignments POSIX refuses */
  {
    void *p = (void *)0x1;
    CHECK(posix_memalign(&p, 3, 64) == EINVAL, "posix_memalign(3) not EINVAL");
    CHECK(posix_memalign(&p, 4, 64) == EINVAL, "posix_memalign(4) not EINVAL (not a multiple of sizeof(void *))");
    CHECK(posix_memalign(&p, 0, 64) == EINVAL, "posix_memalign(0) not EINVAL");
    CHECK(posix_memalign(&p, O(SIZE_MAX), 64) == EINVAL, "posix_memalign(SIZE_MAX) not EINVAL");
    CHECK(p == (void *)0x1, "posix_memalign wrote on failure");
    EXPECT_NULL(memalign(O(SIZE_MAX), 64), EINVAL);
    EXPECT_NULL(memalign(O(SIZE_MAX / 2 + 2), 64), EINVAL);
    /* an alignment that is no power of two rounds up to 2^63 (memalign): no block that large, and no class */
    EXPECT_NULL(memalign(O(SIZE_MAX / 2), 8192), ENOMEM);
    EXPECT_NULL(aligned_alloc(O(SIZE_MAX / 2 + 1), 8192), ENOMEM);
  }
  /* blocks given to realloc keep their contents when the new size cannot be had: a small one, one over a
     spill threshold of 4K (spilled in spill mode), a large one */
  size_t held[] = {100, 8192, 5 << 20};
  for (size_t h = 0; h < sizeof held / sizeof held[0]; h++) {
    size_t n = held[h];
    unsigned char *p = malloc(n);
    CHECK(p != NULL, "malloc(%zu) failed: %s", n, strerror(errno));
    if (!p) continue;
    memset(p, 0x5a, n);
    for (size_t i = 0; i < nsizes; i++) {
      EXPECT_NULL(realloc(p, O(sizes[i])), ENOMEM);
      EXPECT_NULL(reallocarray(p, O(sizes[i]), 1), ENOMEM);
      EXPECT_NULL(reallocarray(p, 2, O(sizes[i])), ENOMEM);
    }
    EXPECT_NULL(reallocarray(p, O((size_t)1 << 33), O((size_t)1 << 33)), ENOMEM);
    intact(p, n, 0x5a, "after failed reallocs");
    CHECK(malloc_usable_size(p) >= n && malloc_usable_size(p) < n + (64 << 20), "usable size %zu of a %zu block",
          malloc_usable_size(p), n);
    free(p);
  }
  /* ordinary allocations still work, and their usable sizes are sane (a wrapped class would give 2^64 - 8 KiB) */
  size_t okay[] = {1, 4096, 8192, 65536, 3 << 20};
  for (size_t i = 0; i < sizeof okay / sizeof okay[0]; i++) {
    void *p = NULL;
    CHECK(posix_memalign(&p, 4096, okay[i]) == 0 && p, "posix_memalign(4096, %zu) failed", okay[i]);
    if (p) {
      CHECK((uintptr_t)p % 4096 == 0, "posix_memalign result %p misaligned", p);
      CHECK(malloc_usable_size(p) >= okay[i] && malloc_usable_size(p) < okay[i] + (64 << 20),
            "usable size %zu of a %zu block", malloc_usable_size(p), okay[i]);
      memset(p, 1, okay[i]);
      free(p);
    }
    unsigned char *q = calloc(okay[i], 1);
    CHECK(q && (uintptr_t)q >= 65536, "calloc(%zu) = %p", okay[i], (void *)q);
    if (q) { intact(q, okay[i], 0, "calloc"); free(q); }
  }
  CHECK(!low_mapping(), "something is mapped at address 0 at the end");
  if (failures) { printf("FAIL malloc_huge: %d failures\n", failures); return 1; }
  printf("ok malloc_huge\n");
  return 0;
}
