/* Frame allocator (ms_frame_*): every policy, alignment, a full range, failures, idle giving RSS back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "os.h"
#include "ms_test.h"

/* resident bytes of [p, p+size) */
static size_t resident(void *p, size_t size) {
  size_t ps = ms_page_size(), n = size / ps, c = 0;
  unsigned char *vec = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(vec != MAP_FAILED);
  assert_int_equal(mincore(p, size, vec), 0);
  for (size_t i = 0; i < n; i++) c += vec[i] & 1;
  munmap(vec, n);
  return c * ps;
}

static ms_frame_t *make(size_t range, ms_frame_policy_t policy, int idle_ms) {
  ms_frame_config_t c;
  memset(&c, 0, sizeof c);
  c.range_size = range;
  c.policy = policy;
  c.idle_ms = idle_ms;
  return ms_frame_create(&c);
}

static void bad_config(void **state) {
  (void)state;
  ms_frame_config_t c;
  memset(&c, 0, sizeof c);
  errno = 0;
  assert_null(ms_frame_create(NULL));
  assert_int_equal(errno, EINVAL);
  assert_null(ms_frame_create(&c)); /* size 0 */
  assert_int_equal(errno, EINVAL);
  c.range_size = 1 << 20;
  c.policy = MS_FRAME_POLICY_COUNT;
  assert_null(ms_frame_create(&c));
  c.policy = MS_FRAME_KEEP;
  c.reserved[2] = 1;
  assert_null(ms_frame_create(&c));
  c.reserved[2] = 0;
  c.idle_ms = -5;
  assert_null(ms_frame_create(&c));
  c.idle_ms = 0;
  c.range_size = SIZE_MAX - 100;
  errno = 0;
  assert_null(ms_frame_create(&c));
  assert_int_equal(errno, ENOMEM);
  /* NULL frame: ignored / EINVAL */
  errno = 0;
  assert_null(ms_frame_alloc(NULL, 16, 0));
  assert_int_equal(errno, EINVAL);
  ms_frame_flip(NULL);
  assert_int_equal(ms_frame_idle(NULL), 0);
  assert_int_equal(ms_frame_used(NULL), 0);
  ms_frame_destroy(NULL);
}

static void alloc_align_full(void **state) {
  (void)state;
  size_t range = 1 << 20;
  ms_frame_t *f = make(range, MS_FRAME_KEEP, 0);
  assert_non_null(f);
  char *a = ms_frame_alloc(f, 1, 0);
  assert_non_null(a);
  assert_int_equal((uintptr_t)a % 16, 0);
  a[0] = 0x11;
  char *b = ms_frame_alloc(f, 3, 1);
  assert_true(b >= a + 1);
  for (size_t al = 1; al <= 65536; al <<= 1) {
    char *p = ms_frame_alloc(f, 5, al);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % al, 0);
    memset(p, 0x5a, 5);
  }
  errno = 0;
  assert_null(ms_frame_alloc(f, 8, 3)); /* not a power of two */
  assert_int_equal(errno, EINVAL);
  assert_null(ms_frame_alloc(f, 0, 0));
  assert_int_equal(errno, EINVAL);
  /* alignment beyond the range: ENOMEM, nothing changes */
  size_t used = ms_frame_used(f);
  assert_null(ms_frame_alloc(f, 1, (size_t)1 << 62));
  assert_int_equal(errno, ENOMEM);
  assert_int_equal(ms_frame_used(f), used);
  /* fill to the end exactly, then ENOMEM */
  char *rest = ms_frame_alloc(f, range - used, 1);
  assert_non_null(rest);
  rest[range - used - 1] = 1;
  assert_int_equal(ms_frame_used(f), range);
  errno = 0;
  assert_null(ms_frame_alloc(f, 1, 1));
  assert_int_equal(errno, ENOMEM);
  assert_null(ms_frame_alloc(f, SIZE_MAX, 1));
  assert_null(ms_frame_alloc(f, SIZE_MAX - 8, 16));
  /* after a flip the other range is used; after two, the first again */
  ms_frame_flip(f);
  assert_int_equal(ms_frame_used(f), 0);
  char *c = ms_frame_alloc(f, range, 1);
  assert_non_null(c);
  assert_true(c < a || c >= a + range);
  assert_int_equal(a[0], 0x11); /* frame k-1's objects stay valid during frame k */
  ms_frame_flip(f);
  char *d = ms_frame_alloc(f, 16, 0);
  assert_ptr_equal(d, a);
  ms_frame_destroy(f);
}

