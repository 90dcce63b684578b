/* A red-team pass over the spaces, the page layer's users and ms_is_ours, against include/memspace.h's /// promises:
   - an MS_SPACE_AT_FIRSTALLOC space expanded before its first allocation commits its initial size at that
     allocation (which takes the expansion), not at a later one: no system calls and page faults in what the
     header calls the steady state after the first allocation;
   - ms_is_ours answers for the memory the malloc family manages, not for any space's memory;
   - ms_dma_free of registered memory munlocks, and marks MADV_DOFORK, only what the registration locked and
     marked, not the parts the caller had mlocked or marked MADV_DONTFORK itself (its real-time memory would turn
     swappable, its device buffer copied on fork);
   - ms_dma_free of an allocated buffer with memory registered inside it still live must not unmap it (the
     registration's list would name pages the kernel gives to the next mapping): the pages stay until the last
     registration inside them is freed;
   - a NUMA node is checked against the kernel's online list (msi_os_numa_parse, tested on such lists), not the
     count of node directories up to the first gap: on a machine whose node ids have gaps (a node taken offline,
     memory-only nodes: online "0,2-3") nodes 2 and 3 are valid;
   - ms_space_aligned_alloc with an alignment no block of the space has names the alignment and the most the
     space gives, not "no room for 100 bytes (4096 of 67108864 bytes in use)";
   - a failed ms_dma_register undoes its own mlock on the range when the caller had locked a part, and leaves the
     locks of a live buffer the range overlaps;
   - ms_dma_register of a file mapping that runs past the end of its file fails with EFAULT and a message naming
     the first such address, as the header promises, not a bare "pre-faulting failed". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "memspace.h"
#include "ms_test.h"
#include "os.h"

#define KiB ((size_t)1024)

static size_t space_size(const ms_space_t *s) {
  ms_space_info_t i;
  assert_int_equal(ms_space_info(s, &i), 0);
  return i.size;
}

/* ms_space_expand before the first allocation commits the initial size with the expansion: the first allocation
   finds a space of initial + expansion committed, and the allocations after it, while they fit, commit nothing */
static void firstalloc_expand_commits_initial(void **state) {
  (void)state;
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = 64 * KiB;
  c.expand_size = 64 * KiB;
  c.at = MS_SPACE_AT_FIRSTALLOC;
  c.numa_node = -1;
  ms_space_t *s = ms_space_create(&c);
  assert_non_null(s);
  assert_int_equal(space_size(s), 0);
  assert_int_equal(ms_space_expand(s, 8 * KiB), 0);
  assert_int_equal(space_size(s), 72 * KiB); /* the initial 64 KiB and the 8 KiB asked for */
  void *first = ms_space_malloc(s, 8 * KiB);
  assert_non_null(first);
  void *more[8];
  for (int i = 0; i < 8; i++) assert_non_null(more[i] = ms_space_malloc(s, 4 * KiB)); /* 32 KiB of the initial */
  ms_space_info_t info;
  assert_int_equal(ms_space_info(s, &info), 0);
  assert_int_equal(info.size, 72 * KiB);
  assert_int_equal(info.expand_count, 1);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_destroy(s);
}

/* ms_is_ours: 1 for the heap's blocks, 0 for memory of the other parts (a space made with ms_space_create, a
   frame, a DMA buffer, a page-layer range), which free and realloc refuse */
static void is_ours_answers_for_the_malloc_family(void **state) {
  (void)state;
  void *h = ms_malloc(100);
  assert_int_equal(ms_is_ours(h), 1);
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = 64 * KiB;
  c.numa_node = -1;
  ms_space_t *s = ms_space_create(&c);
  assert_non_null(s);
  void *b = ms_space_malloc(s, 64);
  assert_non_null(b);
  assert_int_equal(ms_is_ours(b), 0);
  ms_frame_config_t fc;
  memset(&fc, 0, sizeof fc);
  fc.range_size = 64 * KiB;
  ms_frame_t *f = ms_frame_create(&fc);
  assert_non_null(f);
  assert_int_equal(ms_is_ours(ms_frame_alloc(f, 64, 0)), 0);
  ms_pages_t pg;
  assert_int_equal(ms_pages_reserve(64 * KiB, 0, MS_PAGES_COMMIT, -1, &pg), 0);
  assert_int_equal(ms_is_ours(pg.addr), 0);
  assert_int_equal(ms_pages_release(pg.addr, pg.size), 0);
  ms_frame_destroy(f);
  ms_space_destroy(s);
  ms_free(h);
}

