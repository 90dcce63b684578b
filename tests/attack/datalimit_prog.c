/* datalimit_prog: the heap under RLIMIT_DATA, which (like vm.overcommit_memory=2) charges every read-write private
   mapping, resident or not.
   reuse: a program fills the limit with small blocks, frees every one of them, then asks for a block of another
   size: it must get it, as glibc gives it from the freed memory. Freed segments kept mapped read-write (cached,
   then purged with MADV_DONTNEED, still charged) would have every later mapping refused: the program, holding
   nothing, would get NULL + ENOMEM for good.
   released: the limit met by small blocks (the segment area's reservation goes back), all freed and trimmed (the
   idle segments past the kept ones released: mapped read-only), the limit filled with large blocks, then small
   blocks asked for: NULL + ENOMEM at the limit. Growing the last segment's mapping in place (mremap, the heap's
   answer to the mapping limit) when that segment is a released, read-only one would kill the program at its
   first write (SIGSEGV).
   large: blocks of 40,000 B under a limit of 32 MiB: at least half the limit is served (glibc: 31 MB). The
   large-slot table mapped read-write whole (32 MiB with the whole reservation) at the 17th block would take the
   limit (Python under `ulimit -d 48000` would hold 59 such blocks, 2.4 MB).
   cache: the limit (256 MiB) filled with blocks of 100,000 B, all freed, then a block of 8 MiB: served. Freed
   blocks' slots kept mapped read-write (charged), and a retry after the refusal that gave back only the small
   blocks' segments, would leave the program, holding nothing, with NULL. cache_dense: the same under 1280 MiB,
   where the sizes of 64 KiB-1 MiB take dense slots: the freed sizes' mappings go back whole.
   sizes: under a limit of 256 MiB, blocks of 40,000, 100,000, 300,000 and 600,000 B in turn, each size until
   malloc refuses, then all freed: each size at least half the limit (glibc: each 250 MB). Slots of 64 KiB-1 MiB
   (dense) mapped read-write in runs that only grow would keep the limit's charge after the frees, and a block
   would take its whole power-of-two slot's: 144 MB of the first size, then not one block of the others.
   late: the sizes' case when a block of a dense size (100,000 B) was taken before the limit was lowered (a C++
   program's exception pool, allocated before main): blocks of 123,000 B until malloc refuses, all freed, then
   blocks of 131,108 B: at least half the limit (glibc: 1,980 blocks, 259 MB). The limit read once, at the first
   block, would leave dense slots on, and the freed blocks' slots, mapped read-write beside the live one, charged:
   not one block of the second size.
   Exit 0: as glibc; 1: a block refused that glibc serves; a signal: the crash. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* blocks of `size` until malloc refuses, chained through their first word */
static void *fill(size_t size, size_t *n) {
  void *prev = NULL;
  *n = 0;
  for (void **p; (p = malloc(size)) != NULL; ++*n) {
    memset(p, 1, size < 4096 ? size : 4096);
    *p = prev;
    prev = p;
  }
  return prev;
}
static void drop(void *chain) {
  while (chain) {
    void *next = *(void **)chain;
    free(chain);
    chain = next;
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "reuse";
  int released = strcmp(mode, "released") == 0;
  int dense = strcmp(mode, "cache_dense") == 0, cache = dense || strcmp(mode, "cache") == 0;
  int sizes = strcmp(mode, "sizes") == 0, late = strcmp(mode, "late") == 0;
  size_t limit = (dense ? 1280u : cache || sizes || late ? 256u : released ? 64u : strcmp(mode, "large") == 0 ? 32u : 16u) << 20;
  void *early = late ? malloc(100000) : NULL; /* before the limit, kept */
  struct rlimit rl = {limit, limit};
  if (setrlimit(RLIMIT_DATA, &rl) != 0) { perror("setrlimit"); return 2; }
  size_t n1, n2, n3;
  if (late) {
    drop(fill(123000, &n1));
    void *blocks = fill(131108, &n2);
    printf("%zu blocks of 123,000 B freed (one of 100,000 B taken before RLIMIT_DATA %zu MiB); then %zu of 131,108 B\n",
           n1, limit >> 20, n2);
    drop(blocks);
    free(early);
    return n1 && n2 * 131108 >= limit / 2 ? 0 : 1;
  }
  if (sizes) {
    static const size_t size[] = {40000, 100000, 300000, 600000};
    int fail = 0;
    for (unsigned i = 0; i < sizeof size / sizeof size[0]; i++) {
      void *blocks = fill(size[i], &n2);
      printf("%zu blocks of %zu B (%zu MB) under RLIMIT_DATA %zu MiB\n", n2, size[i], n2 * size[i] / 1000000,
             limit >> 20);
      drop(blocks);
      fail |= n2 * size[i] < limit / 2;
    }
    return fail;
  }
  if (strcmp(mode, "large") == 0) {
    void *large = fill(40000, &n2);
    printf("%zu blocks of 40,000 B under RLIMIT_DATA %zu MiB\n", n2, limit >> 20);
    drop(large);
    return n2 * 40000 >= limit / 2 ? 0 : 1;
  }
  if (cache) {
    drop(fill(100000, &n1));
    char *big = malloc(8u << 20);
    printf("%zu blocks of 100,000 B freed; then malloc(8 MiB) %p\n", n1, (void *)big);
    if (!n1 || !big) return 1;
    memset(big, 2, 8u << 20);
    free(big);
    return 0;
  }
  drop(fill(16, &n1));
  if (released) {
    malloc_trim(0);
    void *large = fill(40000, &n2);
    void *small = fill(16, &n3);
    printf("%zu blocks of 16 B freed; then %zu of 40,000 B and %zu of 16 B\n", n1, n2, n3);
    drop(small);
    drop(large);
    return n2 && n3 ? 0 : 1;
  }
  char *mid = malloc(40000), *big = malloc(4u << 20);
  printf("%zu blocks of 16 B freed; then malloc(40000) %p, malloc(4 MiB) %p\n", n1, (void *)mid, (void *)big);
  if (!mid || !big) return 1;
  memset(mid, 1, 40000);
  memset(big, 2, 4u << 20);
  free(mid);
  free(big);
  return 0;
}
