/* The malloc family's C semantics with memspace as the process's malloc (the static library defines malloc, so
   this test program runs on it), foreign pointers, fork while threads allocate, dlopen of allocating libraries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "memspace.h"
#include "ms_test.h"

/* the tests check failure paths the compiler cannot know leave the pointer valid */
#pragma GCC diagnostic ignored "-Wuse-after-free"

/* sizes hidden from the compiler, which otherwise rejects impossible requests at compile time */
static volatile size_t huge = SIZE_MAX / 2, half = SIZE_MAX / 2 + 2, page;

static void malloc_zero_and_alignment(void **state) {
  (void)state;
  void *a = malloc(0), *b = malloc(0);
  assert_non_null(a);
  assert_non_null(b);
  assert_ptr_not_equal(a, b);
  assert_true(ms_is_ours(a));
  free(a);
  free(b);
  for (size_t sz = 1; sz < 5000; sz += 3) {
    void *p = malloc(sz);
    assert_int_equal((uintptr_t)p % 16, 0);
    free(p);
  }
}

static void errno_enomem(void **state) {
  (void)state;
  errno = 0;
  assert_null(malloc(huge));
  assert_int_equal(errno, ENOMEM);
  errno = 0;
  assert_null(calloc(huge, 4)); /* overflow */
  assert_int_equal(errno, ENOMEM);
  errno = 0;
  assert_null(calloc(1, huge));
  assert_int_equal(errno, ENOMEM);
  void *p = malloc(10);
  errno = 0;
  assert_null(realloc(p, huge));
  assert_int_equal(errno, ENOMEM);
  errno = 0;
  assert_null(reallocarray(p, huge, 3)); /* overflow: p untouched */
  assert_int_equal(errno, ENOMEM);
  free(p);
  errno = 0;
  assert_null(aligned_alloc(64, huge));
  assert_int_equal(errno, ENOMEM);
}

static void realloc_semantics(void **state) {
  (void)state;
  char *p = realloc(NULL, 100);
  assert_non_null(p);
  memset(p, 5, 100);
  p = realloc(p, 100000);
  assert_int_equal(p[99], 5);
  assert_null(realloc(p, 0)); /* glibc: frees, returns NULL */
  char *q = reallocarray(NULL, 10, 10);
  assert_non_null(q);
  assert_true(malloc_usable_size(q) >= 100);
  free(q);
}

static void usable_size_exact_and_writable(void **state) {
  (void)state;
  for (size_t sz = 1; sz < 300000; sz = sz * 2 + 1) {
    unsigned char *p = malloc(sz);
    size_t u = malloc_usable_size(p);
    assert_true(u >= sz);
    assert_int_equal(u, ms_usable_size(p));
    memset(p, 0x5a, u); /* every usable byte is writable */
    free(p);
  }
  assert_int_equal(malloc_usable_size(NULL), 0);
}

static void posix_memalign_semantics(void **state) {
  (void)state;
  void *p = (void *)0x1234;
  assert_int_equal(posix_memalign(&p, 3, 10), EINVAL);
  assert_ptr_equal(p, (void *)0x1234); /* untouched */
  assert_int_equal(posix_memalign(&p, 4, 10), EINVAL); /* not a multiple of sizeof(void *) */
  assert_int_equal(posix_memalign(&p, 0, 10), EINVAL);
  assert_ptr_equal(p, (void *)0x1234);
  assert_int_equal(posix_memalign(&p, 64, huge), ENOMEM);
  assert_ptr_equal(p, (void *)0x1234);
  for (size_t a = 8; a <= (1u << 22); a <<= 1) {
    assert_int_equal(posix_memalign(&p, a, 100), 0);
    assert_int_equal((uintptr_t)p % a, 0);
    free(p);
  }
}

/* alignments that are not powers of two, out of the compiler's sight: clang assumes a constant one (alloc_align)
   and its optimizer may fail on it */
static volatile size_t bad_align[] = {24, 0, 48, 3, 4096 + 1};

static void aligned_alloc_semantics(void **state) {
  (void)state;
  errno = 0;
  assert_null(aligned_alloc(bad_align[0], 48));
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_null(aligned_alloc(bad_align[1], 48));
  assert_int_equal(errno, EINVAL);
  for (size_t a = 1; a <= (1u << 21); a <<= 1)
    for (size_t sz = 1; sz < 4 * a + 100; sz = sz * 7 + 1) {
      void *p = aligned_alloc(a, sz);
      assert_non_null(p);
      assert_int_equal((uintptr_t)p % (a < 16 ? 16 : a), 0);
      free(p);
    }
}

