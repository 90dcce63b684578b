/* ms_option_set takes effect for the rest of the process (memspace.h): the spill threshold and the process space
   route the next allocations (its expand step is the one in force when it is made), the cache preset empties and
   limits the caches at once, the frame idle time applies to frame allocators made afterwards, the exit statistics
   and their format follow the options at exit, the space inheritance is decided when the process space is made;
   a refused value sets errno. Each case reads the part's own statistics or output, not the option's value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "memspace.h"
#include "internal.h"
#include "os.h"
#include "ms_test.h"


static ms_stats_t stats(void) {
  ms_stats_t st;
  memset(&st, 0, sizeof st);
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  return st;
}

static void spill_threshold_routes_at_once(void **state) {
  (void)state;
  assert_int_equal(ms_option_get(MS_OPTION_SPILL_THRESHOLD), 0);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, 1 << 20), 0);
  char *p = ms_malloc(4 << 20);
  assert_non_null(p);
  memset(p, 0x5a, 4 << 20);
  ms_stats_t st = stats();
  assert_int_equal(st.spill_blocks, 1);
  char *small = ms_malloc(512 << 10);                        /* under the threshold: the heap */
  assert_non_null(small);
  assert_int_equal(stats().spill_blocks, st.spill_blocks);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, 0), 0);
  char *q = ms_malloc(4 << 20); /* spill off again: RAM */
  assert_non_null(q);
  assert_int_equal(stats().spill_blocks, st.spill_blocks);
  assert_int_equal(p[(4 << 20) - 1], 0x5a);
  ms_free(q);
  ms_free(small);
  ms_free(p);
  assert_int_equal(stats().spill_blocks, 0);
}

static void process_space_routes_at_once(void **state) {
  (void)state;
  void *before = ms_malloc(100);
  assert_int_equal(stats().space_count, 0);
  assert_int_equal(ms_option_set(MS_OPTION_SPACE_AT, 1), 0);
  assert_int_equal(ms_option_set(MS_OPTION_SPACE_EXPAND, 4 << 20), 0);
  assert_int_equal(ms_option_set(MS_OPTION_SPACE_INITIAL, 8 << 20), 0);
  void *in = ms_malloc(100);
  assert_non_null(in);
  void *more[12]; /* past the initial 8 MiB: the space grows by the step in force when it was made */
  for (int i = 0; i < 12; i++) assert_non_null(more[i] = ms_malloc(1 << 20));
  assert_true(stats().space_expands >= 1);
  for (int i = 0; i < 12; i++) ms_free(more[i]);
  assert_int_equal(ms_option_set(MS_OPTION_SPACE_EXPAND, 0), 0);
  ms_stats_t st = stats();
  assert_int_equal(st.space_count, 1);
  assert_true(st.space_used_bytes >= 100);
  assert_int_equal(ms_option_set(MS_OPTION_SPACE_INITIAL, 0), 0);
  void *after = ms_malloc(100); /* the heap again; the space keeps what it holds */
  assert_int_equal(stats().space_used_bytes, st.space_used_bytes);
  ms_free(in); /* each block goes back to its owner */
  assert_true(stats().space_used_bytes < st.space_used_bytes);
  ms_free(before);
  ms_free(after);
}

static void cache_preset_applies_at_once(void **state) {
  (void)state;
  assert_int_equal(ms_option_set(MS_OPTION_PURGE_DELAY, 86400000), 0); /* nothing purged behind the test's back */
  void *blocks[8];
  for (int i = 0; i < 8; i++) blocks[i] = ms_malloc(1 << 20);
  for (int i = 0; i < 8; i++) ms_free(blocks[i]);
  /* heap_cached_bytes also counts the free blocks of spans in use: under 1 MiB here */
  assert_true(stats().heap_cached_bytes >= (8u << 20)); /* the default preset caches freed large blocks */
  assert_int_equal(ms_option_set(MS_OPTION_CACHE, 3), 0); /* none */
  assert_true(stats().heap_cached_bytes < (1u << 20));
  for (int i = 0; i < 8; i++) blocks[i] = ms_malloc(1 << 20);
  for (int i = 0; i < 8; i++) ms_free(blocks[i]);
  assert_true(stats().heap_cached_bytes < (1u << 20));
  assert_int_equal(ms_option_set(MS_OPTION_CACHE, 1), 0);
}

/* fn in a forked child without a maintenance thread (ms_test.h): only the test's clock counts */
static void in_child(int (*fn)(void)) { assert_int_equal(ms_test_in_child(fn), 0); }

/* a frame allocator made after FRAME_IDLE is set uses it (its config's idle_ms 0: the option): one made under
   50 ms gives its pages back after 200 ms without a flip or an alloc (the flip's check, clock driven by the test),
   one made under a day keeps them */