#define MLOCK_OBSERVABLE (!MS_TEST_MLOCK_NOOP) /* ms_test.h */

/* registering memory the caller had partly pinned, then unregistering it, leaves the caller's pins in place */
static void dma_register_keeps_callers_pins(void **state) {
  (void)state;
  size_t ps = ms_page_size();
  char *m = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(m != MAP_FAILED);
  int can_lock = MLOCK_OBSERVABLE && mlock(m, ps) == 0; /* page 0: the caller's lock */
  assert_int_equal(madvise(m + ps, ps, MADV_DONTFORK), 0); /* page 1: the caller's mark */
  ms_dma_buffer_t *b = ms_dma_register(m, 4 * ps, NULL);
  if (!b && (errno == EPERM || errno == ENOMEM || errno == EAGAIN)) {
    munmap(m, 4 * ps);
    ms_skip_refused(errno, "mlock of 4 pages for ms_dma_register");
  }
  assert_non_null(b);
  for (int i = 0; i < 4; i++) assert_int_equal(ms_test_vm_flag(m + i * ps, "dc"), 1);
  ms_dma_free(b);
  if (can_lock) assert_int_equal(ms_test_vm_flag(m, "lo"), 1);
  assert_int_equal(ms_test_vm_flag(m + ps, "dc"), 1);
  munmap(m, 4 * ps);
  /* memory the caller had not pinned at all gets both undone */
  m = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(m != MAP_FAILED);
  b = ms_dma_register(m, 4 * ps, NULL);
  assert_non_null(b);
  ms_dma_free(b);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(ms_test_vm_flag(m + i * ps, "lo"), 0);
    assert_int_equal(ms_test_vm_flag(m + i * ps, "dc"), 0);
  }
  munmap(m, 4 * ps);
}

/* the lock ("lo") and mark ("dc") of each of six pages: want[i] is 'l', 'd', 'b'oth or '-' */
static void pins_are(const char *m, const char *want) {
  size_t ps = ms_page_size();
  for (int i = 0; want[i]; i++) {
    if (MLOCK_OBSERVABLE) assert_int_equal(ms_test_vm_flag(m + i * ps, "lo"), want[i] == 'l' || want[i] == 'b');
    assert_int_equal(ms_test_vm_flag(m + i * ps, "dc"), want[i] == 'd' || want[i] == 'b');
  }
}

/* a registration that fails after pinning undoes its own mlock and MADV_DONTFORK, and only those: the caller's
   lock (page 0) and mark (page 1) and a live registration's pins (pages 4-5) stay. Two failures: MADV_DONTFORK
   refused (fault injection; pre-faulting as before Linux 5.14, so that it is the first madvise), and
   MS_DMA_CONTIGUOUS on pages that are not one physical run (or EPERM without CAP_SYS_ADMIN), after both pins */
