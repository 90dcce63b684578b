/* stress_common.h: shared by the storm programs: patterned blocks, a tiny PRNG, RSS. Plain malloc: the
   programs run under `memspace run` (the override layer) or any other allocator. */
#ifndef STRESS_COMMON_H
#define STRESS_COMMON_H
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DIE(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); _exit(1); } while (0)

static inline uint64_t rnd_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13; x ^= x >> 7; x ^= x << 17;
  return *s = x;
}
static inline size_t rnd_size(uint64_t *s) {
  uint64_t r = rnd_next(s);
  switch (r & 7) {
  case 0: return (size_t)(r >> 8) % 100000 + 1;       /* medium and large */
  case 1: return (size_t)(r >> 8) % 8192 + 1;
  default: return (size_t)(r >> 8) % 256 + 1;
  }
}
/* a block: [size][seed] header words, then the pattern; blk_fill writes them into n >= 16 bytes at p */
static inline void *blk_fill(unsigned char *p, size_t n, uint64_t *s) {
  uint64_t seed = rnd_next(s);
  memcpy(p, &n, 8);
  memcpy(p + 8, &seed, 8);
  for (size_t i = 16; i < n; i++) p[i] = (unsigned char)(seed + i);
  return p;
}
static inline void *blk_new(uint64_t *s) {
  size_t n = rnd_size(s) + 16;
  unsigned char *p = malloc(n);
  if (!p) DIE("malloc(%zu) failed", n);
  return blk_fill(p, n, s);
}
static inline void blk_check(const void *b) {
  const unsigned char *p = b;
  size_t n; uint64_t seed;
  memcpy(&n, p, 8);
  memcpy(&seed, p + 8, 8);
  if (n < 16 || n > 200000) DIE("block %p: corrupted header (size %zu)", b, n);
  for (size_t i = 16; i < n; i++)
    if (p[i] != (unsigned char)(seed + i)) DIE("block %p of %zu bytes corrupted at %zu", b, n, i);
}
static inline void blk_free(void *b) { blk_check(b); free(b); }

static inline size_t rss_bytes(void) {
  char buf[128] = {0};
  int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  unsigned long size = 0, res = 0;
  sscanf(buf, "%lu %lu", &size, &res);
  return res * (size_t)sysconf(_SC_PAGESIZE);
}
#endif