/* every policy: allocate, write, flip many times; contents of the previous frame survive one flip */
static void policies(void **state) {
  (void)state;
  size_t range = 4u << 20;
  for (int p = 0; p < MS_FRAME_POLICY_COUNT; p++) {
    ms_frame_t *f = make(range, (ms_frame_policy_t)p, -1);
    assert_non_null(f);
    char *prev = NULL;
    for (int k = 0; k < 6; k++) {
      char *m = ms_frame_alloc(f, range / 2, 64);
      assert_non_null(m);
      memset(m, k + 1, range / 2);
      if (prev) assert_int_equal(prev[range / 2 - 1], k); /* frame k-1 still intact */
      ms_frame_flip(f);
      prev = m;
    }
    ms_frame_destroy(f);
  }
}

/* the policy's system call failing: the flip falls back to MADV_DONTNEED and the frame stays usable */
static void policy_failures(void **state) {
  (void)state;
  static const struct { ms_frame_policy_t p; ms_fault_op_t op; } cases[] = {
      {MS_FRAME_RESET, MS_FAULT_MADVISE}, {MS_FRAME_DECOMMIT, MS_FAULT_MADVISE},
      {MS_FRAME_RELEASE, MS_FAULT_MMAP}, {MS_FRAME_HUGE, MS_FAULT_MADVISE}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ms_frame_t *f = make(1 << 20, cases[i].p, -1);
    assert_non_null(f);
    for (int k = 0; k < 3; k++) {
      char *m = ms_frame_alloc(f, 1 << 19, 0);
      assert_non_null(m);
      memset(m, 1, 1 << 19);
      ms_fault_inject(cases[i].op, 1, ENOMEM);
      ms_frame_flip(f);
      ms_fault_inject(cases[i].op, 0, 0);
    }
    /* both the policy call and the fallback failing: pages are kept, nothing breaks */
    ms_fault_inject(MS_FAULT_MADVISE, 1, ENOMEM);
    ms_fault_inject(MS_FAULT_MMAP, 1, ENOMEM);
    ms_frame_flip(f);
    ms_fault_inject(MS_FAULT_MADVISE, 0, 0);
    ms_fault_inject(MS_FAULT_MMAP, 0, 0);
    char *m = ms_frame_alloc(f, 100, 0);
    assert_non_null(m);
    m[99] = 1;
    ms_frame_destroy(f);
  }
  /* creation failing */
  ms_fault_inject(MS_FAULT_MMAP, 2, ENOMEM);
  errno = 0;
  assert_null(make(1 << 20, MS_FRAME_KEEP_IDLE, 0));
  assert_int_equal(errno, ENOMEM);
  ms_fault_inject(MS_FAULT_MMAP, 3, ENOMEM);
  assert_null(make(1 << 20, MS_FRAME_KEEP_IDLE, 0));
  ms_fault_inject(MS_FAULT_MMAP, 0, 0);
}

static void decommit_returns_each_flip(void **state) {
  (void)state;
  size_t range = 4u << 20;
  ms_frame_t *f = make(range, MS_FRAME_DECOMMIT, -1);
  char *a = ms_frame_alloc(f, range, 0);
  memset(a, 1, range);
  ms_frame_flip(f);
  char *b = ms_frame_alloc(f, range, 0);
  memset(b, 1, range);
  assert_int_equal(resident(a, range), range);
  ms_frame_flip(f); /* a's range is dead and reset for reuse */
  assert_int_equal(resident(a, range), 0);
  assert_int_equal(resident(b, range), range);
  ms_frame_destroy(f);
}

static void idle_call_returns(void **state) {
  (void)state;
  size_t range = 8u << 20;
  ms_frame_t *f = make(range, MS_FRAME_KEEP_IDLE, -1);
  char *a = ms_frame_alloc(f, range, 0);
  memset(a, 1, range);
  ms_frame_flip(f);
  char *b = ms_frame_alloc(f, range / 2, 0);
  memset(b, 1, range / 2);
  assert_int_equal(resident(a, range) + resident(b, range), range + range / 2);
  size_t n = ms_frame_idle(f);
  assert_true(n >= range + range / 2);
  assert_int_equal(resident(a, range) + resident(b, range), 0);
  /* contents discarded, memory still usable */
  assert_int_equal(b[0], 0);
  char *c = ms_frame_alloc(f, 100, 0);
  assert_non_null(c);
  c[0] = 2;
  ms_frame_destroy(f);
}

/* Runs fn in a forked child: one thread and MEMSPACE_PURGE_DELAY -1, so no maintenance thread runs and idleness
   happens only where the test says. fn returns 0, or 1 after printing the failed check. */