static void dma_register_failure_undoes_its_pins(void **state) {
  (void)state;
  size_t ps = ms_page_size();
  char *m = mmap(NULL, 6 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(m != MAP_FAILED);
  if (MLOCK_OBSERVABLE && mlock(m, ps) != 0) {
    int e = errno;
    munmap(m, 6 * ps);
    ms_skip_refused(e, "mlock of a page");
  }
  assert_int_equal(madvise(m + ps, ps, MADV_DONTFORK), 0);
  ms_dma_buffer_t *live = ms_dma_register(m + 4 * ps, 2 * ps, NULL);
  assert_non_null(live);
  const char *before = MLOCK_OBSERVABLE ? "ld--bb" : "-d--bb";
  pins_are(m, before);
  msi_os_populate_write_hide(true);
  ms_fault_inject(MS_FAULT_MADVISE, 1, EIO);
  errno = 0;
  ms_dma_buffer_t *b = ms_dma_register(m, 6 * ps, NULL);
  int e = errno;
  ms_fault_inject(MS_FAULT_MADVISE, 0, 0);
  msi_os_populate_write_hide(false);
  assert_null(b);
  assert_int_equal(e, EIO);
  pins_are(m, before);
  ms_dma_config_t c;
  memset(&c, 0, sizeof c);
  c.numa_node = -1;
  c.flags = MS_DMA_CONTIGUOUS;
  b = ms_dma_register(m, 6 * ps, &c);
  if (b) { /* one physical run by chance: nothing failed */
    ms_dma_free(b);
  } else {
    assert_true(errno == EINVAL || errno == EPERM);
    pins_are(m, before);
  }
  ms_dma_free(live);
  munmap(m, 6 * ps);
}

/* the stderr that fn writes, into buf */
static void capture_stderr(void (*fn)(void *), void *arg, char *buf, size_t cap) {
  FILE *tmp = tmpfile();
  assert_non_null(tmp);
  fflush(stderr);
  int saved = dup(2);
  assert_true(saved >= 0 && dup2(fileno(tmp), 2) == 2);
  fn(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(tmp);
  size_t n = fread(buf, 1, cap - 1, tmp);
  buf[n] = 0;
  fclose(tmp);
}
static int free_errno;
static void free_it(void *b) {
  errno = 0;
  ms_dma_free(b);
  free_errno = errno;
}

/* whether [p, p+size) is mapped: mincore fails with ENOMEM on a hole */
static int mapped(const void *p, size_t size) {
  unsigned char vec[16];
  return mincore((void *)p, size, vec) == 0;
}

/* an allocated buffer freed while registrations lie inside: the free succeeds and the handle is gone, the pages
   stay mapped (and the registrations work) until the last registration inside is freed, then they go */
static void dma_free_deferred_under_registration(void **state) {
  (void)state;
  size_t ps = ms_page_size();
  ms_dma_config_t c;
  memset(&c, 0, sizeof c);
  c.page_size = ps;
  c.numa_node = -1;
  ms_dma_buffer_t *outer = ms_dma_alloc(4 * ps, &c);
  if (!outer && (errno == EPERM || errno == ENOMEM || errno == EAGAIN))
    ms_skip_refused(errno, "ms_dma_alloc of 4 pages");
  assert_non_null(outer);
  char *m = ms_dma_addr(outer);
  ms_dma_buffer_t *first = ms_dma_register(m + ps, ps, NULL);
  ms_dma_buffer_t *second = ms_dma_register(m + 2 * ps, 2 * ps, NULL);
  assert_non_null(first);
  assert_non_null(second);
  errno = 0;
  ms_dma_free(outer);
  assert_int_equal(errno, 0); /* freed */
  assert_int_equal(ms_dma_size(outer), 0);
  assert_int_equal(errno, EINVAL); /* the handle is gone */
  char msg[1024];
  capture_stderr(free_it, outer, msg, sizeof msg); /* a second free is reported */
  assert_int_equal(free_errno, EINVAL);
  assert_non_null(strstr(msg, "freed already"));
  assert_true(mapped(m, 4 * ps)); /* the pages stay while registrations lie inside */
  if (MLOCK_OBSERVABLE) assert_int_equal(ms_test_vm_flag(m, "lo"), 1);
  m[0] = 1;
  ms_dma_write(first, 0, "x", 1);
  assert_int_equal(m[ps], 'x');
  ms_dma_free(first);
  assert_true(mapped(m, 4 * ps)); /* one registration left */
  if (MLOCK_OBSERVABLE) assert_int_equal(ms_test_vm_flag(m + ps, "lo"), 1);
  ms_dma_write(second, ps, "y", 1);
  assert_int_equal(m[3 * ps], 'y');
  errno = 0;
  ms_dma_free(second);
  assert_int_equal(errno, 0);
  assert_false(mapped(m, ps)); /* the last one gone: released */
  assert_false(mapped(m + 3 * ps, ps));
}

static bool node_bit(const uint64_t *m, unsigned n) { return (m[n / 64] >> (n % 64)) & 1; }

/* the online list with gaps: every listed node, no other */
static void numa_online_list_with_gaps(void **state) {
  (void)state;
  uint64_t m[MSI_OS_NUMA_MAX / 64];
  assert_true(msi_os_numa_parse("0,2-3\n", m));
  assert_true(node_bit(m, 0) && !node_bit(m, 1) && node_bit(m, 2) && node_bit(m, 3) && !node_bit(m, 4));
  assert_true(msi_os_numa_parse("8", m));
  assert_true(node_bit(m, 8) && !node_bit(m, 0) && !node_bit(m, 7));
  assert_true(msi_os_numa_parse("0-1,64,1023", m));
  assert_true(node_bit(m, 1) && node_bit(m, 64) && node_bit(m, 1023) && !node_bit(m, 63));
  assert_false(msi_os_numa_parse("", m));
  assert_false(msi_os_numa_parse("0-", m));
  assert_false(msi_os_numa_parse("x", m));
  /* this machine: node 0 exists everywhere; a node past the online list is refused */
  ms_pages_t pg;
  assert_int_equal(ms_pages_reserve(4096, 0, MS_PAGES_COMMIT, 0, &pg), 0);
  assert_int_equal(ms_pages_bind(pg.addr, pg.size, -1), EINVAL);
  assert_int_equal(ms_pages_bind(pg.addr, pg.size, MSI_OS_NUMA_MAX), EINVAL);
  assert_int_equal(ms_pages_release(pg.addr, pg.size), 0);
  assert_int_equal(ms_pages_reserve(4096, 0, MS_PAGES_COMMIT, MSI_OS_NUMA_MAX, &pg), EINVAL);
}

static ms_space_t *align_space;
static void *align_result;
static int align_errno;
static void aligned_too_far(void *arg) {
  errno = 0;
  align_result = ms_space_aligned_alloc(align_space, *(size_t *)arg, 100);
  align_errno = errno;
}

/* an alignment beyond the space's: ENOMEM, and the message (MEMSPACE_VERBOSE) says it is the alignment */
static void space_alignment_refusal_named(void **state) {
  (void)state;
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = 64 * KiB;
  c.numa_node = -1;
  c.name = "red4";
  align_space = ms_space_create(&c);
  assert_non_null(align_space);
  long long verbose = ms_option_get(MS_OPTION_VERBOSE);
  assert_int_equal(ms_option_set(MS_OPTION_VERBOSE, 1), 0);
  size_t align = (size_t)1 << 40;
  char msg[1024];
  capture_stderr(aligned_too_far, &align, msg, sizeof msg);
  ms_option_set(MS_OPTION_VERBOSE, verbose);
  assert_null(align_result);
  assert_int_equal(align_errno, ENOMEM);
  printf("%s", msg);
  assert_non_null(strstr(msg, "space red4: no room for 100 bytes"));
  assert_non_null(strstr(msg, "aligned to 1099511627776: blocks of this space are aligned to "));
  ms_space_destroy(align_space);
}

static void *register_result;
static int register_errno;
static void register_it(void *m) {
  errno = 0;
  register_result = ms_dma_register(m, 3 * ms_page_size(), NULL);
  register_errno = errno;
}

/* a shared file mapping of 3 pages over a file of 1: EFAULT, the message names the second page */
static void dma_register_past_eof_named(void **state) {
  (void)state;
  size_t ps = ms_page_size();
  char path[] = "/tmp/ms-red4-eof.XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  assert_int_equal(ftruncate(fd, (off_t)ps), 0);
  char *m = mmap(NULL, 3 * ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  assert_true(m != MAP_FAILED);
  char msg[1024], name[64];
  capture_stderr(register_it, m, msg, sizeof msg);
  printf("%s", msg);
  assert_null(register_result);
  assert_int_equal(register_errno, EFAULT);
  snprintf(name, sizeof name, "at address %p", (void *)(m + ps));
  assert_non_null(strstr(msg, name));
  munmap(m, 3 * ps);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(firstalloc_expand_commits_initial),
      cmocka_unit_test(is_ours_answers_for_the_malloc_family),
      cmocka_unit_test(dma_register_keeps_callers_pins),
      cmocka_unit_test(dma_register_failure_undoes_its_pins),
      cmocka_unit_test(dma_free_deferred_under_registration),
      cmocka_unit_test(numa_online_list_with_gaps),
      cmocka_unit_test(space_alignment_refusal_named),
      cmocka_unit_test(dma_register_past_eof_named),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
