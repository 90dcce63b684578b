/* DMA buffers from several threads: allocation and free, the list built lazily by racing readers, offset
   lookups, re-translation and writes on a shared buffer, the statistics walking the registry meanwhile.
   Base pages only (no huge pages needed). Labelled tsan: it also runs under ThreadSanitizer. */
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

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  ms_dma_config_t c;
  memset(&c, 0, sizeof c);
  c.page_size = 4096;
  c.numa_node = -1;
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
  ms_dma_config_t c;
  memset(&c, 0, sizeof c);
  c.page_size = 4096;
  c.numa_node = -1;
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

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(threads_share_buffers)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
