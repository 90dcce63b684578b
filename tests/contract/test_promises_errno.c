/* Error promises of include/memspace.h that need the kernel to answer in a way it rarely does on demand
   (tests/contract/promises.tsv):
   - EAGAIN from mlock ("some pages could not be locked") reaches the caller of every call that locks: the
     page layer's fault injection (ms_fault_inject(MS_FAULT_MLOCK, 1, EAGAIN)) makes the next mlock answer it.
   - EFAULT from ms_dma_segments, ms_dma_phys and ms_dma_verify when a page of the buffer is not present: the
     program maps fresh memory over registered memory (MAP_FIXED: still mapped and writable, but no page is
     present until touched), which pagemap reports as not present.
   - EIO from ms_dma_alloc(MS_DMA_CONTIGUOUS) when the buffer's physical layout cannot be read: a seccomp filter
     in a forked child makes pread (of /proc/self/pagemap) fail with EIO.
   - ms_dma_write's head / cache-line-aligned middle / tail split: every destination alignment within a cache
     line, several source alignments, lengths on both sides of the fenced-copy threshold; exact bytes, and the
     bytes around the range untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "memspace.h"
#include "ms_test.h"
#include "../space/space_test.h"

static ms_dma_config_t base_cfg(unsigned flags) {
  ms_dma_config_t c;
  memset(&c, 0, sizeof c);
  c.page_size = ms_page_size();
  c.numa_node = -1;
  c.flags = flags;
  return c;
}

/* page-aligned anonymous memory, committed */
static char *map_pages(size_t size) {
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(p != MAP_FAILED);
  return p;
}

/* ---- EAGAIN from mlock reaches the caller ---- */

/* arms one EAGAIN for the next mlock */
static void next_mlock_eagain(void) { ms_fault_inject(MS_FAULT_MLOCK, 1, EAGAIN); }
static void no_fault(void) { ms_fault_inject(MS_FAULT_MLOCK, 0, 0); }

static void eagain_pages(void **state) {
  (void)state;
  size_t ps = ms_page_size();
  ms_pages_t p;
  next_mlock_eagain();
  errno = 0;
  assert_int_equal(ms_pages_reserve(16 * ps, 0, MS_PAGES_LOCK, -1, &p), EAGAIN);
  assert_int_equal(errno, EAGAIN);
  no_fault();
  assert_int_equal(ms_pages_reserve(16 * ps, 0, MS_PAGES_COMMIT, -1, &p), 0);
  next_mlock_eagain();
  errno = 0;
  assert_int_equal(ms_pages_lock(p.addr, p.size), EAGAIN);
  assert_int_equal(errno, EAGAIN);
  no_fault();
  assert_int_equal(ms_pages_release(p.addr, p.size), 0);
}

/* ms_space_create (through make, tests/space/space_test.h), ms_space_create_in, ms_space_expand */
static void eagain_spaces(void **state) {
  (void)state;
  next_mlock_eagain();
  errno = 0;
  assert_null(make(256 * 1024, 256 * 1024, MS_SPACE_AT_START, MS_SPACE_LOCKED));
  assert_int_equal(errno, EAGAIN);
  no_fault();

  size_t size = 256 * 1024;
  char *mem = map_pages(size);
  next_mlock_eagain();
  errno = 0;
  assert_null(ms_space_create_in(mem, size, MS_SPACE_LOCKED));
  assert_int_equal(errno, EAGAIN);
  no_fault();
  munmap(mem, size);

  /* a locked space that exists (make: ms_space_create): its next expansion's lock answers EAGAIN */
  ms_space_t *s = make(256 * 1024, 256 * 1024, MS_SPACE_AT_START, MS_SPACE_LOCKED);
  if (!s) ms_skip_refused(errno, "a locked space of 256 KiB");
  ms_space_info_t before, after;
  assert_int_equal(ms_space_info(s, &before), 0);
  next_mlock_eagain();
  errno = 0;
  assert_int_equal(ms_space_expand(s, 256 * 1024), EAGAIN);
  assert_int_equal(errno, EAGAIN);
  no_fault();
  assert_int_equal(ms_space_info(s, &after), 0);
  assert_int_equal(after.size, before.size); /* a refused expansion adds nothing */
  assert_int_equal(ms_space_check(s), 0);
  assert_int_equal(ms_space_expand(s, 256 * 1024), 0); /* and the next one works */
  ms_space_destroy(s);
}

static void eagain_dma(void **state) {
  (void)state;
  size_t ps = ms_page_size();
  ms_dma_config_t c = base_cfg(0);
  next_mlock_eagain();
  errno = 0;
  assert_null(ms_dma_alloc(4 * ps, &c));
  assert_int_equal(errno, EAGAIN);
  no_fault();

  char *mem = map_pages(4 * ps);
  next_mlock_eagain();
  errno = 0;
  assert_null(ms_dma_register(mem, 4 * ps, NULL));
  assert_int_equal(errno, EAGAIN);
  no_fault();
  munmap(mem, 4 * ps);
}

/* ---- EFAULT: a page of the buffer not present ---- */