static void memalign_rounds_like_glibc(void **state) {
  (void)state;
  void *p = memalign(bad_align[2], 100); /* not a power of two: rounded up to 64 */
  assert_non_null(p);
  assert_int_equal((uintptr_t)p % 64, 0);
  free(p);
  p = memalign(bad_align[3], 10);
  assert_non_null(p);
  assert_int_equal((uintptr_t)p % 16, 0);
  free(p);
  p = memalign(bad_align[4], 10);
  assert_int_equal((uintptr_t)p % 8192, 0);
  free(p);
  errno = 0;
  assert_null(memalign(half, 10));
  assert_int_equal(errno, EINVAL);
}

static void valloc_pvalloc_are_ours(void **state) {
  (void)state;
  page = (size_t)sysconf(_SC_PAGESIZE);
  void *v = valloc(100);
  assert_non_null(v);
  assert_int_equal((uintptr_t)v % page, 0);
  assert_true(ms_is_ours(v));
  free(v);
  void *p = pvalloc(100);
  assert_non_null(p);
  assert_int_equal((uintptr_t)p % page, 0);
  assert_true(malloc_usable_size(p) >= page);
  assert_true(ms_is_ours(p));
  memset(p, 1, page);
  free(p);
  p = pvalloc(0);
  assert_non_null(p);
  free(p);
  errno = 0;
  assert_null(pvalloc(SIZE_MAX - 10));
  assert_int_equal(errno, ENOMEM);
}

static void control_calls(void **state) {
  (void)state;
  void *v[100];
  for (int i = 0; i < 100; i++) v[i] = malloc(5000);
  struct mallinfo2 mi = mallinfo2();
  assert_true(mi.uordblks >= 100 * 5000);
  assert_true(mi.arena >= mi.uordblks);
  for (int i = 0; i < 100; i++) free(v[i]);
  assert_int_equal(malloc_trim(0), 1);
  assert_int_equal(mallopt(M_MMAP_THRESHOLD, 1 << 20), 1);
  /* glibc's answers (2.36): 1 for any parameter, an unknown number too, 0 for M_MXFAST out of 0..80*sizeof(size_t)/4 */
  assert_int_equal(mallopt(12345, 1), 1);
  assert_int_equal(mallopt(M_ARENA_MAX, 0), 1);
  assert_int_equal(mallopt(M_MXFAST, 0), 1);
  assert_int_equal(mallopt(M_MXFAST, (int)(80 * sizeof(size_t) / 4)), 1);
  assert_int_equal(mallopt(M_MXFAST, (int)(80 * sizeof(size_t) / 4) + 1), 0);
  assert_int_equal(mallopt(M_MXFAST, -1), 0);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_int_equal(malloc_info(0, f), 0);
  fclose(f);
  assert_non_null(strstr(buf, "memspace"));
  free(buf);
  errno = 0; /* glibc's answer to an option it does not know: EINVAL returned, errno untouched */
  assert_int_equal(malloc_info(1, stderr), EINVAL);
  assert_int_equal(errno, 0);
}

/* memory from the C library's own malloc (what a program holds from before memspace took over) */
static void foreign_pointer_goes_to_glibc(void **state) {
  (void)state;
  void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  assert_non_null(libc);
  void *(*glibc_malloc)(size_t) = (void *(*)(size_t))dlsym(libc, "malloc");
  assert_non_null(glibc_malloc);
  assert_ptr_not_equal(glibc_malloc, malloc);
  for (int i = 0; i < 100; i++) {
    char *p = glibc_malloc(100 + i);
    assert_false(ms_is_ours(p));
    assert_true(malloc_usable_size(p) >= 100u + i);
    free(p);
  }
  char *q = glibc_malloc(64);
  memcpy(q, "foreign", 8);
  q = realloc(q, 100000); /* moves into memspace, content kept */
  assert_true(ms_is_ours(q));
  assert_string_equal(q, "foreign");
  free(q);
  dlclose(libc);
}