static int frame_idle_child(void) {
  const size_t range = 1 << 20;
  ms_frame_config_t c;
  memset(&c, 0, sizeof c);
  c.range_size = range;
  c.policy = MS_FRAME_KEEP_IDLE;
  ms_frame_t *f[2];
  long long idle[2] = {50, 86400000};
  for (int i = 0; i < 2; i++) {
    if (ms_option_set(MS_OPTION_FRAME_IDLE, idle[i]) != 0 || !(f[i] = ms_frame_create(&c))) return 2;
  }
  uint64_t t = msi_now_ns();
  char *b[2];
  for (int i = 0; i < 2; i++) {
    msi_frame_flip_at(f[i], t);
    if (!(b[i] = ms_frame_alloc(f[i], range, 0))) return 3;
    memset(b[i], 2, range);
    msi_frame_flip_at(f[i], t + 200 * 1000000ull); /* a frame of 200 ms that allocated: b lives on */
    if (b[i][0] != 2) return 4;
    msi_frame_flip_at(f[i], t + 400 * 1000000ull); /* 200 ms without a flip or an alloc */
  }
  int rc = b[0][0] == 0 && b[1][0] == 2 ? 0 : 5; /* given back (zero) under 50 ms only */
  ms_frame_destroy(f[0]);
  ms_frame_destroy(f[1]);
  return rc;
}
static void frame_idle_applies_to_new_frames(void **state) {
  (void)state;
  in_child(frame_idle_child);
}

/* SHOW_STATS and STATS_FORMAT set during the run: the statistics at exit are printed, in that format */
static int exit_format;
static int exit_child(void) {
  if (ms_option_set(MS_OPTION_SHOW_STATS, 1) != 0 || ms_option_set(MS_OPTION_STATS_FORMAT, exit_format) != 0) return 2;
  exit(0); /* the library's destructor prints */
}
static void exit_statistics_follow_the_options(void **state) {
  (void)state;
  static const char *const expect[2] = {"statistics of pid", "\"stats_version\""};
  for (exit_format = 0; exit_format < 2; exit_format++) {
    char path[] = "/tmp/ms_option_effect_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    int saved = dup(2);
    dup2(fd, 2);
    in_child(exit_child);
    dup2(saved, 2);
    close(saved);
    char buf[65536];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    assert_true(n > 0);
    buf[n] = 0;
    if (!strstr(buf, expect[exit_format])) fail_msg("format %d: no \"%s\" in the child's stderr:\n%s", exit_format, expect[exit_format], buf);
  }
}

/* MEMSPACE_SPACE_INHERIT is read when the process space is made, at start: setting it afterwards changes
   nothing, the MEMSPACE_SPACE_* variables are already gone from the environment (the child below) */
static int inherit_child(void) {
  if (ms_option_set(MS_OPTION_SPACE_INHERIT, 1) != 0) return 2;
  return getenv("MEMSPACE_SPACE_INITIAL") || getenv("MEMSPACE_SPACE_INHERIT") ? 3 : 0;
}
static void space_inherit_is_read_at_start(void **state) {
  (void)state;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char *argv[] = {"test_option_effect", "inherit-child", NULL};
    char *envp[] = {"MEMSPACE_SPACE_INITIAL=8M", "MEMSPACE_SPACE_AT=firstalloc", NULL};
    execve("/proc/self/exe", argv, envp);
    _exit(127);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
}

static void refusals_set_errno(void **state) {
  (void)state;
  errno = 0;
  assert_int_equal(ms_option_set(MS_OPTION_CACHE, 7), EINVAL);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_int_equal(ms_option_set(MS_OPTION_COUNT, 1), EINVAL);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_DIR, 1), EINVAL);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_int_equal(ms_option_set(MS_OPTION_STATS_FILE, 1), EINVAL); /* the other string option */
  assert_int_equal(errno, EINVAL);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "inherit-child") == 0) return inherit_child();
  if (getenv("MEMSPACE_SPILL_THRESHOLD") || getenv("MEMSPACE_SPACE_INITIAL") || getenv("MEMSPACE_CACHE")) {
    fprintf(stderr, "test_option_effect: run without MEMSPACE_SPILL_THRESHOLD, MEMSPACE_SPACE_INITIAL, MEMSPACE_CACHE\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(spill_threshold_routes_at_once), cmocka_unit_test(process_space_routes_at_once),
      cmocka_unit_test(cache_preset_applies_at_once), cmocka_unit_test(frame_idle_applies_to_new_frames),
      cmocka_unit_test(exit_statistics_follow_the_options), cmocka_unit_test(space_inherit_is_read_at_start),
      cmocka_unit_test(refusals_set_errno)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
