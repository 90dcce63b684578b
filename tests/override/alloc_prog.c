/* alloc_prog: a plain malloc program for run_modes.sh (no memspace headers: run under `memspace run`).
   alloc_prog mix MiB   blocks from 16 B to 8 MiB, MiB in all, written, checked, freed: exit 0 when intact
   alloc_prog big MiB   one block of MiB, first and last page written: exit 0 when malloc succeeded
   alloc_prog bigs      large blocks of every kind (many of one size, realloc up and down, calloc, aligned),
                        written and checked: exit 0 when all were served intact (run under ulimit -v)
   alloc_prog many N KiB  N blocks of KiB live at once, checked: exit 0 when all were served
   alloc_prog manygrow N KiB  the same, each block then realloc'd to twice its size while all stay live
   alloc_prog small MiB  MiB of 100-byte blocks live at once, checked: exit 0 when all were served
   alloc_prog bigdf     a 600 MiB block freed twice (must abort naming a double free)
   alloc_prog thp       a 4 MiB block: exit 0 when its mapping is advised for transparent huge pages (VmFlags hg)
   With LD_PRELOAD naming libmemspace, every mode first checks that malloc is memspace's: exit 3 when not. */
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ms_test.h"

static int mix(size_t mib) {
  size_t total = mib << 20, used = 0, n = 0, cap = 1 << 16;
  unsigned char **v = malloc(cap * sizeof *v);
  size_t *len = malloc(cap * sizeof *len);
  if (!v || !len) return 1;
  uint32_t x = 1;
  while (used < total && n < cap) {
    x = x * 1103515245u + 12345u;
    size_t sz = (size_t)16 << (x >> 8) % 20; /* 16 B .. 8 MiB */
    if (sz > total - used) sz = total - used;
    v[n] = malloc(sz);
    if (!v[n]) { fprintf(stderr, "alloc_prog: malloc(%zu) failed after %zu bytes\n", sz, used); return 1; }
    memset(v[n], (int)(n & 0xff), sz);
    len[n++] = sz;
    used += sz;
  }
  for (size_t i = 0; i < n; i++) {
    if (v[i][0] != (unsigned char)(i & 0xff) || v[i][len[i] - 1] != (unsigned char)(i & 0xff)) return 1;
    free(v[i]);
  }
  free(v);
  free(len);
  return 0;
}

static int big(size_t mib) {
  size_t sz = mib << 20;
  unsigned char *p = malloc(sz);
  if (!p) { fprintf(stderr, "alloc_prog: malloc(%zu MiB) failed\n", mib); return 1; }
  p[0] = 1;
  p[sz - 1] = 2;
  free(p);
  return 0;
}

#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "alloc_prog: " __VA_ARGS__); fprintf(stderr, "\n"); return 1; } } while (0)
static int filled(const unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i += 4096) if (p[i] != v) return 0;
  return n == 0 || p[n - 1] == v;
}
static int bigs(void) {
  const size_t M = 1 << 20;
  unsigned char *b[6];
  for (int i = 0; i < 6; i++) { /* more blocks of one size than a reduced region has slots for */
    b[i] = malloc(200 * M);
    CHECK(b[i], "malloc #%d of 200 MiB failed", i);
    CHECK(malloc_usable_size(b[i]) >= 200 * M, "usable size %zu", malloc_usable_size(b[i]));
    memset(b[i], i + 1, 200 * M);
  }
  for (int i = 0; i < 6; i++) CHECK(filled(b[i], 200 * M, (unsigned char)(i + 1)), "block %d corrupted", i);
  for (int i = 0; i < 6; i++) free(b[i]);
  unsigned char *r = malloc(40 * M);
  CHECK(r, "malloc 40 MiB");
  memset(r, 7, 40 * M);
  unsigned char *r2 = realloc(r, 600 * M); /* grows out of any slot */
  CHECK(r2 && filled(r2, 40 * M, 7), "realloc up to 600 MiB lost the data");
  memset(r2, 8, 600 * M);
  r = realloc(r2, 300 * M);
  CHECK(r && filled(r, 300 * M, 8), "realloc down to 300 MiB lost the data");
  r2 = realloc(r, 100 << 10);
  CHECK(r2 && filled(r2, 100 << 10, 8), "realloc down to 100 KiB lost the data");
  free(r2);
  unsigned char *z = calloc(300, M);
  CHECK(z && filled(z, 300 * M, 0), "calloc 300 MiB not zero");
  free(z);
  void *a = aligned_alloc(64 * M, 100 * M);
  CHECK(a && ((uintptr_t)a & (64 * M - 1)) == 0, "aligned_alloc(64 MiB, 100 MiB): %p", a);
  memset(a, 9, 100 * M);
  free(a);
  unsigned char *again = malloc(1000 * M); /* the freed space is usable again */
  CHECK(again, "malloc 1000 MiB after the frees");
  again[1000 * M - 1] = 1;
  free(again);
  return 0;
}

