/* test_space_model: a seeded model-based run over 24 spaces at once, as a caller with memspace.h alone sees them:
   created and in caller memory, fixed and expanding, at start and at first allocation, thread-safe, MS_SPACE_ZERO;
   random malloc/calloc/aligned/realloc/free from 1 B to twice a space's size, wrong frees (another space's block,
   interior, double), destroy with live blocks and create again, expand and shrink. The test keeps every live
   block and checks after each call what the header promises: contents kept (realloc too), no overlap, usable size
   the power of two, zeroing; every 2,000 calls ms_space_check, ms_space_walk and ms_space_info agree with the model
   and ms_stats_get's space_count, space_bytes and space_used_bytes with the sum over the spaces; every failure of
   an unexpanded fixed space meets docs/spaces.md's lemma (every aligned frame of the block's size holds a live
   byte). Then two threads share the thread-safe spaces. MS_FUZZ_SEED picks another seed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <unistd.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include "memspace.h"

static uint64_t rs;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
static size_t rsize(size_t max) { /* log-uniform in [1, max] */
  int b = 1 + (int)(rnd() % 64); size_t lim = b >= 64 ? SIZE_MAX : ((size_t)1 << b);
  if (lim > max) lim = max;
  return 1 + rnd() % lim;
}
#define FAIL(...) do { fprintf(stdout, "seed %llu op %lu: ", (unsigned long long)seed, opno); fail_msg(__VA_ARGS__); } while (0)
static unsigned long long seed; static unsigned long opno;

typedef struct { unsigned char *p; size_t req, bsz; unsigned char tag; } blk_t;
typedef struct { ms_space_t *s; ms_space_config_t cfg; int in; void *mem; size_t memsz; blk_t *b; size_t n, cap; int fixed; } sp_t;
enum { NS = 24 };
static sp_t S[NS];
static size_t pow2(size_t n) { size_t b = 16; while (b < n) b <<= 1; return b; }
static void fill(blk_t *b) { for (size_t i = 0; i < b->req; i++) b->p[i] = (unsigned char)(b->tag + i * 7); }
static void chk(blk_t *b, const char *what) {
  size_t n = b->req;
  for (size_t i = 0; i < n; i++) if (b->p[i] != (unsigned char)(b->tag + i * 7)) FAIL("%s: content of %p (req %zu) byte %zu", what, (void*)b->p, b->req, i);
}
static int zero_all(const unsigned char *p, size_t n) { for (size_t i = 0; i < n; i++) if (p[i]) return 0; return 1; }


