/* oversize_prog: every allocation entry point of the C library and C++ (and memspace's ms_* API when it is
   loaded) called with sizes, counts and alignments that cannot be served: SIZE_MAX, SIZE_MAX-8191, 2^63,
   products that overflow, alignments of 2^63 and not powers of two. One line per call says what came back (NULL
   and errno, the return code, a thrown std::bad_alloc, or "ok" for a block that is also checked to be usable
   and aligned). oversize.sh runs it without memspace (glibc's answers) and under LD_PRELOAD in each mode, and
   compares the lines. Beyond the lines, the program fails (exit 1, "FAIL: ...") when a call returns a block for
   an impossible size, when an ms_* function answers otherwise than its C library counterpart, or when anything
   is mapped at address 0. */
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <initializer_list>
#include <malloc.h>
#include <new>
#include <unistd.h>

static int failures;
#define FAIL(...) (std::fprintf(stderr, "FAIL: " __VA_ARGS__), std::fputc('\n', stderr), failures++)

/* sizes through a volatile: the compiler must not fold a call with a constant it knows to be impossible */
static volatile size_t v_max = SIZE_MAX, v_max8k = SIZE_MAX - 8191, v_half = SIZE_MAX / 2 + 1,
                       v_p63 = (size_t)1 << 63, v_big = ((size_t)1 << 62) + 1, v_16 = 16, v_3 = 3, v_24 = 24,
                       v_sqrt = ((size_t)1 << 32) + 1;

static const char *errname(int e) {
  switch (e) {
  case 0: return "0";
  case ENOMEM: return "ENOMEM";
  case EINVAL: return "EINVAL";
  default: return "other";
  }
}

/* a block returned where one may be (a legal request): usable for `size` bytes, aligned */
static void check_block(const char *what, void *p, size_t size, size_t align) {
  if ((uintptr_t)p < 65536) FAIL("%s: block at %p", what, p);
  else if (align && (uintptr_t)p % align) FAIL("%s: %p not aligned to %zu", what, p, align);
  else std::memset(p, 0xA5, size);
}

/* the line of a pointer-returning call: "name: NULL ERRNO" or "name: ok" */
static int result(const char *what, void *p, int e, size_t need) {
  if (p) {
    if (need > ((size_t)1 << 62)) FAIL("%s: returned %p for %zu bytes", what, p, need);
    std::printf("%s: ok\n", what);
    return -1;
  }
  std::printf("%s: NULL %s\n", what, errname(e));
  return e;
}

#define CALL(label, expr, need)                                                                                  \
  do {                                                                                                          \
    errno = 0;                                                                                                  \
    void *p_ = (expr);                                                                                          \
    int e_ = errno;                                                                                             \
    last = result(label, p_, e_, need);                                                                         \
    if (p_) free(p_);                                                                                           \
  } while (0)

/* memspace's API, when loaded (LD_PRELOAD): its answer must be the C library entry point's (`last`) */
typedef void *malloc_t(size_t);
typedef void *calloc_t(size_t, size_t);
typedef void *realloc_t(void *, size_t);
typedef void *aligned_t(size_t, size_t);
typedef void free_t(void *);
static void ms_same(const char *what, void *p, int e, int last) {
  if (p) { FAIL("ms_%s: returned %p", what, p); return; }
  if (e != last) FAIL("ms_%s: NULL errno %s, the C library entry point: %s", what, errname(e), errname(last));
}
#define MS_CALL(label, fn, ...)                                                                                  \
  do {                                                                                                          \
    if (fn) {                                                                                                   \
      errno = 0;                                                                                                \
      void *p_ = fn(__VA_ARGS__);                                                                               \
      ms_same(label, p_, errno, last);                                                                          \
    }                                                                                                           \
  } while (0)

template <typename F> static void cxx(const char *what, F f) {
  try {
    void *p = f();
    if (!p) { std::printf("%s: NULL\n", what); return; }
    std::printf("%s: ok\n", what);
    FAIL("%s: returned %p", what, p);
  } catch (const std::bad_alloc &) {
    std::printf("%s: bad_alloc\n", what);
  }
}