#define EXPECT(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); return 1; } } while (0)
static void in_child(int (*fn)(void)) { assert_int_equal(ms_test_in_child(fn), 0); }
#define MS_NS 1000000ull

/* a frame lasting longer than idle_ms with allocations all along (60 allocations 10 ms apart, idle_ms 50) is
   not idle: the next flip keeps its objects, which stay valid through the next frame */
static int busy_frame_child(void) {
  ms_frame_t *f = make(1 << 20, MS_FRAME_KEEP_IDLE, 50);
  EXPECT(f);
  char *obj = ms_frame_alloc(f, 64, 0);
  EXPECT(obj);
  memset(obj, 7, 64);
  uint64_t start = msi_now_ns();
  for (int i = 0; i < 60 || msi_now_ns() - start < 100 * MS_NS; i++) {
    char *p = ms_frame_alloc(f, 16, 0);
    EXPECT(p);
    *p = 1;
    usleep(10 * 1000);
  }
  ms_frame_flip(f);
  EXPECT(obj[0] == 7 && obj[63] == 7);
  char *q = ms_frame_alloc(f, 64, 0);
  EXPECT(q);
  memset(q, 9, 64);
  EXPECT(obj[63] == 7);
  ms_frame_destroy(f);
  return 0;
}
static void busy_frame_keeps_objects(void **state) {
  (void)state;
  in_child(busy_frame_child);
}

/* the flip's idle check with the clock driven by the test: a frame that allocated and lasted longer than
   idle_ms gives back the dead range only; a frame without allocations after such a pause gives back both */
static int idle_next_flip_child(void) {
  size_t range = 4u << 20;
  uint64_t t = msi_now_ns();
  ms_frame_t *f = make(range, MS_FRAME_KEEP_IDLE, 50);
  EXPECT(f);
  char *a = ms_frame_alloc(f, range, 0);
  memset(a, 1, range);
  msi_frame_flip_at(f, t); /* a short frame */
  char *b = ms_frame_alloc(f, range, 0);
  memset(b, 2, range);
  EXPECT(resident(a, range) == range);
  msi_frame_flip_at(f, t + 200 * MS_NS); /* a frame of 200 ms that allocated: a's range (dead) goes back */
  EXPECT(resident(a, range) == 0);
  EXPECT(resident(b, range) == range && b[0] == 2 && b[range - 1] == 2);
  msi_frame_flip_at(f, t + 400 * MS_NS); /* no flip and no alloc for 200 ms: both go back */
  EXPECT(resident(a, range) + resident(b, range) == 0);
  EXPECT(b[0] == 0);
  ms_frame_destroy(f);
  return 0;
}
static void idle_next_call(void **state) {
  (void)state;
  in_child(idle_next_flip_child);
}

/* the maintenance task driven pass by pass: a frame with an allocation between every two passes is never idle,
   however long it lasts; once nothing happens for idle_ms, the next pass reclaims both ranges */
static int maint_driven_child(void) {
  uint64_t t = msi_now_ns();
  ms_frame_t *f = make(1 << 20, MS_FRAME_KEEP_IDLE, 20);
  EXPECT(f);
  char *first = ms_frame_alloc(f, 64, 0);
  EXPECT(first);
  memset(first, 7, 64);
  for (int i = 1; i <= 50; i++) { /* 5 s of passes 100 ms apart (the task's period), an alloc before each */
    char *p = ms_frame_alloc(f, 16, 0);
    EXPECT(p);
    *p = 1;
    msi_frame_maint_run(t + (uint64_t)i * 100 * MS_NS);
    EXPECT(first[63] == 7);
  }
  msi_frame_maint_run(t + 5100 * MS_NS); /* nothing new since the last pass: idle for 100 ms >= 20 */
  EXPECT(first[63] == 0);
  char *c = ms_frame_alloc(f, 4096, 0); /* the owner carries on after the reclaim */
  EXPECT(c);
  memset(c, 3, 4096);
  msi_frame_maint_run(t + 5200 * MS_NS); /* sees the alloc */
  msi_frame_maint_run(t + 5210 * MS_NS); /* 10 ms without activity: not idle yet */
  EXPECT(c[4095] == 3);
  ms_frame_destroy(f);
  return 0;
}
static void busy_owner_never_reclaimed(void **state) {
  (void)state;
  in_child(maint_driven_child);
}

static void *sleeper(void *arg) {
  (void)arg;
  pause();
  return NULL;
}