/* the process's peak resident set (VmHWM), KiB; -1 when unreadable */
static long peak_rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %ld", &v) == 1) break;
  if (f) fclose(f);
  return v;
}

/* n blocks of kib KiB, live together, each marked at both ends, checked, then freed: exit 0 when all were served */
static int many(size_t n, size_t kib, bool grow) {
  unsigned char **b = malloc(n * sizeof *b);
  CHECK(b, "table");
  for (size_t i = 0; i < n; i++) {
    b[i] = malloc(kib << 10);
    CHECK(b[i], "block %zu of %zu KiB failed", i, kib);
    b[i][0] = b[i][(kib << 10) - 1] = (unsigned char)i;
  }
  for (size_t i = 0; i < n; i++) CHECK(b[i][0] == (unsigned char)i && b[i][(kib << 10) - 1] == (unsigned char)i, "block %zu", i);
  if (grow) { /* each block to twice its size, all live: moved blocks keep their bytes */
    for (size_t i = 0; i < n; i++) {
      unsigned char *g = realloc(b[i], kib << 11);
      CHECK(g, "realloc of block %zu to %zu KiB failed", i, kib * 2);
      CHECK(g[0] == (unsigned char)i && g[(kib << 10) - 1] == (unsigned char)i, "block %zu moved", i);
      b[i] = g;
      b[i][(kib << 11) - 1] = (unsigned char)i;
    }
    for (size_t i = 0; i < n; i++) CHECK(b[i][0] == (unsigned char)i && b[i][(kib << 11) - 1] == (unsigned char)i, "block %zu", i);
    /* no block was copied: a copy commits every page of these sparse blocks (a page or three written each) */
    long hwm = peak_rss_kib();
    CHECK(hwm < 0 || (size_t)hwm < 64 * 1024 + n * 64, "peak RSS %ld KiB for %zu sparse blocks: were they copied?", hwm, n);
  }
  for (size_t i = 0; i < n; i++) free(b[i]);
  free(b);
  void *again = malloc(kib << 10); /* after the frees: still served */
  CHECK(again, "a block after the frees");
  free(again);
  return 0;
}

/* blocks of 100 bytes, mib MiB of them, each marked, checked, freed: exit 0 when all were served */
static int small(size_t mib) {
  size_t n = (mib << 20) / 100;
  unsigned char **b = malloc(n * sizeof *b);
  CHECK(b, "table");
  for (size_t i = 0; i < n; i++) {
    b[i] = malloc(100);
    CHECK(b[i], "block %zu of %zu (100 bytes) failed", i, n);
    b[i][0] = b[i][99] = (unsigned char)i;
  }
  for (size_t i = 0; i < n; i++) CHECK(b[i][0] == (unsigned char)i && b[i][99] == (unsigned char)i, "block %zu", i);
  for (size_t i = 0; i < n; i++) free(b[i]);
  free(b);
  return 0;
}

static int thp(void) {
  char *p = malloc(4u << 20);
  if (!p) return 1;
  memset(p, 1, 4u << 20);
  int found = ms_test_vm_flag(p, "hg");
  if (found < 0) return 77;
  if (!found) fprintf(stderr, "alloc_prog: block %p: no 'hg' in its mapping's VmFlags\n", (void *)p);
  free(p);
  return found ? 0 : 1;
}

int main(int argc, char **argv) {
  if (ms_test_preload_check()) return 3; /* run under memspace run, but glibc served it */
  if (argc >= 3 && strcmp(argv[1], "mix") == 0) return mix(strtoul(argv[2], NULL, 10));
  if (argc >= 3 && strcmp(argv[1], "big") == 0) return big(strtoul(argv[2], NULL, 10));
  if (argc >= 2 && strcmp(argv[1], "thp") == 0) return thp();
  if (argc >= 3 && strcmp(argv[1], "small") == 0) return small(strtoul(argv[2], NULL, 10));
  if (argc >= 2 && strcmp(argv[1], "bigs") == 0) return bigs();
  if (argc >= 4 && strcmp(argv[1], "many") == 0) return many(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10), false);
  if (argc >= 4 && strcmp(argv[1], "manygrow") == 0) return many(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10), true);
  if (argc >= 2 && strcmp(argv[1], "bigdf") == 0) { /* a 600 MiB block freed twice: the second must be refused */
    unsigned char *p = malloc(600u << 20);
    if (!p) return 1;
    p[0] = 1;
    void *volatile again = p; /* the compiler must not see the second free coming */
    free(p);
    free(again);
    return 0;
  }
  fprintf(stderr, "usage: alloc_prog mix MiB | big MiB | bigs | bigdf | many N KiB | thp\n");
  return 2;
}