/* registered memory whose pages are then replaced by fresh, never touched ones (still mapped and writable) */
static ms_dma_buffer_t *register_pages(char *mem, size_t size) {
  ms_dma_buffer_t *b = ms_dma_register(mem, size, NULL);
  if (!b) ms_skip_refused(errno, "ms_dma_register of %zu bytes", size);
  return b;
}
static void pages_vanish(char *mem, size_t size) {
  assert_true(mmap(mem, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == mem);
}

static void efault_page_not_present(void **state) {
  (void)state;
  size_t ps = ms_page_size(), size = 8 * ps, n = 5;
  char *mem = map_pages(size);
  /* ms_dma_segments and ms_dma_phys: the list is built at the first call, after the pages went */
  ms_dma_buffer_t *b = register_pages(mem, size);
  pages_vanish(mem, size);
  errno = 0;
  assert_null(ms_dma_segments(b, &n));
  assert_int_equal(errno, EFAULT);
  assert_int_equal(n, 0);
  uint64_t phys = 1;
  errno = 0;
  assert_int_equal(ms_dma_phys(b, ps, &phys), EFAULT);
  assert_int_equal(errno, EFAULT);
  ms_dma_free(b);

  /* ms_dma_verify: the list was built while the pages were there (or cannot be, without CAP_SYS_ADMIN) */
  memset(mem, 1, size);
  b = register_pages(mem, size);
  const ms_dma_segment_t *segs = ms_dma_segments(b, &n);
  if (!segs) assert_int_equal(errno, EPERM);
  pages_vanish(mem, size);
  size_t moved = 77;
  errno = 0;
  assert_int_equal(ms_dma_verify(b, &moved), EFAULT);
  assert_int_equal(errno, EFAULT);
  ms_dma_free(b);
  munmap(mem, size);
}

/* ---- EIO: a contiguous buffer whose layout cannot be read ---- */

static int eio_child(void) {
  /* pread64 answers EIO from here on */
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pread64, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EIO),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  struct sock_fprog prog = {sizeof f / sizeof f[0], f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
    fprintf(stderr, "seccomp filter refused: %s\n", strerror(errno));
    return 77;
  }
  ms_dma_config_t c = base_cfg(MS_DMA_CONTIGUOUS);
  errno = 0;
  ms_dma_buffer_t *b = ms_dma_alloc(ms_page_size(), &c);
  if (b) {
    fprintf(stderr, "a contiguous buffer whose pagemap read fails was allocated\n");
    return 2;
  }
  if (errno != EIO) {
    fprintf(stderr, "ms_dma_alloc(MS_DMA_CONTIGUOUS) failed with errno %d, not EIO\n", errno);
    return 3;
  }
  return 0;
}

static void eio_contiguous_unreadable(void **state) {
  (void)state;
  /* the same allocation works without the filter (else the child's failure would prove nothing) */
  ms_dma_config_t c = base_cfg(MS_DMA_CONTIGUOUS);
  ms_dma_buffer_t *b = ms_dma_alloc(ms_page_size(), &c);
  if (!b) ms_skip_refused(errno, "a one-page pinned buffer");
  ms_dma_free(b);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(eio_child());
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  if (WEXITSTATUS(st) == 77) ms_skip_refused(0, "seccomp filter (see the child's message)");
  assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---- ms_dma_write: every alignment of head, middle and tail ---- */

static void dma_write_alignment(void **state) {
  (void)state;
  const size_t size = 64 * 1024;
  ms_dma_config_t c = base_cfg(0);
  ms_dma_buffer_t *b = ms_dma_alloc(size, &c);
  if (!b) ms_skip_refused(errno, "a pinned buffer of 64 KiB");
  unsigned char *dst = ms_dma_addr(b);
  assert_int_equal((uintptr_t)dst % 64, 0);
  unsigned char *src = malloc(size + 64);
  assert_non_null(src);
  for (size_t i = 0; i < size + 64; i++) src[i] = (unsigned char)(i * 131 + 17);
  /* below, at and above the 2 KiB threshold of the fenced copy; around multiples of the cache line */
  const size_t lens[] = {1, 15, 63, 64, 65, 127, 200, 2047, 2048, 2049, 2111, 4096, 4097, 8191, 16384 + 33};
  const size_t sas[] = {0, 1, 8, 33, 63};
  for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
    for (size_t da = 0; da < 64; da++)
      for (size_t s = 0; s < sizeof sas / sizeof sas[0]; s++) {
        size_t off = 128 + da, len = lens[l];
        memset(dst, 0xA5, off + len + 128);
        errno = 0;
        ms_dma_write(b, off, src + sas[s], len);
        assert_int_equal(errno, 0);
        assert_memory_equal(dst + off, src + sas[s], len);
        for (size_t i = off - 128; i < off; i++) assert_int_equal(dst[i], 0xA5);
        for (size_t i = off + len; i < off + len + 128; i++) assert_int_equal(dst[i], 0xA5);
      }
  free(src);
  ms_dma_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(eagain_pages),
      cmocka_unit_test(eagain_spaces),
      cmocka_unit_test(eagain_dma),
      cmocka_unit_test(efault_page_not_present),
      cmocka_unit_test(eio_contiguous_unreadable),
      cmocka_unit_test(dma_write_alignment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
