/* The public API with bad arguments, as an outside tester tries them against the header's /// promises: sizes and
   alignments near SIZE_MAX, alignments that are not powers of two, zero sizes, NULL and freed handles, unknown
   options, flags and policies, ranges that wrap. Each call fails with the errno the header names (or is ignored
   where it says so), never a crash; the objects used stay intact. ms_pages_reserve refuses unknown flags with
   EINVAL, as every other call with flags does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "memspace.h"
#include "ms_test.h"

static int fails;
#define EXPECT(cond) do { if (!(cond)) { printf("FAIL %d: %s (errno %d)\n", __LINE__, #cond, errno); fails++; } } while (0)
#define NULL_E(expr, e) do { errno = 0; void *r_ = (void *)(uintptr_t)(expr); int e_ = errno; if (r_ || e_ != (e)) { printf("FAIL %d: %s -> %p errno %d want %d\n", __LINE__, #expr, r_, e_, e); fails++; } } while (0)
#define RET_E(expr, e) do { errno = 0; long long r_ = (long long)(expr); int e_ = errno; if (r_ != (e) || (e && e_ != (e))) { printf("FAIL %d: %s -> %lld errno %d want %d\n", __LINE__, #expr, r_, e_, e); fails++; } } while (0)
/* a bad pointer or handle given to a space call (interior, freed, destroyed): the default build reports it and the
   call fails with EINVAL; debug and secure builds make it fatal, as the header says, so there the call runs in a
   child that must abort (test_space_death checks the message naming the pointer) */