/* A sandbox that filters madvise by its advice (seccomp: MADV_POPULATE_WRITE answers EPERM) leaves the foreign
   pointer check (msi_os_writable) without its answer: the mapped check decides then, and blocks of the C
   library's still go to its free and realloc, without a report or an abort. In a child: the filter stays there */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#if defined(__x86_64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_AARCH64
#endif
static int forbid_populate_write(void) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_HERE, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_madvise, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])), /* the advice (low word) */
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MADV_POPULATE_WRITE, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  struct sock_fprog prog = {sizeof f / sizeof f[0], f};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) ? -1 : 0;
}

static int foreign_under_filter(void) {
  void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  void *(*glibc_malloc)(size_t) = libc ? (void *(*)(size_t))dlsym(libc, "malloc") : NULL;
  if (!glibc_malloc) return 2;
  char *keep = glibc_malloc(100); /* glibc holds a block throughout, as when the program kept one from before */
  if (forbid_populate_write()) {
    fprintf(stderr, "seccomp filter refused: %s\n", strerror(errno));
    return MS_TEST_SKIP;
  }
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  char *probe = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (probe == MAP_FAILED) return 3;
  errno = 0;
  if (madvise(probe, ps, MADV_POPULATE_WRITE) == 0 || errno != EPERM) return 4; /* the filter does not hold */
  for (int i = 0; i < 200; i++) {
    char *p = glibc_malloc(10 + (size_t)i * 1301); /* arena blocks, and mapped ones (IS_MMAPPED) past 128 KiB */
    memset(p, 1, 10);
    if (i % 2) free(p);
    else free(realloc(p, 20 + (size_t)i));
  }
  char *big = glibc_malloc(1 << 20);
  big[0] = 7;
  free(big);
  free(keep);
  return 0;
}

static void foreign_pointer_under_madvise_filter(void **state) {
  (void)state;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(foreign_under_filter());
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  if (WIFSIGNALED(st)) fail_msg("the child died of signal %d: a block of the C library's was refused", WTERMSIG(st));
  if (WEXITSTATUS(st) == MS_TEST_SKIP) ms_skip_refused(0, "seccomp filter (see the child's message above)");
  assert_int_equal(WEXITSTATUS(st), 0);
}

static atomic_int stop;
static void *allocator_thread(void *arg) {
  (void)arg;
  void *keep[64] = {0};
  unsigned i = 0;
  while (!atomic_load(&stop)) {
    free(keep[i % 64]);
    keep[i % 64] = malloc(16 + (i * 2654435761u) % 200000);
    i++;
  }
  for (int j = 0; j < 64; j++) free(keep[j]);
  return NULL;
}

static void fork_while_threads_allocate(void **state) {
  (void)state;
  pthread_t t[3];
  for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, allocator_thread, NULL);
  for (int round = 0; round < 30; round++) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      alarm(20);
      void *v[1000];
      for (int i = 0; i < 1000; i++) v[i] = malloc(16 + i * 97);
      for (int i = 0; i < 1000; i++) free(v[i]);
      pthread_t c;
      pthread_create(&c, NULL, allocator_thread, NULL); /* threads work in the child too */
      atomic_store(&stop, 1);
      pthread_join(c, NULL);
      exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  atomic_store(&stop, 0);
}

static void dlopen_allocating_library(void **state) {
  (void)state;
  for (int i = 0; i < 20; i++) {
    void *h = dlopen(MS_DLIB_PATH, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    char *(*get)(void) = (char *(*)(void))dlsym(h, "dlib_buffer");
    assert_non_null(get);
    assert_string_equal(get(), "allocated in a constructor");
    assert_true(ms_is_ours(get()));
    assert_int_equal(dlclose(h), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(malloc_zero_and_alignment),
      cmocka_unit_test(errno_enomem),
      cmocka_unit_test(realloc_semantics),
      cmocka_unit_test(usable_size_exact_and_writable),
      cmocka_unit_test(posix_memalign_semantics),
      cmocka_unit_test(aligned_alloc_semantics),
      cmocka_unit_test(memalign_rounds_like_glibc),
      cmocka_unit_test(valloc_pvalloc_are_ours),
      cmocka_unit_test(control_calls),
      cmocka_unit_test(foreign_pointer_goes_to_glibc),
      cmocka_unit_test(foreign_pointer_under_madvise_filter),
      cmocka_unit_test(fork_while_threads_allocate),
      cmocka_unit_test(dlopen_allocating_library),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