static void idle_maintenance_thread(void **state) {
  (void)state;
  if (ms_option_get(MS_OPTION_PURGE_DELAY) < 0) ms_skip_refused(0, "MEMSPACE_PURGE_DELAY=-1: no idle maintenance");
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, sleeper, NULL), 0);
  size_t range = 8u << 20;
  ms_frame_t *f = make(range, MS_FRAME_KEEP_IDLE, 100);
  char *a = ms_frame_alloc(f, range, 0);
  memset(a, 1, range);
  ms_frame_flip(f);
  char *b = ms_frame_alloc(f, range, 0);
  memset(b, 1, range);
  ms_frame_flip(f);
  assert_true(msi_maint_running());
  /* behaviour, not timing: wait up to 20 s for the reclaim (100 ms idle + 100 ms period normally) */
  size_t res = 0;
  for (int i = 0; i < 400; i++) {
    res = resident(a, range) + resident(b, range);
    if (res == 0) break;
    usleep(50 * 1000);
  }
  assert_int_equal(res, 0);
  /* the owner carries on after the reclaim */
  char *c = ms_frame_alloc(f, 4096, 0);
  assert_non_null(c);
  memset(c, 3, 4096);
  ms_frame_flip(f);
  ms_frame_destroy(f);
  pthread_cancel(t);
  pthread_join(t, NULL);
}

static void to_buf(const char *text, void *arg) { strncat((char *)arg, text, 8191 - strlen((char *)arg)); }

/* the owner comes back at random moments around idle_ms while the maintenance thread reclaims: what it writes
   right after an alloc is never discarded (the reclaim either finished before the alloc returned or backs off) */
static void reclaim_races_owner(void **state) {
  (void)state;
  if (ms_option_get(MS_OPTION_PURGE_DELAY) < 0) ms_skip_refused(0, "MEMSPACE_PURGE_DELAY=-1: no idle maintenance");
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, sleeper, NULL), 0);
  ms_frame_t *f = make(1 << 20, MS_FRAME_KEEP_IDLE, 1);
  assert_non_null(f);
  unsigned r = 12345;
  uint64_t end = msi_now_ns() + 2000ull * 1000000;
  int n = 0;
  while (msi_now_ns() < end) {
    unsigned char *p = ms_frame_alloc(f, 256, 0);
    if (!p) { ms_frame_flip(f); continue; }
    memset(p, 0xab, 256);
    for (volatile int spin = 0; spin < 20000; spin++) {}
    for (int i = 0; i < 256; i++) assert_int_equal(p[i], 0xab);
    if (++n % 64 == 0) ms_frame_flip(f);
    r = r * 1103515245 + 12345;
    /* pauses around the maintenance period (100 ms), so the owner often returns while a reclaim starts */
    if ((r >> 16) % 8 == 0) usleep(90000 + (r >> 8) % 20000);
  }
  ms_frame_destroy(f);
  pthread_cancel(t);
  pthread_join(t, NULL);
}

/* a forked child (the maintenance thread may have held the allocator list) creates and uses a frame */
static void fork_child_uses_frames(void **state) {
  (void)state;
  ms_frame_t *f = make(1 << 20, MS_FRAME_KEEP_IDLE, 10);
  assert_non_null(f);
  for (int i = 0; i < 20; i++) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      ms_frame_t *g = make(1 << 20, MS_FRAME_DECOMMIT, 10);
      if (!g) _exit(1);
      char *p = ms_frame_alloc(g, 1000, 0);
      if (!p) _exit(2);
      memset(p, 1, 1000);
      ms_frame_flip(g);
      ms_frame_destroy(g);
      ms_frame_destroy(f);
      _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    usleep(5000);
  }
  ms_frame_destroy(f);
}

static void stats_section(void **state) {
  (void)state;
  static char buf[8192];
  buf[0] = 0;
  ms_stats_print(to_buf, buf, 0);
  assert_non_null(strstr(buf, "[frames]"));
  assert_non_null(strstr(buf, "frame_flips"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bad_config),      cmocka_unit_test(alloc_align_full),
      cmocka_unit_test(policies),        cmocka_unit_test(policy_failures),
      cmocka_unit_test(decommit_returns_each_flip), cmocka_unit_test(idle_call_returns),
      cmocka_unit_test(busy_frame_keeps_objects),
      cmocka_unit_test(idle_next_call),  cmocka_unit_test(idle_maintenance_thread),
      cmocka_unit_test(busy_owner_never_reclaimed), cmocka_unit_test(reclaim_races_owner),
      cmocka_unit_test(fork_child_uses_frames),
      cmocka_unit_test(stats_section),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
