/* SPDX-License-Identifier: MIT */
/* realloc_grow.c: grows one block with plain realloc up to --max bytes, for `memspace bench heap`.
   --step BYTES grows by a fixed step (e.g. 1 MiB); --double doubles from --start. Every page of the new part
   is written and a marker at the start of every step is checked at the end, so an allocator that moves the
   block must move its contents. An allocator that copies on every step is quadratic: the run stops after
   --limit-s seconds and reports how far it got (max_completed_bytes).
   Output: "metric value" lines: seconds, max_completed_bytes, reallocs, moves, peak_rss_bytes.
   Exit 0, 1 usage, 2 out of memory, 3 contents lost. */
#include "wl.h"

int main(int argc, char **argv) {
  size_t step = 0, start = 1 << 20, max = (size_t)1 << 30;
  int dbl = 0;
  double limit = 10;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--double") == 0) dbl = 1;
    else if (i + 1 < argc && strcmp(argv[i], "--step") == 0) step = strtoull(argv[++i], NULL, 0);
    else if (i + 1 < argc && strcmp(argv[i], "--start") == 0) start = strtoull(argv[++i], NULL, 0);
    else if (i + 1 < argc && strcmp(argv[i], "--max") == 0) max = strtoull(argv[++i], NULL, 0);
    else if (i + 1 < argc && strcmp(argv[i], "--limit-s") == 0) limit = atof(argv[++i]);
    else { fprintf(stderr, "usage: realloc_grow (--step BYTES | --double [--start BYTES]) [--max BYTES] [--limit-s S]\n"); return 1; }
  }
  if (!dbl && !step) step = 1 << 20;
  if (!dbl) start = step;
  if (start < 64 || max < start) return 1;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  double t0 = wl_now();
  unsigned char *p = malloc(start);
  if (!p) return 2;
  for (size_t off = 0; off < start; off += page) p[off] = 1;
  size_t size = start, marks = 0, reallocs = 0, moves = 0;
  p[0] = 0xA5;
  while (size < max && wl_now() - t0 < limit) {
    size_t next = dbl ? size * 2 : size + step;
    if (next > max) next = max;
    unsigned char *q = realloc(p, next);
    if (!q) { fprintf(stderr, "realloc_grow: realloc(%zu) failed\n", next); return 2; }
    reallocs++;
    if (q != p) moves++;
    p = q;
    for (size_t off = size; off < next; off += page) p[off] = 1;
    p[size] = (unsigned char)(0xA5 + ++marks); /* marker at the start of each new part */
    size = next;
  }
  double seconds = wl_now() - t0;
  /* every marker survived the moves */
  size_t s = start, k = 0;
  if (p[0] != 0xA5) return 3;
  while (k < marks) {
    if (p[s] != (unsigned char)(0xA5 + ++k)) { fprintf(stderr, "realloc_grow: contents lost at %zu\n", s); return 3; }
    s = dbl ? s * 2 : s + step;
    if (s > max) s = max;
  }
  uint64_t hwm = wl_hwm();
  free(p);
  printf("seconds %.6f\nmax_completed_bytes %zu\nreallocs %zu\nmoves %zu\npeak_rss_bytes %llu\n", seconds, size,
         reallocs, moves, (unsigned long long)hwm);
  return 0;
}