#if (defined(MEMSPACE_DEBUG) && MEMSPACE_DEBUG) || (defined(MEMSPACE_SECURE_BUILD) && MEMSPACE_SECURE_BUILD)
#define BAD_E(stmt, ok) do { fflush(stdout); pid_t c_ = fork(); if (c_ == 0) { stmt; _exit(0); } int st_ = 0; \
    if (c_ < 0 || waitpid(c_, &st_, 0) != c_ || !WIFSIGNALED(st_) || WTERMSIG(st_) != SIGABRT) { \
      printf("FAIL %d: %s did not abort (status %#x)\n", __LINE__, #stmt, st_); fails++; } } while (0)
#else
#define BAD_E(stmt, ok) do { errno = 0; stmt; EXPECT(ok); } while (0)
#endif
static void *bad_r; /* results of the calls in BAD_E */
static int bad_i;
static int visit(const void *b, size_t s, int u, void *a) { (void)b; (void)s; (void)u; (*(int *)a)++; return 0; }

/* ms_pages_reserve with a flag the header does not define: EINVAL, nothing reserved */
static void pages_reserve_unknown_flag(void **state) {
  (void)state;
  ms_pages_t pg;
  memset(&pg, 0x5a, sizeof pg);
  errno = 0;
  assert_int_equal(ms_pages_reserve(4096, 0, 0x80u, -1, &pg), EINVAL);
  assert_int_equal(errno, EINVAL);
  assert_int_equal(ms_pages_reserve(4096, 0, 0x80000000u | MS_PAGES_COMMIT, -1, &pg), EINVAL);
  assert_int_equal(ms_pages_reserve(4096, 0, MS_PAGES_COMMIT | MS_PAGES_THP, -1, &pg), 0);
  assert_int_equal(ms_pages_release(pg.addr, pg.size), 0);
}

static void bad_arguments(void **state) {
  (void)state;
  size_t v;

  /* options */
  errno = 0; EXPECT(ms_option_get((ms_option_t)-1) == 0 && errno == EINVAL);
  errno = 0; EXPECT(ms_option_get(MS_OPTION_COUNT) == 0 && errno == EINVAL);
  NULL_E(ms_option_name((ms_option_t)1000), EINVAL);
  NULL_E(ms_option_get_string(MS_OPTION_CACHE), EINVAL);
  RET_E(ms_option_set(MS_OPTION_CACHE, 4), EINVAL);
  RET_E(ms_option_set(MS_OPTION_CACHE, -1), EINVAL);
  RET_E(ms_option_set(MS_OPTION_SPILL_DIR, 1), EINVAL);
  RET_E(ms_option_set(MS_OPTION_SPACE_INITIAL, -5), EINVAL);
  RET_E(ms_option_set(MS_OPTION_HUGE_PAGES, 12345), EINVAL);
  RET_E(ms_option_set(MS_OPTION_SPILL_THRESHOLD, -2), EINVAL);
  RET_E(ms_option_set(MS_OPTION_PURGE_DELAY, -2), EINVAL);
  RET_E(ms_option_set(MS_OPTION_STATS_FORMAT, 2), EINVAL);
  RET_E(ms_option_set((ms_option_t)-7, 0), EINVAL);
  /* sizes */
  RET_E(ms_parse_size(NULL, &v), EINVAL);
  RET_E(ms_parse_size("1K", NULL), EINVAL);
  RET_E(ms_parse_size("", &v), EINVAL);
  RET_E(ms_parse_size("-1", &v), EINVAL);
  RET_E(ms_parse_size("18446744073709551616", &v), ERANGE);
  RET_E(ms_parse_size("17179869184G", &v), ERANGE);
  RET_E(ms_parse_size("17179869183G", &v), 0);
  EXPECT(v == (size_t)17179869183 << 30);
  RET_E(ms_parse_size("18446744073709551615", &v), 0);
  RET_E(ms_parse_size("1KK", &v), EINVAL);
  RET_E(ms_parse_size("1GiBB", &v), EINVAL);
  RET_E(ms_parse_size("1 G", &v), EINVAL);
  RET_E(ms_parse_size("1GiB", &v), 0);
  /* stats */
  RET_E(ms_stats_get(NULL, sizeof(ms_stats_t)), EINVAL);
  ms_stats_t st; RET_E(ms_stats_get(&st, 3), EINVAL);
  /* heap */
  NULL_E(ms_malloc(SIZE_MAX), ENOMEM);
  NULL_E(ms_malloc(PTRDIFF_MAX), ENOMEM);
  NULL_E(ms_calloc(SIZE_MAX, 2), ENOMEM);
  NULL_E(ms_aligned_alloc(3, 16), EINVAL);
  NULL_E(ms_aligned_alloc(0, 16), EINVAL);
  NULL_E(ms_aligned_alloc((size_t)1 << 63, 16), ENOMEM);
  NULL_E(ms_aligned_alloc(4096, SIZE_MAX - 10), ENOMEM);
  void *big = ms_aligned_alloc((size_t)1 << 30, 16); EXPECT(big && ((uintptr_t)big & ((1u << 30) - 1)) == 0); ms_free(big);
  void *p = ms_malloc(10); NULL_E(ms_realloc(p, SIZE_MAX), ENOMEM); EXPECT(ms_usable_size(p) >= 10);
  ms_free(ms_realloc(p, 0));
  EXPECT(ms_usable_size(NULL) == 0); EXPECT(ms_is_ours(NULL) == 0); EXPECT(ms_is_ours((void *)-1) == 0);
  void *m0 = ms_malloc(0); EXPECT(m0 != NULL); ms_free(m0);
  ms_heap_collect(1); ms_heap_collect(0);
  /* pages */
  ms_pages_t pg;
  RET_E(ms_pages_reserve(0, 0, 0, -1, &pg), EINVAL);
  RET_E(ms_pages_reserve(4096, 0, 0, -1, NULL), EINVAL);
  RET_E(ms_pages_reserve(4096, 3, 0, -1, &pg), EINVAL);
  RET_E(ms_pages_reserve(SIZE_MAX, 0, 0, -1, &pg), ENOMEM);
  RET_E(ms_pages_reserve(SIZE_MAX - 4095, 0, 0, -1, &pg), ENOMEM);
  RET_E(ms_pages_reserve(4096, (size_t)1 << 63, 0, -1, &pg), ENOMEM);
  RET_E(ms_pages_reserve(4096, 0, 0, 9999, &pg), EINVAL);
  RET_E(ms_pages_reserve(4096, 0, 0, -2, &pg), EINVAL);
  RET_E(ms_pages_reserve(1 << 20, 0, 0, -1, &pg), 0);
  RET_E(ms_pages_commit(NULL, 4096), EINVAL);
  RET_E(ms_pages_commit((char *)pg.addr + 1, 4096), EINVAL);
  RET_E(ms_pages_commit(pg.addr, 0), EINVAL);
  RET_E(ms_pages_commit(pg.addr, SIZE_MAX), EINVAL);
  RET_E(ms_pages_commit(pg.addr, (size_t)2 << 20), ENOMEM);
  RET_E(ms_pages_commit(pg.addr, SIZE_MAX - 8191), EINVAL);
  RET_E(ms_pages_decommit(pg.addr, SIZE_MAX - 8191), EINVAL);
  RET_E(ms_pages_lock(pg.addr, SIZE_MAX - 8191), EINVAL);
  RET_E(ms_pages_populate(pg.addr, SIZE_MAX - 8191), EINVAL);
  RET_E(ms_pages_bind(pg.addr, 4096, 9999), EINVAL);
  RET_E(ms_pages_bind(pg.addr, 4096, -5), EINVAL);
  RET_E(ms_pages_release(pg.addr, SIZE_MAX - 8191), EINVAL);
  RET_E(ms_pages_release(pg.addr, 1 << 20), 0);
  RET_E(ms_pages_release(pg.addr, 1 << 20), ENOMEM);
  errno = 0; EXPECT(ms_huge_page_size((ms_page_kind_t)99) == 0 && errno == EINVAL);
  ms_fault_inject((ms_fault_op_t)99, 1, EIO); ms_fault_inject((ms_fault_op_t)-1, 1, EIO);
  /* frames */
  ms_frame_config_t fc; memset(&fc, 0, sizeof fc);
  NULL_E(ms_frame_create(NULL), EINVAL);
  NULL_E(ms_frame_create(&fc), EINVAL);
  fc.range_size = SIZE_MAX; NULL_E(ms_frame_create(&fc), ENOMEM);
  fc.range_size = SIZE_MAX / 2; NULL_E(ms_frame_create(&fc), ENOMEM);
  fc.range_size = 1 << 20; fc.policy = (ms_frame_policy_t)99; NULL_E(ms_frame_create(&fc), EINVAL);
  fc.policy = 0; fc.idle_ms = -2; NULL_E(ms_frame_create(&fc), EINVAL);
  fc.idle_ms = 0; fc.reserved[3] = 1; NULL_E(ms_frame_create(&fc), EINVAL);
  fc.reserved[3] = 0; ms_frame_t *fr = ms_frame_create(&fc); EXPECT(fr);
  NULL_E(ms_frame_alloc(fr, 0, 0), EINVAL);
  NULL_E(ms_frame_alloc(fr, 16, 3), EINVAL);
  NULL_E(ms_frame_alloc(fr, 16, (size_t)1 << 63), ENOMEM);
  NULL_E(ms_frame_alloc(fr, SIZE_MAX, 0), ENOMEM);
  NULL_E(ms_frame_alloc(fr, SIZE_MAX - 15, 16), ENOMEM);
  NULL_E(ms_frame_alloc(NULL, 16, 0), EINVAL);
  EXPECT(ms_frame_used(fr) == 0);
  void *fa = ms_frame_alloc(fr, 100, 4096); EXPECT(fa && ((uintptr_t)fa & 4095) == 0);
  ms_frame_flip(NULL); EXPECT(ms_frame_idle(NULL) == 0); EXPECT(ms_frame_used(NULL) == 0); ms_frame_destroy(NULL);
  ms_frame_destroy(fr);
  /* spaces */
  ms_space_config_t sc; memset(&sc, 0, sizeof sc); sc.numa_node = -1;
  NULL_E(ms_space_create(NULL), EINVAL);
  NULL_E(ms_space_create(&sc), EINVAL);
  sc.initial_size = SIZE_MAX; NULL_E(ms_space_create(&sc), ENOMEM);
  sc.initial_size = SIZE_MAX - 4095; NULL_E(ms_space_create(&sc), ENOMEM);
  sc.initial_size = 1 << 20; sc.expand_size = SIZE_MAX; ms_space_t *sx = ms_space_create(&sc); ms_space_destroy(sx);
  sc.expand_size = 0; sc.at = (ms_space_at_t)7; NULL_E(ms_space_create(&sc), EINVAL);
  sc.at = 0; sc.flags = 0x100; NULL_E(ms_space_create(&sc), EINVAL);
  sc.flags = 0; sc.numa_node = -2; NULL_E(ms_space_create(&sc), EINVAL);
  sc.numa_node = 9999; NULL_E(ms_space_create(&sc), EINVAL);
  sc.numa_node = -1; sc.reserved[0] = 1; NULL_E(ms_space_create(&sc), EINVAL);
  sc.reserved[0] = 0; sc.expand_size = 1 << 20; ms_space_t *s = ms_space_create(&sc); EXPECT(s);
  NULL_E(ms_space_malloc(s, 0), EINVAL);
  NULL_E(ms_space_malloc(s, SIZE_MAX), ENOMEM);
  NULL_E(ms_space_malloc(s, SIZE_MAX / 2 + 2), ENOMEM);
  NULL_E(ms_space_malloc(NULL, 16), EINVAL);
  NULL_E(ms_space_calloc(s, SIZE_MAX, 2), ENOMEM);
  NULL_E(ms_space_calloc(s, 0, 2), EINVAL);
  NULL_E(ms_space_aligned_alloc(s, 3, 16), EINVAL);
  NULL_E(ms_space_aligned_alloc(s, 16, 0), EINVAL);
  NULL_E(ms_space_aligned_alloc(s, (size_t)1 << 63, 16), ENOMEM);
  NULL_E(ms_space_aligned_alloc(s, 16, SIZE_MAX), ENOMEM);
  void *sp = ms_space_malloc(s, 100); EXPECT(sp);
  NULL_E(ms_space_realloc(s, sp, SIZE_MAX), ENOMEM);
  EXPECT(ms_space_usable_size(s, sp) >= 100);
  BAD_E(bad_r = ms_space_realloc(s, (char *)sp + 16, 32), !bad_r && errno == EINVAL);
  RET_E(ms_space_expand(s, 0), EINVAL);
  RET_E(ms_space_expand(s, SIZE_MAX), ENOMEM);
  RET_E(ms_space_expand(s, SIZE_MAX / 2), ENOMEM);
  RET_E(ms_space_expand(NULL, 4096), EINVAL);
  RET_E(ms_space_info(s, NULL), EINVAL);
  RET_E(ms_space_walk(s, NULL, NULL), EINVAL);
  int n = 0; RET_E(ms_space_walk(s, visit, &n), 0);
  RET_E(ms_space_check(s), 0);
  EXPECT(ms_space_usable_size(s, NULL) == 0);
  EXPECT(ms_space_usable_size(s, (char *)sp + 1) == 0);
  BAD_E(ms_space_free(s, (char *)sp + 8), errno == EINVAL);
  ms_space_free(s, sp);
  BAD_E(ms_space_free(s, sp), errno == EINVAL);
  RET_E(ms_space_check(s), 0);
  ms_space_destroy(s);
  BAD_E(ms_space_destroy(s), errno == EINVAL);
  BAD_E(bad_i = ms_space_check(s), bad_i == EINVAL && errno == EINVAL);
  /* caller memory */
  static char mem[1 << 16] __attribute__((aligned(4096)));
  NULL_E(ms_space_create_in(NULL, 1 << 16, 0), EINVAL);
  NULL_E(ms_space_create_in(mem, 10, 0), EINVAL);
  NULL_E(ms_space_create_in(mem, 1 << 16, 0x100), EINVAL);
  NULL_E(ms_space_create_in((char *)-4096, 8192, 0), EINVAL);
  NULL_E(ms_space_create_in(mem + 1, 1000, 0), EINVAL);
  ms_space_t *si = ms_space_create_in(mem + 3, sizeof mem - 3, 0); /* unaligned memory: blocks aligned to 16 */
  EXPECT(si != NULL);
  if (si) {
    void *q = ms_space_malloc(si, 100);
    EXPECT(q && ((uintptr_t)q & 15) == 0);
    RET_E(ms_space_expand(si, 4096), ENOMEM);
    RET_E(ms_space_check(si), 0);
    ms_space_destroy(si);
  }
  /* spill */
  NULL_E(ms_spill_alloc(SIZE_MAX), ENOMEM);
  NULL_E(ms_spill_alloc((size_t)PTRDIFF_MAX + 1), ENOMEM);
  ms_spill_free(ms_spill_alloc(0));
  EXPECT(ms_spill_is(NULL) == 0);
  ms_spill_free(NULL);
  /* dma */
  ms_dma_config_t dc; memset(&dc, 0, sizeof dc); dc.numa_node = -1;
  NULL_E(ms_dma_alloc(0, NULL), EINVAL);
  NULL_E(ms_dma_alloc(SIZE_MAX, NULL), ENOMEM);
  NULL_E(ms_dma_alloc(SIZE_MAX - 4095, NULL), ENOMEM);
  dc.page_size = 12345; NULL_E(ms_dma_alloc(4096, &dc), EINVAL);
  dc.page_size = 0; dc.flags = 0x80; NULL_E(ms_dma_alloc(4096, &dc), EINVAL);
  dc.flags = 0; dc.numa_node = 9999; NULL_E(ms_dma_alloc(4096, &dc), EINVAL);
  dc.numa_node = -2; NULL_E(ms_dma_alloc(4096, &dc), EINVAL);
  dc.numa_node = -1; dc.reserved[1] = 1; NULL_E(ms_dma_alloc(4096, &dc), EINVAL); dc.reserved[1] = 0;
  NULL_E(ms_dma_register(NULL, 4096, NULL), EINVAL);
  NULL_E(ms_dma_register(mem + 1, 4096, NULL), EINVAL);
  NULL_E(ms_dma_register(mem, 0, NULL), EINVAL);
  NULL_E(ms_dma_register(mem, SIZE_MAX - 4095, NULL), EINVAL);
  NULL_E(ms_dma_register((void *)(uintptr_t)0x1000, 4096, NULL), EFAULT);
  void *ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  NULL_E(ms_dma_register(ro, 8192, NULL), EFAULT);
  ms_dma_buffer_t *db = ms_dma_alloc(10000, NULL); /* (NULL where the machine refuses the lock: skipped) */
  if (db) {
    char src[64] = {1};
    errno = 0; ms_dma_write(db, SIZE_MAX, src, 2); EXPECT(errno == EINVAL);
    errno = 0; ms_dma_write(db, 9999, src, 2); EXPECT(errno == EINVAL);
    errno = 0; ms_dma_write(db, 2, src, SIZE_MAX); EXPECT(errno == EINVAL);
    errno = 0; ms_dma_write(db, 0, NULL, 10); EXPECT(errno == EINVAL);
    errno = 0; ms_dma_stream(db, SIZE_MAX - 1, src, 4); EXPECT(errno == EINVAL);
    errno = 0; ms_dma_write(db, 9990, src, 10); EXPECT(errno == 0);
    uint64_t ph; RET_E(ms_dma_phys(db, 10000, &ph), EINVAL); RET_E(ms_dma_phys(db, SIZE_MAX, &ph), EINVAL); RET_E(ms_dma_phys(db, 0, NULL), EINVAL);
    size_t cnt = 99; (void)ms_dma_segments(db, NULL); (void)ms_dma_segments(db, &cnt);
    RET_E(ms_dma_info(db, NULL), EINVAL);
    RET_E(ms_dma_verify(NULL, NULL), EINVAL);
    ms_dma_free(db);
    errno = 0; ms_dma_free(db); EXPECT(errno == EINVAL);
    NULL_E(ms_dma_addr(db), EINVAL);
    errno = 0; EXPECT(ms_dma_size(db) == 0 && errno == EINVAL);
  }
  errno = 0; EXPECT(ms_dma_movable(NULL) == -1 && errno == EINVAL);
  size_t c2 = 7; NULL_E(ms_dma_segments(NULL, &c2), EINVAL); EXPECT(c2 == 0);
  ms_dma_copy(mem, mem + 8192, 0); ms_dma_fence();

  assert_int_equal(fails, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(pages_reserve_unknown_flag),
    cmocka_unit_test(bad_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