int main() {
  /* through dlsym: the program never links the allocator under test (glibc's run has none of these) */
  malloc_t *ms_malloc = (malloc_t *)dlsym(RTLD_DEFAULT, "ms_malloc");
  calloc_t *ms_calloc = (calloc_t *)dlsym(RTLD_DEFAULT, "ms_calloc");
  realloc_t *ms_realloc = (realloc_t *)dlsym(RTLD_DEFAULT, "ms_realloc");
  aligned_t *ms_aligned_alloc = (aligned_t *)dlsym(RTLD_DEFAULT, "ms_aligned_alloc");
  free_t *ms_free = (free_t *)dlsym(RTLD_DEFAULT, "ms_free");
  int last = 0;
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  const struct { const char *name; volatile size_t *v; } sizes[] = {
    {"SIZE_MAX", &v_max}, {"SIZE_MAX-8191", &v_max8k}, {"SIZE_MAX/2+1", &v_half}, {"2^63", &v_p63},
    {"2^62+1", &v_big},
  };
  char label[128];
  for (const auto &s : sizes) {
    size_t n = *s.v;
#define L(fmt) (std::snprintf(label, sizeof label, fmt, s.name), label)
    CALL(L("malloc(%s)"), malloc(n), n);
    MS_CALL(label, ms_malloc, n);
    CALL(L("calloc(1,%s)"), calloc(1, n), n);
    MS_CALL(label, ms_calloc, 1, n);
    CALL(L("calloc(%s,1)"), calloc(n, 1), n);
    MS_CALL(label, ms_calloc, n, 1);
    CALL(L("valloc(%s)"), valloc(n), n);
    CALL(L("pvalloc(%s)"), pvalloc(n), n);
    CALL(L("memalign(64,%s)"), memalign(64, n), n);
    CALL(L("memalign(4096,%s)"), memalign(4096, n), n);
    CALL(L("memalign(2MiB,%s)"), memalign((size_t)2 << 20, n), n);
    CALL(L("aligned_alloc(64,%s)"), aligned_alloc(64, n), n);
    MS_CALL(label, ms_aligned_alloc, 64, n);
    CALL(L("aligned_alloc(1MiB,%s)"), aligned_alloc((size_t)1 << 20, n), n);
    MS_CALL(label, ms_aligned_alloc, (size_t)1 << 20, n);
    CALL(L("reallocarray(NULL,1,%s)"), reallocarray(NULL, 1, n), n);
    CALL(L("realloc(NULL,%s)"), realloc(NULL, n), n);
    MS_CALL(label, ms_realloc, NULL, n);
    {
      void *r = NULL;
      errno = 0;
      int rc = posix_memalign(&r, 64, n);
      std::printf("%s: %s\n", L("posix_memalign(64,%s)"), errname(rc));
      if (!rc) { FAIL("%s returned a block", label); free(r); }
    }
    /* a live block (small, then large) realloc'd to the size: NULL + ENOMEM, the block unchanged */
    for (size_t have : {(size_t)100, (size_t)200000}) {
      char *b = (char *)malloc(have);
      if (!b) { FAIL("malloc(%zu)", have); continue; }
      std::memset(b, 0x5A, have);
      std::snprintf(label, sizeof label, "realloc(%zu-byte block,%s)", have, s.name);
      errno = 0;
      void *q = realloc(b, n);
      last = result(label, q, errno, n);
      if (q) { /* (a failure reported by result: the block lives on at q) */
        free(q);
        continue;
      }
      if (b[0] != 0x5A || b[have - 1] != 0x5A) FAIL("%s: the block changed", label);
      std::snprintf(label, sizeof label, "reallocarray(%zu-byte block,2,%s)", have, s.name);
      errno = 0;
      q = reallocarray(b, 2, n / 2 + 1);
      result(label, q, errno, n);
      if (q) {
        free(q);
        continue;
      }
      if (ms_realloc) {
        std::snprintf(label, sizeof label, "realloc(%zu-byte block,%s)", have, s.name);
        errno = 0;
        q = ms_realloc(b, n);
        ms_same(label, q, errno, last);
        if (q) {
          free(q);
          continue;
        }
      }
      free(b);
    }
    cxx(L("new(%s)"), [n] { return ::operator new(n); });
    cxx(L("new[](%s)"), [n] { return ::operator new[](n); });
    cxx(L("new(%s,align 64)"), [n] { return ::operator new(n, std::align_val_t(64)); });
    cxx(L("new[](%s,align 4096)"), [n] { return ::operator new[](n, std::align_val_t(4096)); });
    cxx(L("new(%s,nothrow)"), [n] { return ::operator new(n, std::nothrow); });
    cxx(L("new[](%s,nothrow)"), [n] { return ::operator new[](n, std::nothrow); });
    cxx(L("new(%s,align 64,nothrow)"), [n] { return ::operator new(n, std::align_val_t(64), std::nothrow); });
    cxx(L("new[](%s,align 64,nothrow)"), [n] { return ::operator new[](n, std::align_val_t(64), std::nothrow); });
#undef L
  }

  /* products that overflow */
  const struct { const char *name; size_t a, b; } prods[] = {
    {"2^32+1,2^32+1", v_sqrt, v_sqrt}, {"SIZE_MAX,2", v_max, 2}, {"2,2^63", 2, v_p63}, {"16,SIZE_MAX/8", 16, v_max / 8},
  };
  for (const auto &m : prods) {
    std::snprintf(label, sizeof label, "calloc(%s)", m.name);
    CALL(label, calloc(m.a, m.b), SIZE_MAX);
    MS_CALL(label, ms_calloc, m.a, m.b);
    std::snprintf(label, sizeof label, "reallocarray(NULL,%s)", m.name);
    CALL(label, reallocarray(NULL, m.a, m.b), SIZE_MAX);
    void *b = malloc(50);
    std::snprintf(label, sizeof label, "reallocarray(block,%s)", m.name);
    errno = 0;
    void *q = reallocarray(b, m.a, m.b);
    result(label, q, errno, SIZE_MAX);
    free(q ? q : b);
  }

  /* alignments: 2^63, not powers of two, zero; small sizes */
  const struct { const char *name; volatile size_t *v; } aligns[] = {
    {"2^63", &v_p63}, {"3", &v_3}, {"24", &v_24}, {"SIZE_MAX", &v_max}, {"2^62+1", &v_big},
  };
  for (const auto &a : aligns) {
    size_t al = *a.v;
#define L(fmt) (std::snprintf(label, sizeof label, fmt, a.name), label)
    {
      errno = 0;
      void *p = memalign(al, v_16);
      int e = errno;
      if (p) check_block(L("memalign(%s,16)"), p, 16, al > ((size_t)1 << 20) ? 0 : 8);
      result(L("memalign(%s,16)"), p, e, al > ((size_t)1 << 40) ? SIZE_MAX : 0);
      if (p) free(p);
    }
    {
      errno = 0;
      void *p = aligned_alloc(al, v_16);
      int e = errno;
      last = result(L("aligned_alloc(%s,16)"), p, e, 0);
      if (p) { check_block(label, p, 16, 8); free(p); }
      MS_CALL(label, ms_aligned_alloc, al, v_16);
    }
    for (volatile size_t *sz : {&v_16, &v_max}) {
      void *r = NULL;
      std::snprintf(label, sizeof label, "posix_memalign(%s,%s)", a.name, sz == &v_16 ? "16" : "SIZE_MAX");
      int rc = posix_memalign(&r, al, *sz);
      std::printf("%s: %s\n", label, errname(rc));
      if (!rc) { check_block(label, r, *sz, al); free(r); }
    }
    cxx(L("new(16,align %s)"), [al] { return ::operator new(v_16, std::align_val_t(al)); });
    cxx(L("new[](16,align %s)"), [al] { return ::operator new[](v_16, std::align_val_t(al)); });
    cxx(L("new(16,align %s,nothrow)"), [al] { return ::operator new(v_16, std::align_val_t(al), std::nothrow); });
#undef L
  }
  {
    void *r = NULL;
    std::printf("posix_memalign(0,16): %s\n", errname(posix_memalign(&r, 0, v_16)));
    std::printf("posix_memalign(4,16): %s\n", errname(posix_memalign(&r, 4, v_16)));
  }
  std::printf("malloc_usable_size(NULL): %zu\n", malloc_usable_size(NULL));

  /* nothing at address 0 */
  FILE *f = std::fopen("/proc/self/maps", "r");
  if (f) {
    char line[512];
    while (std::fgets(line, sizeof line, f))
      if (std::strtoull(line, NULL, 16) < 65536) FAIL("mapped at 0: %s", line);
    std::fclose(f);
  }
  /* still working */
  void *ok = malloc(100), *okl = malloc((size_t)3 << 20);
  if (!ok || !okl) FAIL("malloc after the refusals");
  free(ok);
  free(okl);
  if (ms_malloc && ms_free) ms_free(ms_malloc(100));
  (void)ps;
  std::fprintf(stderr, "oversize_prog: %d failure(s)%s\n", failures, ms_malloc ? " (memspace loaded)" : "");
  return failures ? 1 : 0;
}
