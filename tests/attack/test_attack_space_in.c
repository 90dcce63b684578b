/* ms_space_create_in given the memory of a live space again (the same buffer twice without a destroy, at the same
   start or another offset that overlaps its struct or metadata) fails with EINVAL and leaves that space as it was; a space made inside another space's block, and a buffer reused after its
   space is destroyed, still work. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "memspace.h"
#include "ms_test.h"

static _Alignas(4096) char buf[1 << 16];

static void same_buffer_twice(void **state) {
  (void)state;
  ms_space_t *a = ms_space_create_in(buf, sizeof buf, 0);
  assert_non_null(a);
  char *p = ms_space_malloc(a, 1000);
  assert_non_null(p);
  strcpy(p, "precious");
  errno = 0;
  assert_null(ms_space_create_in(buf, sizeof buf, 0));
  assert_int_equal(errno, EINVAL);
  errno = 0; /* the same start with another size */
  assert_null(ms_space_create_in(buf, sizeof buf / 2, 0));
  assert_int_equal(errno, EINVAL);
  assert_int_equal(ms_space_check(a), 0);
  char *q = ms_space_malloc(a, 1000);
  assert_non_null(q);
  assert_ptr_not_equal(q, p);
  assert_string_equal(p, "precious");
  ms_space_destroy(a);
  ms_space_t *b = ms_space_create_in(buf, sizeof buf, 0); /* destroyed: the buffer is free again */
  assert_non_null(b);
  ms_space_destroy(b);
}

/* the memory of a live space given again at another offset: inside its metadata, or around its struct */
static void overlapping_offsets(void **state) {
  (void)state;
  ms_space_t *a = ms_space_create_in(buf + 8192, 1 << 15, 0);
  assert_non_null(a);
  char *p = ms_space_malloc(a, 1000);
  assert_non_null(p);
  strcpy(p, "precious");
  errno = 0; /* starts inside a's metadata */
  assert_null(ms_space_create_in(buf + 8192 + 256, (1 << 15) - 256, 0));
  assert_int_equal(errno, EINVAL);
  errno = 0; /* holds a's struct */
  assert_null(ms_space_create_in(buf, sizeof buf, 0));
  assert_int_equal(errno, EINVAL);
  errno = 0; /* ends inside a's metadata */
  assert_null(ms_space_create_in(buf, 8192 + 512, 0));
  assert_int_equal(errno, EINVAL);
  assert_int_equal(ms_space_check(a), 0);
  assert_string_equal(p, "precious");
  char *q = ms_space_malloc(a, 1000);
  assert_non_null(q);
  assert_ptr_not_equal(q, p);
  ms_space_t *b = ms_space_create_in(buf, 8192, 0); /* beside it: allowed */
  assert_non_null(b);
  assert_non_null(ms_space_malloc(b, 16));
  assert_int_equal(ms_space_check(a), 0);
  ms_space_destroy(b);
  ms_space_destroy(a);
}

static void space_inside_a_block(void **state) {
  (void)state;
  ms_space_config_t cfg = {.initial_size = 1 << 20, .at = MS_SPACE_AT_START, .numa_node = -1};
  ms_space_t *outer = ms_space_create(&cfg);
  assert_non_null(outer);
  void *block = ms_space_aligned_alloc(outer, 4096, 1 << 16);
  assert_non_null(block);
  ms_space_t *inner = ms_space_create_in(block, 1 << 16, 0);
  assert_non_null(inner);
  void *blk2 = ms_space_malloc(inner, 1 << 14); /* and one level further down */
  assert_non_null(blk2);
  ms_space_t *innermost = ms_space_create_in(blk2, 1 << 14, 0);
  assert_non_null(innermost);
  assert_non_null(ms_space_malloc(innermost, 16));
  assert_int_equal(ms_space_check(inner), 0);
  assert_int_equal(ms_space_check(outer), 0);
  ms_space_destroy(innermost);
  ms_space_destroy(inner);
  ms_space_destroy(outer);
}

/* two threads given overlapping memory at once: at most one gets a space each round (the check and the
   registration are one step for ms_space_create_in); a large buffer, so that zeroing its metadata takes a while */
#define RACE_ROUNDS 200
#define RACE_BYTES ((size_t)64 << 20)
static pthread_barrier_t race_start, race_end;
static ms_space_t *raced[2];
static char *race_buf;
static void *racer(void *arg) {
  int i = (int)(intptr_t)arg;
  for (int r = 0; r < RACE_ROUNDS; r++) {
    pthread_barrier_wait(&race_start);
    raced[i] = ms_space_create_in(race_buf + i * 64, RACE_BYTES - 64, 0);
    pthread_barrier_wait(&race_end);
    pthread_barrier_wait(&race_start); /* the main thread counts and destroys */
  }
  return NULL;
}
static void concurrent_overlap(void **state) {
  (void)state;
  pthread_t t[2];
  race_buf = malloc(RACE_BYTES);
  assert_non_null(race_buf);
  assert_int_equal(pthread_barrier_init(&race_start, NULL, 3), 0);
  assert_int_equal(pthread_barrier_init(&race_end, NULL, 3), 0);
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, racer, (void *)(intptr_t)i), 0);
  int both = 0, none = 0;
  for (int r = 0; r < RACE_ROUNDS; r++) {
    pthread_barrier_wait(&race_start);
    pthread_barrier_wait(&race_end);
    both += raced[0] && raced[1];
    none += !raced[0] && !raced[1];
    for (int i = 0; i < 2; i++)
      if (raced[i]) ms_space_destroy(raced[i]);
    pthread_barrier_wait(&race_start);
  }
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&race_start);
  pthread_barrier_destroy(&race_end);
  free(race_buf);
  assert_int_equal(both, 0);
  assert_int_equal(none, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(same_buffer_twice),
      cmocka_unit_test(overlapping_offsets),
      cmocka_unit_test(space_inside_a_block),
      cmocka_unit_test(concurrent_overlap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