static void mk(int i) {
  sp_t *s = &S[i];
  memset(&s->cfg, 0, sizeof s->cfg);
  s->n = 0;
  s->in = rnd() % 5 == 0;
  unsigned fl = 0;
  if (rnd() % 3 == 0) fl |= MS_SPACE_THREAD_SAFE;
  if (rnd() % 4 == 0) fl |= MS_SPACE_ZERO;
  size_t init = 4096u << (rnd() % 11); /* 4K .. 4M */
  if (rnd() % 3 == 0) init += (rnd() % 64) * 4096;
  if (s->in) {
    s->memsz = init + (rnd() % 4096);
    s->mem = mmap(NULL, s->memsz, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
    size_t off = rnd() % 3 == 0 ? (rnd() % 64) : 0;
    s->s = ms_space_create_in((char*)s->mem + off, s->memsz - off, fl);
    if (!s->s && errno == EINVAL && s->memsz < 16384) { munmap(s->mem, s->memsz); s->memsz = 65536 + (rnd() % 4096); s->mem = mmap(NULL, s->memsz, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0); s->s = ms_space_create_in((char*)s->mem + off, s->memsz - off, fl); }
    if (!s->s) FAIL("create_in %zu: %d", s->memsz, errno);
    s->fixed = 1; s->cfg.flags = fl;
  } else {
    s->cfg.initial_size = init;
    s->cfg.expand_size = rnd() % 2 ? 0 : (4096u << (rnd() % 9));
    s->cfg.at = rnd() % 2 ? MS_SPACE_AT_START : MS_SPACE_AT_FIRSTALLOC;
    s->cfg.flags = fl; s->cfg.numa_node = -1; s->cfg.name = "fz";
    s->s = ms_space_create(&s->cfg);
    if (!s->s) FAIL("create: %d", errno);
    s->fixed = s->cfg.expand_size == 0;
  }
}
static void rm(int i) {
  sp_t *s = &S[i];
  ms_space_destroy(s->s); /* live blocks die with it */
  if (s->in) munmap(s->mem, s->memsz);
  s->s = NULL; s->n = 0;
}
static void add(sp_t *s, void *p, size_t req, size_t align) {
  if ((uintptr_t)p % 16) FAIL("unaligned %p", p);
  if (align && (uintptr_t)p % align) FAIL("align %zu not met %p", align, p);
  size_t u = ms_space_usable_size(s->s, p);
  size_t want = pow2(req > align ? req : align);
  if (u != want) FAIL("usable %zu != %zu (req %zu align %zu)", u, want, req, align);
  /* overlap check against every live block of all spaces: cheap enough for NS*cap small */
  for (int j = 0; j < NS; j++) for (size_t k = 0; k < S[j].n; k++) {
    blk_t *b = &S[j].b[k];
    if ((unsigned char*)p < b->p + b->bsz && b->p < (unsigned char*)p + u) FAIL("overlap %p+%zu with %p+%zu", p, u, (void*)b->p, b->bsz);
  }
  if (s->n == s->cap) { s->cap = s->cap ? s->cap * 2 : 64; s->b = realloc(s->b, s->cap * sizeof *s->b); }
  blk_t *b = &s->b[s->n++];
  b->p = p; b->req = req; b->bsz = u; b->tag = (unsigned char)rnd();
}

typedef struct { sp_t *s; size_t used, nused, tot; int bad; const char *lo, *hi; const char *last; size_t lastsz; } wk_t;
static blk_t *findb(sp_t *s, const void *p) { for (size_t k = 0; k < s->n; k++) if (s->b[k].p == p) return &s->b[k]; return NULL; }
static int visit(const void *blk, size_t size, int used, void *arg) {
  wk_t *w = arg;
  if (w->last && (const char*)blk < w->last + w->lastsz) w->bad = 1;
  w->last = blk; w->lastsz = size;
  if (!w->lo) w->lo = blk;
  w->hi = (const char*)blk + size;
  w->tot += size;
  if (used) { blk_t *b = findb(w->s, blk); if (!b || b->bsz != size) { w->bad = 2; return 1; } w->used += size; w->nused++; }
  return 0;
}
static void verify(int i) {
  sp_t *s = &S[i];
  if (ms_space_check(s->s)) FAIL("check space %d errno %d", i, errno);
  ms_space_info_t in;
  if (ms_space_info(s->s, &in)) FAIL("info");
  size_t used = 0; for (size_t k = 0; k < s->n; k++) used += s->b[k].bsz;
  if (in.used != used) FAIL("info.used %zu model %zu", in.used, used);
  if (in.free != in.size - in.used) FAIL("info.free");
  wk_t w = {0}; w.s = s;
  int r = ms_space_walk(s->s, visit, &w);
  if (r || w.bad) FAIL("walk r=%d bad=%d", r, w.bad);
  if (w.used != used || w.nused != s->n) FAIL("walk used %zu/%zu model %zu/%zu", w.used, w.nused, used, s->n);
  if (w.tot != in.size) FAIL("walk total %zu info.size %zu", w.tot, in.size);
  if (in.peak_used < in.used) FAIL("peak");
}
static int dumpv(const void *b, size_t sz, int u, void *a) { (void)a; printf("  blk %p %zu %d\n", b, sz, u); return 0; }
/* Lemma: a fixed single-region space failing order k: every aligned 2^k frame inside it holds a live byte */
static void lemma(sp_t *s, size_t bsz) {
  wk_t w = {0}; w.s = s;
  ms_space_walk(s->s, visit, &w);
  if (!w.lo || w.tot != (size_t)(w.hi - w.lo)) return; /* several regions: skip */
  uintptr_t base = (uintptr_t)w.lo;
  uintptr_t f0 = s->in ? base : (base + bsz - 1) & ~(uintptr_t)(bsz - 1);
  for (uintptr_t f = f0; f + bsz <= (uintptr_t)w.hi; f += bsz) {
    int busy = 0;
    for (size_t k = 0; k < s->n && !busy; k++) { uintptr_t p = (uintptr_t)s->b[k].p; if (p < f + bsz && f < p + s->b[k].bsz) busy = 1; }
    if (!busy) { fprintf(stdout,"bsz=%zu cfg init=%zu exp=%zu at=%d fl=%u space in=%d memsz=%zu n=%zu lo=%p hi=%p\n", bsz, s->cfg.initial_size, s->cfg.expand_size, s->cfg.at, s->cfg.flags, s->in, s->memsz, s->n, (void*)w.lo,(void*)w.hi); ms_space_walk(s->s, dumpv, NULL); } if (!busy) FAIL("lemma: request of block %zu failed while frame %#lx..+%zu is free (space %p)", bsz, (unsigned long)f, bsz, (void*)s->s);
  }
}
static void dropk(sp_t *s, size_t k) { s->b[k] = s->b[--s->n]; }

static void stats_check(void) {
  ms_stats_t st; if (ms_stats_get(&st, sizeof st)) FAIL("stats");
  size_t live = 0, used = 0, size = 0;
  for (int i = 0; i < NS; i++) if (S[i].s) { live++; ms_space_info_t in; ms_space_info(S[i].s, &in); used += in.used; size += in.size; }
  if (st.space_count != live) FAIL("stats space_count %llu model %zu", (unsigned long long)st.space_count, live);
  if (st.space_bytes != size) FAIL("stats space_bytes %llu model %zu", (unsigned long long)st.space_bytes, size);
  if (st.space_used_bytes != used) FAIL("stats space_used %llu model %zu", (unsigned long long)st.space_used_bytes, used);
}

/* threaded phase: two threads share every thread-safe space, each with its own blocks */
typedef struct { int id; uint64_t r; } targ_t;
static _Atomic int tbad;
static uint64_t trnd(uint64_t *r) { *r ^= *r << 13; *r ^= *r >> 7; *r ^= *r << 17; return *r; }
static void *tmain(void *a) {
  targ_t *ta = a; enum { K = 256 };
  unsigned char *p[NS][K]; size_t n[NS][K]; memset(p, 0, sizeof p);
  for (int it = 0; it < 20000; it++) {
    int i = trnd(&ta->r) % NS; if (!(S[i].in ? 0 : (S[i].cfg.flags & MS_SPACE_THREAD_SAFE))) continue;
    int k = trnd(&ta->r) % K;
    if (p[i][k]) {
      for (size_t j = 0; j < n[i][k]; j += 61) if (p[i][k][j] != (unsigned char)(ta->id * 31 + k + j)) { fprintf(stdout, "threaded content\n"); atomic_store(&tbad, 1); return NULL; }
      if (trnd(&ta->r) % 2) { ms_space_free(S[i].s, p[i][k]); p[i][k] = NULL; }
      else { size_t m = 1 + trnd(&ta->r) % 3000; unsigned char *q = ms_space_realloc(S[i].s, p[i][k], m); if (q) { p[i][k] = q; size_t keep = m < n[i][k] ? m : n[i][k]; for (size_t j = 0; j < keep; j += 61) if (q[j] != (unsigned char)(ta->id * 31 + k + j)) { fprintf(stdout, "threaded realloc content\n"); atomic_store(&tbad, 1); return NULL; } n[i][k] = m; for (size_t j = 0; j < m; j++) q[j] = (unsigned char)(ta->id * 31 + k + j); } }
    } else {
      size_t m = 1 + trnd(&ta->r) % 3000; unsigned char *q = ms_space_malloc(S[i].s, m);
      if (q) { p[i][k] = q; n[i][k] = m; for (size_t j = 0; j < m; j++) q[j] = (unsigned char)(ta->id * 31 + k + j); }
      else if (errno != ENOMEM) { fprintf(stdout, "threaded errno %d\n", errno); atomic_store(&tbad, 1); return NULL; }
    }
  }
  for (int i = 0; i < NS; i++) for (int k = 0; k < K; k++) if (p[i][k]) ms_space_free(S[i].s, p[i][k]);
  return NULL;
}
static void threaded(void) {
  pthread_t t[2]; targ_t a[2];
  for (int i = 0; i < 2; i++) { a[i].id = i; a[i].r = seed * 77 + i + 1; pthread_create(&t[i], NULL, tmain, &a[i]); }
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  if (atomic_load(&tbad)) FAIL("a thread saw a block change under it");
  for (int q = 0; q < NS; q++) verify(q);
  stats_check();
}

/* the misuse reports go to /dev/null (thousands of lines otherwise) */
static int saved_err = -1;
static void quiet(int on) {
  if (on) { int null = open("/dev/null", O_WRONLY); saved_err = dup(2); dup2(null, 2); close(null); }
  else { dup2(saved_err, 2); close(saved_err); }
}

static void model_run(void **state) {
  (void)state;
  const char *e = getenv("MS_FUZZ_SEED");
  seed = e ? strtoull(e, 0, 0) : 1;
  unsigned long ops = 12000;
  printf("seed %llu (MS_FUZZ_SEED)\n", seed);
  quiet(1);
  rs = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int i = 0; i < NS; i++) mk(i);
  unsigned long nfail = 0, nexp = 0;
  for (opno = 0; opno < ops; opno++) {
    int i = rnd() % NS; sp_t *s = &S[i];
    unsigned op = rnd() % 100;
    ms_space_info_t in0; ms_space_info(s->s, &in0);
    size_t maxsz = (in0.size ? in0.size : s->cfg.initial_size ? s->cfg.initial_size : s->memsz) * 2;
    if (op < 30) { /* malloc / calloc / aligned */
      size_t req = rsize(maxsz); size_t al = 0; void *p; int kind = rnd() % 3;
      if (rnd() % 500 == 0) req = SIZE_MAX - (rnd() % 100);
      if (kind == 0) p = ms_space_malloc(s->s, req);
      else if (kind == 1) { size_t c = 1 + rnd() % 4; req = req / c ? req / c : 1; p = ms_space_calloc(s->s, c, req); req *= c; }
      else { /* caller memory: up to 4 KiB (above, success depends on where the memory lies) */
        al = (size_t)1 << (rnd() % (s->in ? 13 : 22));
        p = ms_space_aligned_alloc(s->s, al, req);
      }
      int e = errno;
      ms_space_info_t in1; ms_space_info(s->s, &in1);
      if (!p) {
        if (e != ENOMEM) FAIL("alloc NULL errno %d req %zu al %zu", e, req, al);
        nfail++;
        if (in1.oom_count != in0.oom_count + 1) FAIL("oom_count %llu -> %llu", (unsigned long long)in0.oom_count, (unsigned long long)in1.oom_count);
        if (s->fixed && in1.expand_count == 0 && req <= ((size_t)1 << 40) && al <= (s->in ? 16 : ((size_t)1 << 30))) lemma(s, pow2(req > al ? req : al));
      } else {
        if ((kind == 1 || (s->cfg.flags & MS_SPACE_ZERO)) && !zero_all(p, kind == 1 ? req : 0)) FAIL("calloc not zero");
        add(s, p, req, al);
        blk_t *b = &s->b[s->n - 1];
        if ((s->cfg.flags & MS_SPACE_ZERO) && !zero_all(p, b->bsz)) FAIL("ZERO space block not zero");
        fill(b);
      }
      if (in1.expand_count != in0.expand_count) nexp++;
    } else if (op < 55) { /* free */
      if (!s->n) continue;
      size_t k = rnd() % s->n; chk(&s->b[k], "before free");
      void *p = s->b[k].p; dropk(s, k);
      ms_space_free(s->s, p);
    } else if (op < 75) { /* realloc */
      if (!s->n) continue;
      size_t k = rnd() % s->n; blk_t ob = s->b[k]; chk(&ob, "before realloc");
      size_t req = rnd() % 2 ? rsize(maxsz) : ob.req + rnd() % (ob.req + 1);
      if (rnd() % 40 == 0) req = 0;
      errno = 0;
      void *p = ms_space_realloc(s->s, ob.p, req);
      if (req == 0) { if (p) FAIL("realloc 0 returned %p", p); dropk(s, k); continue; }
      if (!p) { if (errno != ENOMEM) FAIL("realloc errno %d", errno); chk(&s->b[k], "after failed realloc"); if (ms_space_usable_size(s->s, ob.p) != ob.bsz) FAIL("failed realloc changed block"); continue; }
      dropk(s, k);
      add(s, p, req, 0);
      blk_t *b = &s->b[s->n - 1]; b->tag = ob.tag;
      size_t keep = ob.req < req ? ob.req : req;
      for (size_t j = 0; j < keep; j++) if (b->p[j] != (unsigned char)(ob.tag + j * 7)) FAIL("realloc lost byte %zu (%zu->%zu)", j, ob.req, req);
      if ((s->cfg.flags & MS_SPACE_ZERO) && req > ob.bsz && !zero_all(b->p + ob.bsz, b->bsz - ob.bsz)) FAIL("ZERO realloc growth not zero");
      fill(b);
    } else if (op < 82) { /* wrong frees: into another space, interior, double */
#if (defined(MEMSPACE_DEBUG) && MEMSPACE_DEBUG) || (defined(MEMSPACE_SECURE_BUILD) && MEMSPACE_SECURE_BUILD)
      continue; /* this build makes them fatal, as promised: test_space_death checks the abort and its message */
#endif
      int j = rnd() % NS; if (!S[j].n || j == i) continue;
      blk_t *b = &S[j].b[rnd() % S[j].n];
      ms_space_info_t a0; ms_space_info(s->s, &a0);
      errno = 0; ms_space_free(s->s, b->p);
      if (errno != EINVAL) FAIL("foreign free not detected (errno %d)", errno);
      errno = 0; if (b->bsz > 16) ms_space_free(S[j].s, b->p + 16 * (1 + rnd() % (b->bsz / 16 - 1)));
      if (b->bsz > 16 && errno != EINVAL) FAIL("interior free not detected");
      errno = 0; void *q = ms_space_realloc(s->s, b->p, 8);
      if (q || errno != EINVAL) FAIL("foreign realloc q=%p errno %d", q, errno);
      if (ms_space_usable_size(s->s, b->p)) FAIL("usable_size of foreign");
      ms_space_info_t a1; ms_space_info(s->s, &a1);
      if (a1.used != a0.used) FAIL("foreign free changed used");
      chk(b, "after foreign free");
      /* double free */
      if (s->n && rnd() % 2) { size_t k = rnd() % s->n; void *p = s->b[k].p; dropk(s, k); ms_space_free(s->s, p); errno = 0; ms_space_free(s->s, p); if (errno != EINVAL) FAIL("double free not detected"); errno = 0; if (ms_space_realloc(s->s, p, 10) || errno != EINVAL) FAIL("realloc of freed"); }
    } else if (op < 84) { /* destroy with live blocks, recreate */
      rm(i); mk(i);
    } else if (op < 86) { /* expand / shrink */
      if (rnd() % 2) { int r = ms_space_expand(s->s, 1 + rnd() % (1 << 20)); if (r && r != ENOMEM) FAIL("expand %d", r); }
      else { errno = 0; ms_space_shrink(s->s); }
    } else if (op < 88) {
      verify(i);
    } else if (op < 89) {
      stats_check();
    } else { /* touch check of a random block */
      if (s->n) chk(&s->b[rnd() % s->n], "spot");
    }
    if (opno % 2000 == 0) { for (int q = 0; q < NS; q++) verify(q); stats_check(); }
  }
  for (int q = 0; q < NS; q++) { verify(q); for (size_t k = 0; k < S[q].n; k++) chk(&S[q].b[k], "end"); }
  stats_check();
  threaded();
  quiet(0);
  printf("%lu calls: %lu failed (ENOMEM), %lu expanded a space\n", ops, nfail, nexp);
  for (int q = 0; q < NS; q++) rm(q);
  stats_check();
  for (int q = 0; q < NS; q++) free(S[q].b), S[q].b = NULL, S[q].cap = 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(model_run)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
