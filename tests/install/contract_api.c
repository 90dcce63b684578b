/* contract_api: every name of docs/contract.md §4 (spaces) and §5 (DMA) with the contract's exact signatures, types,
   fields and constants, compiled as strict C11 against the public header alone and linked with the static library
   and -lpthread only (§1), and the documented behaviours: NULL + errno, 0-or-errno returns, a fixed-size space
   failing with ENOMEM, caller memory, the scatter/gather list (or EPERM without CAP_SYS_ADMIN). */
#include <memspace.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stddef.h>
#include <stdlib.h>
#define CHECK(c)                                                                  \
  do {                                                                            \
    if (!(c)) {                                                                   \
      fprintf(stderr, "FAIL line %d: %s (errno %d)\n", __LINE__, #c, errno);      \
      fails++;                                                                    \
    }                                                                             \
  } while (0)
/* The structs' fields have the contract's types, in its order: a caller that fills them positionally, or reads them
   by the contract's declarations, keeps working. */
#define FIELD(T, f, type) _Static_assert(_Generic(((T *)0)->f, type: 1, default: 0), #T "." #f " is not " #type)
#define BEFORE(T, a, b) _Static_assert(offsetof(T, a) < offsetof(T, b), #T ": " #a " does not come before " #b)
FIELD(ms_space_config_t, initial_size, size_t); FIELD(ms_space_config_t, expand_size, size_t);
FIELD(ms_space_config_t, at, ms_space_at_t); FIELD(ms_space_config_t, flags, unsigned);
FIELD(ms_space_config_t, numa_node, int); FIELD(ms_space_config_t, name, const char *);
_Static_assert(sizeof(((ms_space_config_t *)0)->reserved) == 4 * sizeof(uint64_t), "ms_space_config_t.reserved");
BEFORE(ms_space_config_t, initial_size, expand_size); BEFORE(ms_space_config_t, expand_size, at);
BEFORE(ms_space_config_t, at, flags); BEFORE(ms_space_config_t, flags, numa_node);
BEFORE(ms_space_config_t, numa_node, name); BEFORE(ms_space_config_t, name, reserved);
FIELD(ms_space_info_t, size, size_t); FIELD(ms_space_info_t, used, size_t); FIELD(ms_space_info_t, free, size_t);
FIELD(ms_space_info_t, peak_used, size_t); FIELD(ms_space_info_t, largest_free_block, size_t);
FIELD(ms_space_info_t, free_blocks, size_t); FIELD(ms_space_info_t, allocs, uint64_t);
FIELD(ms_space_info_t, frees, uint64_t); FIELD(ms_space_info_t, oom_count, uint64_t);
FIELD(ms_space_info_t, expand_count, uint64_t);
_Static_assert(sizeof(((ms_space_info_t *)0)->reserved) == 4 * sizeof(uint64_t), "ms_space_info_t.reserved");
BEFORE(ms_space_info_t, size, used); BEFORE(ms_space_info_t, used, free); BEFORE(ms_space_info_t, free, peak_used);
BEFORE(ms_space_info_t, peak_used, largest_free_block); BEFORE(ms_space_info_t, largest_free_block, free_blocks);
BEFORE(ms_space_info_t, free_blocks, allocs); BEFORE(ms_space_info_t, allocs, frees);
BEFORE(ms_space_info_t, frees, oom_count); BEFORE(ms_space_info_t, oom_count, expand_count);
BEFORE(ms_space_info_t, expand_count, reserved);
FIELD(ms_dma_segment_t, phys, uint64_t); FIELD(ms_dma_segment_t, length, size_t); BEFORE(ms_dma_segment_t, phys, length);
FIELD(ms_dma_config_t, page_size, size_t); FIELD(ms_dma_config_t, numa_node, int); FIELD(ms_dma_config_t, flags, unsigned);
_Static_assert(sizeof(((ms_dma_config_t *)0)->reserved) == 4 * sizeof(uint64_t), "ms_dma_config_t.reserved");
BEFORE(ms_dma_config_t, page_size, numa_node); BEFORE(ms_dma_config_t, numa_node, flags);
BEFORE(ms_dma_config_t, flags, reserved);

static int visit(const void *block, size_t size, int used, void *arg) {
  (void)block, (void)size, (void)used;
  ++*(int *)arg;
  return 0;
}
int main(void) {
  int fails = 0;
  /* signatures: assign to pointers of the exact contract types */
  ms_space_t *(*f1)(const ms_space_config_t *) = ms_space_create;
  ms_space_t *(*f2)(void *, size_t, unsigned) = ms_space_create_in;
  void (*f3)(ms_space_t *) = ms_space_destroy;
  void *(*f4)(ms_space_t *, size_t) = ms_space_malloc;
  void *(*f5)(ms_space_t *, size_t, size_t) = ms_space_calloc;
  void *(*f6)(ms_space_t *, size_t, size_t) = ms_space_aligned_alloc;
  void *(*f7)(ms_space_t *, void *, size_t) = ms_space_realloc;
  void (*f8)(ms_space_t *, void *) = ms_space_free;
  size_t (*f9)(const ms_space_t *, const void *) = ms_space_usable_size;
  int (*f10)(ms_space_t *, size_t) = ms_space_expand;
  size_t (*f11)(ms_space_t *) = ms_space_shrink;
  int (*f12)(const ms_space_t *, ms_space_info_t *) = ms_space_info;
  int (*f13)(const ms_space_t *) = ms_space_check;
  int (*f14)(const ms_space_t *, int (*)(const void *, size_t, int, void *), void *) = ms_space_walk;
  ms_dma_buffer_t *(*g1)(size_t, const ms_dma_config_t *) = ms_dma_alloc;
  ms_dma_buffer_t *(*g2)(void *, size_t, const ms_dma_config_t *) = ms_dma_register;
  void (*g3)(ms_dma_buffer_t *) = ms_dma_free;
  void *(*g4)(const ms_dma_buffer_t *) = ms_dma_addr;
  size_t (*g5)(const ms_dma_buffer_t *) = ms_dma_size;
  size_t (*g6)(const ms_dma_buffer_t *) = ms_dma_page_size;
  const ms_dma_segment_t *(*g7)(const ms_dma_buffer_t *, size_t *) = ms_dma_segments;
  int (*g8)(const ms_dma_buffer_t *, size_t, uint64_t *) = ms_dma_phys;
  void (*g9)(ms_dma_buffer_t *, size_t, const void *, size_t) = ms_dma_write;
  (void)f1, (void)f2, (void)f3, (void)f4, (void)f5, (void)f6, (void)f7, (void)f8, (void)f9, (void)f10, (void)f11;
  (void)f12, (void)f13, (void)f14;
  (void)g1, (void)g2, (void)g3, (void)g4, (void)g5, (void)g6, (void)g7, (void)g8, (void)g9;
  /* types and fields */
  ms_space_at_t at = MS_SPACE_AT_FIRSTALLOC;
  CHECK(MS_SPACE_AT_START == 0 && MS_SPACE_AT_FIRSTALLOC == 1);
  CHECK(__builtin_popcount(MS_SPACE_LOCKED | MS_SPACE_ZERO | MS_SPACE_THREAD_SAFE | MS_SPACE_HUGE_PAGES) == 4);
  CHECK(__builtin_popcount(MS_DMA_CONTIGUOUS | MS_DMA_NO_FALLBACK) == 2);
  ms_space_config_t cfg = {.initial_size = 1 << 20, .expand_size = 1 << 20, .at = at,
                           .flags = MS_SPACE_LOCKED | MS_SPACE_ZERO | MS_SPACE_THREAD_SAFE, .numa_node = -1,
                           .name = "t", .reserved = {0, 0, 0, 0}};
  ms_space_info_t info;
  /* positional, as the contract declares the fields */
  ms_space_config_t pos = {1u << 16, 0, MS_SPACE_AT_START, MS_SPACE_ZERO, -1, "positional", {0, 0, 0, 0}};
  ms_space_t *ps = ms_space_create(&pos);
  CHECK(ps && ms_space_info(ps, &info) == 0 && info.size == (1u << 16) && info.used == 0);
  ms_space_destroy(ps);
  ms_dma_config_t pdc = {0, -1, 0, {0, 0, 0, 0}};
  (void)pdc;
  ms_space_t *s = ms_space_create(&cfg);
  CHECK(s);
  void *p = ms_space_malloc(s, 100);
  CHECK(p && ms_space_usable_size(s, p) >= 100);
  void *q = ms_space_calloc(s, 10, 10);
  CHECK(q && ((char *)q)[99] == 0);
  void *a = ms_space_aligned_alloc(s, 4096, 10);
  CHECK(a && ((uintptr_t)a & 4095) == 0);
  p = ms_space_realloc(s, p, 1000);
  CHECK(p);
  CHECK(ms_space_info(s, &info) == 0 && info.allocs >= 3 && info.size >= (1 << 20) && info.used > 0 &&
        info.free == info.size - info.used && info.peak_used >= info.used && info.largest_free_block > 0 &&
        info.free_blocks > 0 && info.frees + info.oom_count + info.expand_count < 1000 && info.reserved[0] == 0);
  CHECK(ms_space_check(s) == 0);
  int n = 0;
  CHECK(ms_space_walk(s, visit, &n) == 0 && n > 0);
  CHECK(ms_space_expand(s, 1 << 20) == 0);
  CHECK(ms_space_info(s, &info) == 0 && info.expand_count == 1);
  CHECK(ms_space_shrink(s) > 0);
  ms_space_free(s, p); ms_space_free(s, q); ms_space_free(s, a);
  ms_space_free(s, NULL);
  CHECK(ms_space_info(NULL, &info) != 0 && ms_space_check(NULL) != 0 && ms_space_walk(NULL, visit, &n) != 0);
  CHECK(ms_space_expand(NULL, 4096) == EINVAL && ms_space_usable_size(s, NULL) == 0);
  ms_space_destroy(s);
  ms_space_destroy(NULL);
  /* errors: NULL + errno */
  errno = 0; CHECK(ms_space_create(NULL) == NULL && errno == EINVAL);
  cfg.reserved[0] = 1; errno = 0; CHECK(ms_space_create(&cfg) == NULL && errno == EINVAL); cfg.reserved[0] = 0;
  cfg.flags = 0x100; errno = 0; CHECK(ms_space_create(&cfg) == NULL && errno == EINVAL); cfg.flags = 0;
  /* fixed size: ENOMEM when full */
  cfg.expand_size = 0; cfg.at = MS_SPACE_AT_START; cfg.initial_size = 1 << 16;
  s = ms_space_create(&cfg);
  CHECK(s);
  int k = 0; while (ms_space_malloc(s, 1024)) k++;
  CHECK(errno == ENOMEM && k > 0);
  CHECK(ms_space_info(s, &info) == 0 && info.oom_count >= 1);
  ms_space_destroy(s);
  static _Alignas(4096) char mem[1 << 18];
  s = ms_space_create_in(mem, sizeof mem, MS_SPACE_THREAD_SAFE);
  CHECK(s);
  p = ms_space_malloc(s, 1000);
  CHECK(p && (char *)p >= mem && (char *)p < mem + sizeof mem);
  ms_space_free(s, p);
  CHECK(ms_space_expand(s, 4096) != 0);
  ms_space_destroy(s);
  errno = 0; CHECK(ms_space_create_in(NULL, 4096, 0) == NULL && errno == EINVAL);
  /* DMA */
  ms_dma_segment_t seg = {.phys = 0, .length = 0}; (void)seg;
  ms_dma_config_t dc = {.page_size = 0, .numa_node = -1, .flags = 0, .reserved = {0}};
  CHECK(MS_DMA_CONTIGUOUS != MS_DMA_NO_FALLBACK);
  ms_dma_buffer_t *b = ms_dma_alloc(1 << 20, &dc);
  int refused = 0; /* the kernel refused to pin: its checks are skipped, and the test says so (exit 77) */
  if (!b) {
    CHECK(errno == ENOMEM || errno == EPERM || errno == EAGAIN); /* pinning refused here: a documented failure */
    printf("MS_SKIP refused: dma allocation of 1 MiB: %s (its checks skipped)\n", strerror(errno));
    refused = 1;
  } else {
    CHECK(ms_dma_addr(b) != NULL && ms_dma_size(b) == (1 << 20) && ms_dma_page_size(b) >= 4096);
    char buf[8192]; memset(buf, 7, sizeof buf);
    ms_dma_write(b, 100, buf, sizeof buf);
    CHECK(((char *)ms_dma_addr(b))[100 + 8191] == 7 && ((char *)ms_dma_addr(b))[99] == 0);
    size_t cnt = 99;
    const ms_dma_segment_t *sg = ms_dma_segments(b, &cnt);
    if (sg) {
      size_t tot = 0; for (size_t i = 0; i < cnt; i++) tot += sg[i].length;
      CHECK(tot == (1 << 20));
      uint64_t ph; CHECK(ms_dma_phys(b, 5, &ph) == 0 && ph == sg[0].phys + 5);
    } else CHECK(errno == EPERM);
    ms_dma_free(b);
  }
  errno = 0; CHECK(ms_dma_alloc(0, &dc) == NULL && errno == EINVAL);
  dc.reserved[1] = 1; errno = 0; CHECK(ms_dma_alloc(4096, &dc) == NULL && errno == EINVAL); dc.reserved[1] = 0;
  void *m = aligned_alloc(4096, 1 << 16);
  b = ms_dma_register(m, 1 << 16, NULL);
  CHECK(b ? ms_dma_addr(b) == m && ms_dma_size(b) == (1 << 16)
          : (errno == ENOMEM || errno == EPERM || errno == EAGAIN));
  ms_dma_free(b);
  free(m);
  errno = 0; CHECK(ms_dma_register(NULL, 4096, NULL) == NULL && errno == EINVAL);
  CHECK(ms_dma_addr(NULL) == NULL && ms_dma_size(NULL) == 0 && ms_dma_page_size(NULL) == 0);
  uint64_t ph0; CHECK(ms_dma_phys(NULL, 0, &ph0) == EINVAL);
  ms_dma_free(NULL);
  printf("%s\n", fails ? "FAILED" : "api ok");
  return fails ? 1 : refused ? 77 : 0;
}
