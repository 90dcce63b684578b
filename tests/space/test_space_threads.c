/* A thread-safe space (priority-inheriting mutex) shared by 4 threads that allocate, write, verify and free,
   also freeing blocks other threads allocated. Runs under TSan (label tsan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include "internal.h"

enum { THREADS = 4, OPS = 20000, SLOTS = 256 };
static ms_space_t *space;
static _Atomic(unsigned char *) slots[SLOTS];

static void *worker(void *arg) {
  uint64_t x = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
  for (int i = 0; i < OPS; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    size_t size = 16 + x % 3000;
    unsigned char *p = ms_space_malloc(space, size);
    if (!p) continue;
    memset(p, (int)(size & 0xff), size);
    p[0] = (unsigned char)(size & 0xff);
    p[1] = (unsigned char)(size >> 8);
    unsigned char *old = atomic_exchange(&slots[x % SLOTS], p);
    if (old) {
      size_t osz = old[0] | (size_t)old[1] << 8;
      for (size_t b = 2; b < osz; b++)
        if (old[b] != (unsigned char)(osz & 0xff)) return (void *)1;
      ms_space_free(space, old);
    }
  }
  return NULL;
}

static void shared_space(void **state) {
  (void)state;
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = 8 << 20;
  c.expand_size = 1 << 20;
  c.flags = MS_SPACE_THREAD_SAFE;
  c.numa_node = -1;
  space = ms_space_create(&c);
  assert_non_null(space);
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)), 0);
  for (int i = 0; i < THREADS; i++) {
    void *r;
    pthread_join(t[i], &r);
    assert_null(r);
  }
  assert_int_equal(ms_space_check(space), 0);
  for (int i = 0; i < SLOTS; i++) {
    unsigned char *p = atomic_load(&slots[i]);
    if (p) ms_space_free(space, p);
  }
  ms_space_shrink(space);
  ms_space_info_t in;
  ms_space_info(space, &in);
  assert_int_equal(in.used, 0);
  assert_int_equal(ms_space_check(space), 0);
  ms_space_destroy(space);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(shared_space)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
