/* DMA buffers from several threads: allocation and free, the list built lazily by racing readers, offset
   lookups, re-translation and writes on a shared buffer, the statistics walking the registry meanwhile.
   Two threads freeing one handle at once. Base pages only (no huge pages needed). Labelled tsan: it also runs under ThreadSanitizer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include "internal.h"

#define THREADS 4
#define ROUNDS 40
static ms_dma_buffer_t *shared;
static _Atomic int failures;
static bool readable;

static void discard(const char *text, void *arg) { (void)text, (void)arg; }

/* a buffer on base pages (4 KiB), no NUMA preference */
static ms_dma_config_t base_pages(void) {
  ms_dma_config_t c;
  memset(&c, 0, sizeof c);
  c.page_size = 4096;
  c.numa_node = -1;
  return c;
}

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  ms_dma_config_t c = base_pages();
  char src[8192];
  memset(src, id + 1, sizeof src);
  for (int r = 0; r < ROUNDS; r++) {
    /* a buffer of its own */
    ms_dma_buffer_t *b = ms_dma_alloc((size_t)(16 + r % 7) * 4096, &c);
    if (!b) { failures++; continue; }
    ms_dma_write(b, 100, src, sizeof src);
    if (((char *)ms_dma_addr(b))[100 + 8191] != (char)(id + 1)) failures++;
    size_t n;
    if (readable && !ms_dma_segments(b, &n)) failures++;
    ms_dma_free(b);
    /* the shared one: lazily built list, lookups, verification, disjoint writes */
    uint64_t phys;
    size_t off = (size_t)(id * ROUNDS + r) * 97 % ms_dma_size(shared);
    int e = ms_dma_phys(shared, off, &phys);
    if (e != (readable ? 0 : EPERM)) failures++;
    if (readable && (!ms_dma_segments(shared, &n) || n == 0)) failures++;
    ms_dma_info_t info;
    if (ms_dma_info(shared, &info) != 0) failures++;
    if (r % 8 == 0) {
      e = ms_dma_verify(shared, NULL);
      if (e != 0 && e != ESTALE && !(e == EPERM && !readable)) failures++;
    }
    ms_dma_stream(shared, (size_t)id * 65536, src, sizeof src);
    ms_dma_fence();
    if (r % 10 == 0) ms_stats_print(discard, NULL, 0);
  }
  return NULL;
}

static void threads_share_buffers(void **state) {
  (void)state;
  ms_dma_config_t c = base_pages();
  shared = ms_dma_alloc(THREADS * 65536, &c);
  assert_non_null(shared);
  ms_dma_buffer_t *probe = ms_dma_alloc(4096, &c);
  size_t n;
  readable = ms_dma_segments(probe, &n) != NULL;
  ms_dma_free(probe);
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i), 0);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  assert_int_equal(failures, 0);
  for (int i = 0; i < THREADS; i++) assert_int_equal(((char *)ms_dma_addr(shared))[i * 65536 + 8191], (char)(i + 1));
  ms_stats_t st;
  ms_stats_get(&st, sizeof st);
  assert_int_equal(st.dma_buffers, 1);
  ms_dma_free(shared);
}

/* two threads free one handle at once: one frees it, the other is refused (EINVAL, "freed already"), and the
   descriptor joins the reuse queue once: later buffers all get distinct handles */
#define RACES 64
static pthread_barrier_t race_start;
static ms_dma_buffer_t *race_buffer;
static void *race_free(void *arg) {
  pthread_barrier_wait(&race_start);
  errno = 0;
  ms_dma_free(race_buffer);
  *(int *)arg = errno;
  return NULL;
}
static void racing_double_free(void **state) {
  (void)state;
  ms_dma_config_t c = base_pages();
  ms_stats_t before;
  ms_stats_get(&before, sizeof before);
  for (int r = 0; r < RACES; r++) {
    race_buffer = ms_dma_alloc(4096, &c);
    assert_non_null(race_buffer);
    assert_int_equal(pthread_barrier_init(&race_start, NULL, 2), 0);
    int err[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, race_free, &err[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&race_start);
    assert_int_equal((err[0] == EINVAL) + (err[1] == EINVAL), 1);
  }
  ms_stats_t after;
  ms_stats_get(&after, sizeof after);
  assert_int_equal(after.dma_buffers, before.dma_buffers);
  enum { MANY = 3 * RACES };
  static ms_dma_buffer_t *b[MANY];
  for (int i = 0; i < MANY; i++) {
    b[i] = ms_dma_alloc(4096, &c);
    assert_non_null(b[i]);
    for (int j = 0; j < i; j++) assert_ptr_not_equal(b[i], b[j]);
  }
  for (int i = 0; i < MANY; i++) ms_dma_free(b[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(threads_share_buffers), cmocka_unit_test(racing_double_free)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
